"""Distance matrices: recognise, validate and build them (the bottom layer; numpy/scipy only).

:class:`DistanceMatrix` is the typed form (as scikit-bio's ``DistanceMatrix``): a validated,
read-only ``(n, n)`` array in ``.distances`` (always an attribute) and the position ids.
:func:`as_distances` is the one converter: whatever holds distances (a ``DistanceMatrix``, an
array, an object whose ``.distances`` is an array, such as ``GeometryEstimate``, ``NoiseFloor``,
``GeometryResult``, ``PositionEncoding``, ``MDSResult``) becomes a
``DistanceMatrix``; :func:`held_distances` is the raw lookup.

``.distances`` is an attribute everywhere: a read-only ``(n, n)`` float64 array, computed once
where it is derived (an encoding's from its vectors or lag profile, an MDS result's from its
coordinates) and cached.
"""

from __future__ import annotations

import weakref
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
    "distances_attribute",
    "euclidean_distances",
    "held_distances",
    "looks_like_distance_matrix",
    "validated",
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
    """A validated ``(n, n)`` distance matrix: exactly symmetric, zero diagonal, non-negative,
    read-only in ``.distances``; ``positions`` the ids of its rows (``0 .. n-1`` unless given)."""

    distances: np.ndarray
    positions: np.ndarray

    @property
    def n_positions(self) -> int:
        return int(self.distances.shape[0])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.distances if dtype is None else self.distances.astype(dtype)
        return out.copy() if copy else out


def distances_attribute(matrix: Any) -> np.ndarray:
    """``matrix`` as the read-only float64 ``.distances`` attribute of an object (a view, no copy
    when it is float64 already)."""
    out = np.asarray(matrix, dtype=np.float64).view()
    out.setflags(write=False)
    return out


def held_distances(obj: Any) -> Any:
    """The distances ``obj`` holds (its ``.distances`` attribute; an array holds none), or None."""
    return None if isinstance(obj, np.ndarray) else getattr(obj, "distances", None)


# What was validated, so that it is validated once (scoring re-read the same target and encodings
# once per score: 202 validations for one `posgeom compare` at n = 48). Two weak registries, so
# nothing is kept alive by them:
# - arrays this module validated and owns (read-only, no base: nobody else can write to them),
#   by id;
# - objects holding read-only distances (an object's ``.distances`` is computed once), with the
#   held array they had when validated.
_OWNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_HOLDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def validated(arr: Any) -> DistanceMatrix | None:
    """``arr`` as a :class:`DistanceMatrix` when it is a read-only array this module validated
    (then nothing needs checking again), else ``None``."""
    if not isinstance(arr, np.ndarray) or _OWNED.get(id(arr)) is not arr:
        return None
    return DistanceMatrix(distances=arr, positions=np.arange(arr.shape[0]))


def _from_holder(obj: Any, held: Any) -> DistanceMatrix | None:
    try:
        entry = _HOLDERS.get(obj)
    except TypeError:  # unhashable or not weakly referenceable: no cache
        return None
    return entry[1] if entry is not None and entry[0] is held else None


def _remember_holder(obj: Any, held: Any, matrix: DistanceMatrix) -> None:
    if isinstance(held, np.ndarray) and not held.flags.writeable:
        try:
            _HOLDERS[obj] = (held, matrix)
        except TypeError:
            pass


def as_distances(obj: Any, name: str = "distances") -> DistanceMatrix:
    """``obj`` as a :class:`DistanceMatrix` (module docstring); the same object when it is one.

    Validated once: the array of a :class:`DistanceMatrix` made here, or an object holding the
    same read-only distances as when it was validated, gives that :class:`DistanceMatrix` back."""
    if isinstance(obj, DistanceMatrix):
        return obj
    held = held_distances(obj)
    known = validated(obj) if held is None else _from_holder(obj, held) or validated(held)
    if known is not None:
        return known
    matrix = check_distance_matrix(obj if held is None else held, name)
    matrix.setflags(write=False)
    positions = np.asarray(getattr(obj, "positions", np.arange(matrix.shape[0])))
    if positions.shape != (matrix.shape[0],):
        positions = np.arange(matrix.shape[0])
    result = DistanceMatrix(distances=matrix, positions=positions)
    _OWNED[id(matrix)] = matrix
    if held is not None:
        _remember_holder(obj, held, result)
    return result
