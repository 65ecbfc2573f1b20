"""Distance matrices: recognise, validate and build them (the bottom layer; numpy/scipy only).

:class:`DistanceMatrix` is the typed form (as scikit-bio's ``DistanceMatrix``): a read-only
``(n, n)`` float64 array in ``.distances`` (exactly symmetric, zero diagonal, finite and
non-negative) and the position ids, made by :meth:`DistanceMatrix.validated` (a matrix from
outside, checked) or :meth:`DistanceMatrix.derived` (valid by construction, not checked again,
as scikit-bio's ``validate=False``). :func:`as_distances` is the one converter: a
``DistanceMatrix`` is itself, an object's ``typed_distances`` is taken as it is, anything else
(an array, an object whose ``.distances`` is an array) is validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.distance import pdist, squareform

from posgeom._errors import PosgeomError
from posgeom._validation import float_array

__all__ = [
    "DistanceMatrix",
    "as_distances",
    "check_distance_matrix",
    "euclidean_distances",
    "held_distances",
    "looks_like_distance_matrix",
]


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
    arr = float_array(d, name)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise PosgeomError(f"{name} must be a square (n, n) matrix, got shape {arr.shape}")
    # two reductions instead of full boolean masks (NaN propagates into min, +-Inf into min/max);
    # this runs for every score of every bootstrap replicate
    low, high = float(arr.min(initial=0.0)), float(arr.max(initial=0.0))
    if not (np.isfinite(low) and np.isfinite(high)):
        raise PosgeomError(f"{name} contains NaN or Inf; recompute it or drop the bad positions")
    if low < 0:
        raise PosgeomError(f"{name} has negative entries; distances must be >= 0")
    scale = max(1.0, high)
    # max |d - d^T|: what allclose(rtol=0) tests, at a third of its cost
    diff = arr - arr.T
    asymmetry = max(float(diff.max(initial=0.0)), -float(diff.min(initial=0.0)))
    if asymmetry > 1e-9 * scale:
        raise PosgeomError(f"{name} is not symmetric; pass a symmetric distance matrix")
    if np.any(np.abs(np.diag(arr)) > 1e-9 * scale):
        raise PosgeomError(f"{name} has a non-zero diagonal; a distance matrix has zeros there")
    out = arr.copy() if asymmetry == 0 else 0.5 * (arr + arr.T)  # the same values when symmetric
    np.fill_diagonal(out, 0.0)
    return out


def euclidean_distances(vectors: np.ndarray) -> np.ndarray:
    """Euclidean distances between rows, shape (n, n), exactly symmetric, zero diagonal."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], x.shape[0]))
    return squareform(pdist(x))


@dataclass(frozen=True, eq=False)
class DistanceMatrix:
    """A valid ``(n, n)`` distance matrix, read-only in ``.distances``; ``positions`` the ids of
    its rows (``0 .. n-1`` unless given). Made by :meth:`validated` or :meth:`derived`."""

    distances: np.ndarray
    positions: np.ndarray

    @classmethod
    def validated(
        cls, matrix: Any, *, positions: Any = None, name: str = "distances"
    ) -> DistanceMatrix:
        """``matrix`` checked (:func:`check_distance_matrix`: one line naming what is wrong) and
        stored read-only; a matrix asymmetric within round-off is symmetrised."""
        return cls.derived(check_distance_matrix(matrix, name), positions=positions)

    @classmethod
    def derived(cls, matrix: np.ndarray, *, positions: Any = None) -> DistanceMatrix:
        """``matrix`` (float64, valid by construction: Euclidean distances of finite vectors, a
        block of a valid matrix) stored read-only, not checked again. ``positions``: the row ids
        (``0 .. n-1`` when not given or not one per row)."""
        arr = np.asarray(matrix, dtype=np.float64).view()
        arr.setflags(write=False)
        n = arr.shape[0]
        ids = None if positions is None else np.asarray(positions)
        if ids is None or ids.shape != (n,):
            ids = np.arange(n)
        return cls(distances=arr, positions=ids)

    @property
    def n_positions(self) -> int:
        return int(self.distances.shape[0])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.distances if dtype is None else self.distances.astype(dtype)
        return out.copy() if copy else out


def held_distances(obj: Any) -> Any:
    """The distances ``obj`` holds (its ``.distances`` attribute; an array holds none), or None."""
    return None if isinstance(obj, np.ndarray) else getattr(obj, "distances", None)


def as_distances(obj: Any, name: str = "distances") -> DistanceMatrix:
    """``obj`` as a :class:`DistanceMatrix` (module docstring): itself when it is one, the
    ``typed_distances`` of an object that builds its own, else validated."""
    if isinstance(obj, DistanceMatrix):
        return obj
    typed = getattr(obj, "typed_distances", None)
    if isinstance(typed, DistanceMatrix):
        return typed
    held = held_distances(obj)
    return DistanceMatrix.validated(
        obj if held is None else held, positions=getattr(obj, "positions", None), name=name
    )
