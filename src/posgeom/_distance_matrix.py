"""Distance matrices: recognise, validate and build them (the bottom layer; numpy/scipy only)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.distance import pdist, squareform

from posgeom._errors import PosgeomError

__all__ = ["check_distance_matrix", "euclidean_distances", "looks_like_distance_matrix"]


def looks_like_distance_matrix(arr: np.ndarray) -> bool:
    """Square, symmetric, zero diagonal and non-negative: read as a distance matrix."""
    return (
        arr.ndim == 2
        and arr.shape[0] == arr.shape[1]
        and bool(np.all(np.diag(arr) == 0))
        and bool(np.all(arr >= 0))
        and np.allclose(arr, arr.T, rtol=0, atol=1e-12 * max(1.0, float(np.max(arr, initial=0))))
    )


def check_distance_matrix(d: Any, name: str = "distances") -> np.ndarray:
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise PosgeomError(f"{name} must be a square (n, n) matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise PosgeomError(f"{name} contains NaN or Inf; recompute it or drop the bad positions")
    if np.any(arr < 0):
        raise PosgeomError(f"{name} has negative entries; distances must be >= 0")
    scale = max(1.0, float(arr.max(initial=0)))
    if not np.allclose(arr, arr.T, rtol=0, atol=1e-9 * scale):
        raise PosgeomError(f"{name} is not symmetric; pass a symmetric distance matrix")
    if np.any(np.abs(np.diag(arr)) > 1e-9 * scale):
        raise PosgeomError(f"{name} has a non-zero diagonal; a distance matrix has zeros there")
    out = 0.5 * (arr + arr.T)
    np.fill_diagonal(out, 0.0)
    return out


def euclidean_distances(vectors: np.ndarray) -> np.ndarray:
    """Euclidean distances between rows, shape (n, n), exactly symmetric, zero diagonal."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], x.shape[0]))
    return squareform(pdist(x))
