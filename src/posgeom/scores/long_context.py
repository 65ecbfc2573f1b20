"""What a report draws of a long context's target without an ``(n, n)`` matrix.

Above :data:`posgeom.scores.table.SAMPLED_ABOVE` positions the pipeline never forms ``D``: the
target is a *blocks target* (``n_positions``, ``block(rows, cols)``, ``pairs(i, j)``), and a
report draws it at the Shepard pairs, on a grid of positions and as sampled block means.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GRID", "PER_BLOCK", "long_context_arrays", "sampled_block_means"]


GRID = 512  # positions of a long context's heatmap grid (and blocks of its heatmap)
PER_BLOCK = 8  # positions drawn in each block of the heatmap: 64 pairs per block mean


def sampled_block_means(
    target: Any, *, size: int | None = None, per_block: int | None = None, seed: int = 0
) -> tuple[np.ndarray, int, int]:
    """Block means of ``D`` without ``(n, n)``: blocks of ``f = ceil(n / size)`` (default
    :data:`GRID`) consecutive positions (as :func:`posgeom.reports.figures.block_mean`), each
    mean from ``k = min(per_block (default :data:`PER_BLOCK`), smallest block)`` positions drawn
    without replacement in each block (``default_rng(seed)``), read as one ``(b k, b k)`` block.

    Off the diagonal the ``k x k`` drawn pairs of blocks ``I, J`` give an unbiased estimate of
    ``mean_{i in I, j in J} D_ij``; on it the ``k (k - 1)`` drawn pairs ``i != j`` estimate the
    off-diagonal mean, scaled by ``(f_I - 1) / f_I`` so that it estimates the block's mean with its
    zero diagonal, as the exact block mean counts it. With ``k = f`` every pair is read and the
    result equals the exact block means. Returns ``(means (b, b), f, k)``."""
    size, per_block = size or GRID, per_block or PER_BLOCK
    n = int(target.n_positions)
    f = max(1, int(np.ceil(n / size)))
    starts = np.arange(0, n, f)
    widths = np.diff(np.append(starts, n))
    k = int(min(per_block, widths.min()))
    rng = np.random.default_rng(seed)
    drawn = [
        np.sort(s + rng.choice(w, size=k, replace=False))
        for s, w in zip(starts, widths, strict=True)
    ]
    rows = np.concatenate(drawn)
    b = len(starts)
    means = np.empty((b, b))
    within = np.zeros(b)
    for lo in range(0, b, 64):  # 64 block rows at a time: (64 k, b k) floats, 16 MiB at k = 8
        hi = min(lo + 64, b)
        sub = np.asarray(target.block(rows[lo * k : hi * k], rows), dtype=np.float64)
        sub = sub.reshape(hi - lo, k, b, k)
        means[lo:hi] = sub.mean(axis=(1, 3))
        for a in range(lo, hi):  # drawn pairs i != j of the block itself
            own = sub[a - lo, :, a, :]
            within[a] = (own.sum() - np.trace(own)) / max(k * (k - 1), 1)
    # the drawn diagonal out, the block's own share of zero pairs back in
    means[np.diag_indices(b)] = within * (widths - 1) / widths
    return means, f, k


def long_context_arrays(
    target: Any, beside: dict[str, Any], pairs: np.ndarray
) -> dict[str, np.ndarray]:
    """What a report draws for a long context, without ``(n, n)``: the target at the Shepard
    ``pairs`` (``shepard_target``; the plug-in beside: ``shepard_plugin``) and at a grid of
    :data:`GRID` evenly spaced positions (``hellinger_grid``, ``hellinger_grid_positions``:
    one ``(GRID, GRID)`` block) and as sampled block means for the heatmap
    (``hellinger_blocks``, ``hellinger_block_width``: :func:`sampled_block_means`)."""
    n = int(target.n_positions)
    grid = np.unique(np.linspace(0, n - 1, GRID).round().astype(np.int64))
    blocks, width, drawn = sampled_block_means(target)
    out = {
        "shepard_target": np.asarray(target.pairs(pairs[0], pairs[1]), dtype=np.float64),
        "hellinger_grid": np.asarray(target.block(grid, grid), dtype=np.float64),
        "hellinger_grid_positions": grid,
        "hellinger_blocks": blocks,
        "hellinger_block_width": np.asarray(width, dtype=np.int64),
        "hellinger_block_pairs": np.asarray(drawn * drawn, dtype=np.int64),
    }
    if "plugin" in beside:
        out["shepard_plugin"] = np.asarray(beside["plugin"].pairs(pairs[0], pairs[1]), float)
    return out
