"""Extending a learned absolute table ``p`` (``(L0, d)``) to ``L > L0`` positions.

- ``clamp``: ``p'_i = p_{min(i, L0 - 1)}``;
- ``interpolate``: ``p'_i = p(x_i)`` at ``x_i = i (L0 - 1) / (L - 1)``, linear between rows (so
  ``p'_0 = p_0`` and ``p'_{L-1} = p_{L0-1}``);
- ``gower``: the corpus's positional geometry ``D`` (``(L, L)`` chords) decides where the new
  positions go. Classical MDS of ``D[:L0, :L0]`` gives coordinates ``X`` (``r`` positive
  eigenvalues); the affine map ``[X, 1] A ~ p`` is fitted by least squares; the new positions are
  placed by Gower's formula (:func:`posgeom.embed.extend.gower_extension`) from their squared
  distances to the trained ones, ``x_new``, and get ``p'_i = [x_new, 1] A``. The trained rows are
  kept as they are.
- ``gower-table``: the same placement with the table's own geometry instead of the corpus's
  (:func:`table_lag_distances`): the trained block is the rows' own distances ``||p_i - p_j||``
  (so the MDS frame is the table's principal axes and the affine map is exact), and a new row
  ``i`` is put at the table's root-mean-square distance at each lag ``k = i - j``,
  ``delta(k)^2 = mean_j ||p_{j+k} - p_j||^2`` for ``k < L0``, the mean of ``delta^2`` over the 16
  largest trained lags beyond. No corpus is needed (the Track B study's Gower rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = ["LEARNED_METHODS", "extend_table", "model_table", "table_lag_distances"]

LEARNED_METHODS = ("clamp", "interpolate", "gower", "gower-table")
FAR_LAGS = 16  # the largest trained lags whose mean distance stands for every lag >= L0


def _gower(table: np.ndarray, target: int, distances: Any, rank: int | None) -> np.ndarray:
    from posgeom.embed.extend import gower_extension
    from posgeom.embed.mds import classical_mds

    l0 = table.shape[0]
    d = np.asarray(distances, dtype=np.float64)
    if d.shape != (target, target):
        raise PosgeomError(
            f"Gower extension needs the corpus's positional distances over all {target} target "
            f"positions, got shape {d.shape}; estimate the geometry with max_positions={target}"
        )
    d2 = d**2
    mds = classical_mds(d[:l0, :l0], rank, input_kind="distances")
    keep = mds.eigenvalues[: mds.coordinates.shape[1]] > 1e-12
    x, lam = mds.coordinates[:, keep], mds.eigenvalues[: mds.coordinates.shape[1]][keep]
    if x.shape[1] == 0:
        raise PosgeomError(
            "the corpus's positional geometry is flat (no positive MDS eigenvalue): Gower "
            "extension has nothing to place new positions by; use clamp or interpolate"
        )
    design = np.hstack([x, np.ones((l0, 1))])
    coef, *_ = np.linalg.lstsq(design, table, rcond=None)
    new = gower_extension(x, lam, d2[:l0, :l0], d2[l0:, :l0])
    return np.vstack([table, np.hstack([new, np.ones((target - l0, 1))]) @ coef])


def table_lag_distances(table: Any, target_length: int) -> np.ndarray:
    """The ``(L, L)`` float64 distances of ``gower-table`` (module docstring): the rows' own
    distances among the ``L0`` trained positions, the table's root-mean-square distance at lag
    ``|i - j|`` elsewhere (the mean over the ``FAR_LAGS`` largest trained lags for lags >= L0)."""
    p = np.asarray(table, dtype=np.float64)
    l0, target = p.shape[0], int(target_length)
    gram = p @ p.T
    sq = np.maximum(np.diag(gram)[:, None] + np.diag(gram)[None, :] - 2 * gram, 0.0)
    profile = np.array([np.mean(np.diagonal(sq, k)) for k in range(l0)])
    far = float(np.mean(profile[-min(FAR_LAGS, l0 - 1) :]))
    lag = np.abs(np.arange(target)[:, None] - np.arange(target)[None, :])
    full = np.where(lag < l0, profile[np.minimum(lag, l0 - 1)], far)
    full[:l0, :l0] = sq
    return np.sqrt(full)


def extend_table(
    table: Any,
    target_length: int,
    method: str,
    *,
    position_distances: Any = None,
    rank: int | None = None,
) -> np.ndarray:
    """The ``(L, d)`` float64 extension of the ``(L0, d)`` ``table`` by ``method`` (module
    docstring); ``position_distances``: ``(L, L)`` corpus chords (``gower`` only); ``rank``: MDS
    rank for ``gower`` and ``gower-table`` (default all positive eigenvalues up to
    ``min(L0 - 1, d)``)."""
    p = np.asarray(table, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 2:
        raise PosgeomError(f"a learned table must be (L0 >= 2, d), got shape {p.shape}")
    l0, target = p.shape[0], int(target_length)
    if target <= l0:
        raise PosgeomError(f"target length {target} must exceed the table's {l0} rows")
    if method == "clamp":
        return p[np.minimum(np.arange(target), l0 - 1)]
    if method == "interpolate":
        x = np.arange(target) * (l0 - 1) / (target - 1)
        lo = np.minimum(np.floor(x).astype(np.int64), l0 - 2)
        frac = (x - lo)[:, None]
        return (1 - frac) * p[lo] + frac * p[lo + 1]
    if method == "gower":
        if position_distances is None:
            raise PosgeomError(
                "Gower extension needs the corpus's per-position geometry at the target length "
                "(documents with a start); without it use clamp or interpolate"
            )
        return _gower(p, target, position_distances, rank or min(l0 - 1, p.shape[1]))
    if method == "gower-table":
        distances = table_lag_distances(p, target)
        return _gower(p, target, distances, rank or min(l0 - 1, p.shape[1]))
    raise PosgeomError(
        f"unknown table extension {method!r}; use one of {', '.join(LEARNED_METHODS)}"
    )


def model_table(model: Any, method: str, target_length: int, position_distances: Any = None):
    """The learned table of an ``ExtensionModel`` (its first ``trained_length`` rows) extended
    to ``target_length`` by ``method``: the one table that is scored and, with ``--measure``,
    run (``position_distances``: the corpus's geometry or an estimate of it, ``gower`` only)."""
    table = model.table[: model.trained_length]
    d = None if position_distances is None else np.asarray(position_distances, dtype=np.float64)
    return extend_table(table, target_length, method, position_distances=d)
