"""The pairs a report's Shepard plots draw: every pair ``i < j`` of a short context, a seeded
uniform sample of a long one (an encoding's distances there:
:func:`~posgeom.scores._encoding.encoding_pairs`)."""

from __future__ import annotations

import numpy as np

__all__ = ["SHEPARD_PAIRS", "shepard_pairs"]

SHEPARD_PAIRS = 1500  # pairs kept per encoding for the Shepard plots of a report


def shepard_pairs(n: int, *, size: int = SHEPARD_PAIRS, seed: int = 0) -> np.ndarray:
    """``(2, m)`` pairs ``i < j`` for Shepard plots: all of them when there are at most ``size``,
    else ``size`` distinct pairs drawn uniformly (``default_rng(seed)``), sorted; no ``O(n^2)``
    index arrays for long contexts (distinct pairs by rejection of repeats)."""
    rng = np.random.default_rng(seed)
    total = n * (n - 1) // 2
    if total <= max(size, 4 * 10**6):
        i, j = np.triu_indices(n, 1)
        if len(i) > size:
            keep = np.sort(rng.choice(len(i), size, replace=False))
            i, j = i[keep], j[keep]
        return np.vstack([i, j]).astype(np.int64)
    chosen: np.ndarray = np.empty(0, dtype=np.int64)
    while chosen.size < size:
        a = rng.integers(0, n, 2 * size)
        b = rng.integers(0, n, 2 * size)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys = (lo * n + hi)[lo < hi]
        chosen = np.unique(np.concatenate([chosen, keys]))
    chosen = np.sort(rng.choice(chosen, size, replace=False))
    return np.vstack([chosen // n, chosen % n]).astype(np.int64)
