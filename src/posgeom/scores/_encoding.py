"""Read an encoding given as vectors, a distance matrix, or an object with ``.distances``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from posgeom._distance_matrix import (
    DistanceMatrix,
    as_distances,
    check_distance_matrix,
    euclidean_distances,
    held_distances,
    looks_like_distance_matrix,
)
from posgeom._errors import PosgeomError
from posgeom._validation import float_array

EncodingKind = Literal["auto", "vectors", "distances"]


def encoding_distances(
    encoding: Any, *, encoding_kind: EncodingKind = "auto", name: str = "encoding"
) -> np.ndarray:
    """The ``(n, n)`` position-distance matrix of ``encoding``.

    ``encoding`` is position vectors ``(n, d)``, a distance matrix ``(n, n)`` (read as such when
    symmetric with a zero diagonal and non-negative entries, unless ``encoding_kind`` says), a
    :class:`DistanceMatrix` or an object with a ``.distances`` attribute.
    """
    if isinstance(encoding, DistanceMatrix):
        return encoding.distances
    if held_distances(encoding) is not None:
        return as_distances(encoding, name).distances  # an encoding, an MDS result, an estimate
    if hasattr(encoding, "detach"):  # a torch tensor
        encoding = encoding.detach().cpu().double().numpy()
    arr = float_array(encoding, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise PosgeomError(
            f"{name} must be (n, d) vectors or an (n, n) distance matrix, got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise PosgeomError(f"{name} contains NaN or Inf; fix or regenerate it")
    if encoding_kind not in ("auto", "vectors", "distances"):
        raise PosgeomError(
            f"encoding_kind must be 'auto', 'vectors' or 'distances', got {encoding_kind!r}"
        )
    if encoding_kind == "distances" or (
        encoding_kind == "auto" and looks_like_distance_matrix(arr)
    ):
        return check_distance_matrix(arr, name)
    return euclidean_distances(arr)


def matched_distance_matrices(
    encoding: Any, target: Any, *, encoding_kind: EncodingKind = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """``(delta, D)`` as ``(n, n)`` matrices, after checking both have the same positions.

    ``target`` may be a :class:`~posgeom.estimators.GeometryEstimate`; a pooled one puts the
    encoding on its buckets first (``GeometryEstimate.pool_encoding``).
    """
    delta = encoding_distances(encoding, encoding_kind=encoding_kind)
    if callable(getattr(target, "pool_encoding", None)):
        delta = target.pool_encoding(delta)
    tgt = as_distances(target, "target").distances
    if delta.shape != tgt.shape:
        raise PosgeomError(
            f"the encoding has {delta.shape[0]} positions but the target geometry has "
            f"{tgt.shape[0]}; use the same positions (slice the encoding to the first "
            f"{tgt.shape[0]} rows, or recount with max_positions={delta.shape[0]})"
        )
    if delta.shape[0] < 2:
        raise PosgeomError("scores need at least 2 positions")
    return delta, tgt


def pair_vectors(encoding: Any) -> np.ndarray | None:
    """Vectors whose Euclidean distances are the encoding's (coordinates of an MDS result)."""
    if getattr(encoding, "distance_matrix", None) is not None:
        return None
    for attr in ("coordinates", "vectors"):
        v = getattr(encoding, attr, None)
        if v is not None:
            return np.asarray(v, dtype=np.float64)
    if hasattr(encoding, "distances") or getattr(encoding, "lag_profile", None) is not None:
        return None
    arr = np.asarray(encoding, dtype=np.float64)
    return arr[:, None] if arr.ndim == 1 else arr


def encoding_pairs(encoding: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``delta_ij`` of ``encoding`` at index arrays ``i, j``: from its lag profile, its vectors
    (or coordinates) row by row, or its distance matrix; ``O(len(i) d)``, no ``(n, n)``."""
    lag = getattr(encoding, "lag_profile", None)
    if lag is not None:
        return np.asarray(lag)[np.abs(np.asarray(i) - np.asarray(j))]
    v = pair_vectors(encoding)
    if v is not None:
        out = np.empty(len(i))
        step = max(1, 2**22 // max(v.shape[1], 1))  # temporaries of 32 MiB (5,461 rows at d = 768)
        for lo in range(0, len(i), step):
            sl = slice(lo, lo + step)
            diff = v[i[sl]]
            diff -= v[j[sl]]
            out[sl] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        return out
    return encoding_distances(encoding)[i, j]


def n_positions_of(encoding: Any) -> int | None:
    """Rows of an encoding (``None`` when it only has ``distances``)."""
    for attr in ("lag_profile", "coordinates", "vectors", "distance_matrix"):
        v = getattr(encoding, attr, None)
        if v is not None:
            return int(np.shape(v)[0])
    return int(np.shape(encoding)[0]) if isinstance(encoding, np.ndarray) else None


def encoding_block(encoding: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The ``(len(rows), len(cols))`` block of ``encoding``'s distances (lag profile, BLAS from
    vectors, or a slice of its distance matrix)."""
    lag = getattr(encoding, "lag_profile", None)
    if lag is not None:
        return np.asarray(lag)[np.abs(rows[:, None] - cols[None, :])]
    v = pair_vectors(encoding)
    if v is not None:
        from scipy.spatial.distance import cdist

        return cdist(v[rows], v[cols])
    return encoding_distances(encoding)[np.ix_(rows, cols)]
