"""``estimate_geometry``: counts in, an estimate of the corpus's positional geometry out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.estimators._core import (
    DENSE_MAX_N,
    DENSE_ONLY_MAX_N,
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
from posgeom.geometry.gram import FactoredGram

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
    dense: bool | None = None,
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
    dense : build the ``(m, m)`` distance matrix (default: when ``m <= DENSE_MAX_N`` = 8192).
        A factored estimate without it (``dense=False``, or larger ``m``) never allocates
        ``(m, m)``: ``classical_mds(estimate, k)`` runs the implicit solver on its factored
        Gram and :meth:`GeometryEstimate.blocks` serves its distances block by block.
        Estimators without a factored form always build it, and are refused above
        ``DENSE_ONLY_MAX_N`` positions.
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
    m = c.shape[0]
    if not spec.factored and m > DENSE_ONLY_MAX_N:
        raise PosgeomError(
            f"estimator {spec.name!r} has no factored form and would need {m}x{m} matrices "
            f"({8 * m * m / 2**30:.0f} GiB each); use estimator='corrected' (factored), or pool "
            "positions (pool=...)"
        )
    if convention not in ("chord", "normalized"):
        raise PosgeomError(f"unknown convention {convention!r}; use 'chord' or 'normalized'")
    result, diagnostics = spec.fn(c, totals.astype(np.float64), rng=rng, **options)
    gram = None
    if isinstance(result, FactoredGram):
        gram = replace(result, scale=1.0 if convention == "chord" else 0.5)
        if dense is False or (dense is None and m > DENSE_MAX_N):
            distances, finishing = None, {"dense": False}
        else:
            distances, finishing = finish(gram.squared_chords(), convention)
    else:
        distances, finishing = finish(np.asarray(result, dtype=np.float64), convention)
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
        gram=gram,
    )
