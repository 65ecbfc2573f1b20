"""The distances of an estimate, block by block (the long-context scores' target).

The Euclidean estimate: ``D+_ij = ||x_i - x_j||`` (:class:`CoordinateBlocks`). With
``euclidean=False`` (:class:`EstimateBlocks`), as in :func:`posgeom.estimators._core.finish`::

    D_ij = sqrt(min(max(||s_i - s_j||^2 - b_i - b_j, 0), 2))     (i != j; chord units)

divided by ``sqrt 2`` in the "normalized" convention.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["CoordinateBlocks", "EstimateBlocks", "stored_target"]


class EstimateBlocks:
    """Blocks target (``n_positions``, ``block``, ``pairs``) of a factored estimate."""

    def __init__(self, gram: Any, convention: str = "chord"):
        self.gram = gram
        self.scale = 1.0 if convention == "chord" else 1.0 / np.sqrt(2.0)

    @property
    def n_positions(self) -> int:
        return self.gram.n_positions

    def _finish(self, sq: np.ndarray) -> np.ndarray:
        np.clip(sq, 0.0, 2.0, out=sq)
        return np.sqrt(sq, out=sq) * self.scale

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``D[rows][:, cols]``, shape ``(len(rows), len(cols))``."""
        return self._finish(self.gram.squared_block(rows, cols))

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``D[i[k], j[k]]`` for index arrays."""
        return self._finish(self.gram.squared_pairs(i, j))


class CoordinateBlocks:
    """Blocks target of the Euclidean estimate: ``||x_i - x_j||`` from coordinates ``X``."""

    def __init__(self, coordinates: np.ndarray):
        self.coordinates = np.asarray(coordinates, dtype=np.float64)

    @property
    def n_positions(self) -> int:
        return int(self.coordinates.shape[0])

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``D+[rows][:, cols]`` (``scipy.spatial.distance.cdist``, as the dense ``pdist``)."""
        x = self.coordinates
        return cdist(x[np.asarray(rows)], x[np.asarray(cols)])

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``D+[i[k], j[k]]`` for index arrays."""
        x = self.coordinates
        return np.sqrt(np.sum((x[np.asarray(i)] - x[np.asarray(j)]) ** 2, axis=1))


def stored_target(arrays: dict[str, np.ndarray], geometry: dict[str, Any], where: str) -> Any:
    """The blocks target of a long-context results folder (no ``hellinger`` array): its MDS
    coordinates, when they hold the whole estimate (``kept_rank`` at most the MDS rank, every
    later eigenvalue zero to 1e-9 of the first); else a one-line :class:`PosgeomError`.
    ``geometry``: the folder's pipeline summary."""
    from posgeom._errors import PosgeomError

    kept = ((geometry.get("estimator") or {}).get("projection") or {}).get("kept_rank")
    coords, eig = arrays.get("mds_coordinates"), arrays.get("eigenvalues")
    n = None if coords is None else coords.shape[0]
    if kept is not None and coords is not None and eig is not None and kept <= coords.shape[1]:
        rest = np.abs(np.asarray(eig, dtype=np.float64)[int(kept) :])
        if rest.size == 0 or rest.max() <= 1e-9 * abs(float(eig[0])):
            return CoordinateBlocks(np.asarray(coords[:, : int(kept)], dtype=np.float64))
    estimator = (geometry.get("estimator") or {}).get("estimator", "?")
    raise PosgeomError(
        f"{where} is a long-context folder (n = {n}, {estimator} estimator): it keeps no (n, n) "
        "'hellinger' array and its MDS coordinates do not hold the whole target; score against "
        "it with `posgeom geometry COUNTS -o DIR --encoding NAME=FILE` on the counts it was made "
        "from"
    )
