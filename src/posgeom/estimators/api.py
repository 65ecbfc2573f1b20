"""``estimate_geometry``: counts in, an estimate of the corpus's positional geometry out."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.estimators._core import (
    GeometryEstimate,
    as_count_matrix,
    check_samples,
    finish,
    get,
)
from posgeom.estimators.transforms import (
    coarsen_counts,
    equal_sample_counts,
    pool_counts,
    pool_edges,
)

__all__ = ["estimate_geometry"]


def estimate_geometry(
    counts: Any,
    *,
    estimator: str = "recommended",
    convention: str = "chord",
    seed: int = 0,
    coarsen: Any = None,
    pool: Any = None,
    equal_samples: Any = None,
    **options: Any,
) -> GeometryEstimate:
    """Estimate the Hellinger geometry of the positional distributions behind ``counts``.

    Parameters
    ----------
    counts : PositionCounts, or an ``(n, V)`` scipy sparse / dense matrix of non-negative integers.
    estimator : a name from :func:`posgeom.estimators.available`, or ``"recommended"`` (the
        default measured on the target regime: ``"corrected"``).
    convention : ``"chord"`` (``||sqrt p_i - sqrt p_j||``, ``[0, sqrt 2]``) or ``"normalized"``.
    seed : seed for every random step (splits, resampling); same seed, same result.
    coarsen : vocabulary coarsening (``K``, ``"top:K"``, ``"bins:B"``, or a token -> class map).
    pool : position pooling (a width, ``"log:B"``, or bucket start positions).
    equal_samples : downsample every position (bucket) to ``m`` samples, or ``"min"``.
    **options : passed to the estimator (e.g. ``n_repeats`` for ``"split_half"``).

    Order: coarsen, pool, resample, estimate (see :mod:`posgeom.estimators.transforms`).

    Returns
    -------
    GeometryEstimate
        ``.distances`` ``(m, m)`` with ``m = n`` (or the number of buckets); ``.estimator`` the
        name used; ``.positions``; ``.totals``; ``.diagnostics``.
    """
    spec = get(estimator)
    c = as_count_matrix(counts)
    rng = np.random.default_rng(seed)
    info: dict[str, Any] = {"seed": int(seed), **options}
    if coarsen is not None:
        c, extra = coarsen_counts(c, coarsen)
        info.update(extra)
    n = c.shape[0]
    positions = np.arange(n, dtype=np.int64)
    if pool is not None:
        positions = pool_edges(pool, n)
        c = pool_counts(c, positions)
        info["pool"] = pool if isinstance(pool, (int, str)) else "edges"
    what = "bucket" if pool is not None else "position"
    if equal_samples is not None:
        check_samples(np.asarray(c.sum(axis=1)).ravel(), 1, what, spec.name)
        c, size = equal_sample_counts(c, equal_samples, rng)
        info["equal_samples"] = size
    totals = np.asarray(c.sum(axis=1)).ravel().astype(np.int64)
    check_samples(totals, spec.min_samples, what, spec.name)
    sq, diagnostics = spec.fn(c, totals.astype(np.float64), rng=rng, **options)
    distances, finishing = finish(np.asarray(sq, dtype=np.float64), convention)
    return GeometryEstimate(
        distances=distances,
        estimator=spec.name,
        positions=positions,
        totals=totals,
        convention=convention,
        pooled=pool is not None,
        vocab_size=int(c.shape[1]),
        options=info,
        diagnostics={**diagnostics, **finishing},
    )
