"""Count transforms applied before an estimator: vocabulary coarsening, position pooling and
equal-sample resampling; and the helper that puts an encoding on the same buckets.

Coarsening (``coarsen=``) maps tokens to classes, ``C'[i, c] = sum_{t in c} C[i, t]``, by the
rules of :mod:`posgeom.estimators.resolution` (``K``, ``"top:K"``, ``"top:K+bands:B"``,
``"bins:B"``, or a token -> class map); the result is a lower bound on the full geometry.

Pooling (``pool=``) sums the counts of the positions of a bucket: ``w`` (fixed width), ``"log:B"``
(``B`` buckets, the first ``B/2`` single positions and the rest log-spaced up to ``n``) or the
bucket start positions (strictly increasing, from 0, inside ``[0, n)``). Encodings are put on the
same buckets by :func:`pool_encoding`.

Equal-sample resampling (``equal_samples=m`` or ``"min"``) draws ``m`` of each position's samples
without replacement (multivariate hypergeometric, seeded), so every position has the same
sampling bias: a diagnostic (it discards data), not an estimator of the full-sample geometry.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._distance_matrix import euclidean_distances
from posgeom._errors import PosgeomError
from posgeom._validation import is_integer
from posgeom.estimators.resolution import resolve

__all__ = [
    "apply_classes",
    "coarsen_counts",
    "equal_sample_counts",
    "pool_counts",
    "pool_edges",
    "pool_encoding",
]


def coarsen_counts(counts: sp.csr_matrix, spec: Any) -> tuple[sp.csr_matrix, dict[str, Any]]:
    """``(C', info)``: counts summed within token classes (module docstring for ``spec``; also
    ``"full"`` and ``"auto"``, :mod:`posgeom.estimators.resolution`). ``info`` names the
    resolution (``"coarsen"``), the number of classes and the ``class_map`` (``(V,)`` int64)."""
    classes, label = resolve(counts, spec)
    return apply_classes(counts, classes), {
        "coarsen": label,
        "n_classes": int(classes.max(initial=-1)) + 1,
        "class_map": classes,
    }


def apply_classes(counts: sp.csr_matrix, classes: np.ndarray) -> sp.csr_matrix:
    """``C'[i, k] = sum_{t: classes[t] = k} C[i, t]``; ``classes``: dense ids ``0 .. k-1``.
    The identity map returns ``counts`` itself (the same object)."""
    if classes.size == counts.shape[1] and np.array_equal(classes, np.arange(classes.size)):
        return counts
    n_classes = int(classes.max(initial=-1)) + 1
    onehot = sp.csr_matrix(
        (np.ones(classes.size, dtype=np.int64), (np.arange(classes.size), classes)),
        shape=(classes.size, n_classes),
    )
    out = (counts @ onehot).tocsr()
    out.sort_indices()
    return out


def pool_edges(spec: Any, n: int) -> np.ndarray:
    """Bucket edges ``[0 = e_0 < e_1 < ... < e_m = n]`` for ``pool=spec`` (module docstring)."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec < 1:
            raise PosgeomError(f"pool width must be >= 1, got {spec}")
        return np.append(np.arange(0, n, int(spec)), n)
    if isinstance(spec, str):
        kind, _, value = spec.partition(":")
        if kind != "log" or not value.isdigit() or int(value) < 1:
            raise PosgeomError(f"pool={spec!r} not understood; use a width, 'log:B' or edges")
        buckets = min(int(value), n)
        if buckets == 1:
            return np.array([0, n], dtype=np.int64)
        exact = buckets // 2
        rest = np.round(np.geomspace(exact, n, buckets - exact + 1)).astype(np.int64)
        return np.unique(np.concatenate([np.arange(exact), rest]))  # at most B buckets
    starts = np.asarray(spec)
    if starts.ndim != 1 or starts.size < 1 or not np.issubdtype(starts.dtype, np.integer):
        raise PosgeomError("pool edges must be a 1-D list of integer bucket start positions")
    if np.any(np.diff(starts) <= 0):
        raise PosgeomError(f"pool edges must increase strictly, got {starts.tolist()}")
    if starts[0] != 0 or starts[-1] >= n:
        raise PosgeomError(
            f"pool edges are bucket starts in [0, {n}) beginning with 0, got {starts.tolist()}"
        )
    return np.append(starts, n).astype(np.int64)


def pool_counts(counts: sp.csr_matrix, edges: np.ndarray) -> sp.csr_matrix:
    """Counts summed over the positions of each bucket, ``(m, V)``."""
    n = counts.shape[0]
    bucket = np.searchsorted(edges[1:], np.arange(n), side="right")
    indicator = sp.csr_matrix(
        (np.ones(n, dtype=np.int64), (bucket, np.arange(n))), shape=(len(edges) - 1, n)
    )
    out = (indicator @ counts).tocsr()
    out.sort_indices()
    return out


def pool_encoding(
    encoding: Any, edges: Any, *, rule: str = "mean_distance", encoding_kind: str = "auto"
) -> np.ndarray:
    """An ``n``-position encoding's ``(m, m)`` distances on the buckets with ``edges``.

    ``rule="mean_distance"``: ``delta_AB = mean_{i in A, j in B} delta_ij`` (``A != B``), 0 on the
    diagonal; ``rule="mean_vector"``: Euclidean distance of the buckets' mean vectors (needs
    vectors). An encoding that already has ``m`` positions is returned as its distances.
    """
    from posgeom.scores._encoding import encoding_distances

    edges = np.asarray(edges, dtype=np.int64)
    m, n = len(edges) - 1, int(edges[-1])
    bucket = np.searchsorted(edges[1:], np.arange(n), side="right")
    if rule == "mean_vector":
        vectors = getattr(encoding, "vectors", encoding)
        x = np.asarray(vectors, dtype=np.float64) if vectors is not None else None
        if x is None or x.ndim != 2 or x.shape[0] != n or encoding_kind == "distances":
            raise PosgeomError("rule='mean_vector' needs (n, d) position vectors")
        sums = np.zeros((m, x.shape[1]))
        np.add.at(sums, bucket, x)
        return euclidean_distances(sums / np.bincount(bucket, minlength=m)[:, None])
    if rule != "mean_distance":
        raise PosgeomError(f"unknown rule {rule!r}; use 'mean_distance' or 'mean_vector'")
    delta = encoding_distances(encoding, encoding_kind=encoding_kind)  # type: ignore[arg-type]
    if delta.shape[0] == m:
        return delta
    if delta.shape[0] != n:
        raise PosgeomError(
            f"the encoding has {delta.shape[0]} positions; the buckets cover {n} positions "
            f"({m} buckets)"
        )
    indicator = np.zeros((m, n))
    indicator[bucket, np.arange(n)] = 1.0
    sizes = indicator.sum(axis=1)
    out = indicator @ delta @ indicator.T / np.outer(sizes, sizes)
    out = 0.5 * (out + out.T)
    np.fill_diagonal(out, 0.0)
    return out


def equal_sample_counts(
    counts: sp.csr_matrix, size: Any, rng: np.random.Generator
) -> tuple[sp.csr_matrix, int]:
    """Every row downsampled to ``size`` samples without replacement (``"min"``: the smallest)."""
    totals = np.asarray(counts.sum(axis=1)).ravel()
    m = int(totals.min()) if size == "min" else size
    if not is_integer(m) or m < 1:
        raise PosgeomError(f"equal_samples must be 'min' or an integer >= 1, got {size!r}")
    if np.any(totals < m):
        first = int(np.flatnonzero(totals < m)[0])
        raise PosgeomError(
            f"equal_samples={m} but position {first} has only {int(totals[first])} samples; "
            "use equal_samples='min' or pool positions"
        )
    out = counts.copy()
    for i in range(counts.shape[0]):
        lo, hi = counts.indptr[i], counts.indptr[i + 1]
        out.data[lo:hi] = rng.multivariate_hypergeometric(counts.data[lo:hi], int(m))
    out.eliminate_zeros()
    return out, int(m)
