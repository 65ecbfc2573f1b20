"""Read an encoding given as vectors, a distance matrix, or an object with ``.distances()``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from posgeom._distance_matrix import (
    check_distance_matrix,
    euclidean_distances,
    looks_like_distance_matrix,
)
from posgeom._errors import PosgeomError

EncodingKind = Literal["auto", "vectors", "distances"]


def encoding_distances(
    encoding: Any, *, encoding_kind: EncodingKind = "auto", name: str = "encoding"
) -> np.ndarray:
    """The ``(n, n)`` position-distance matrix of ``encoding``.

    ``encoding`` is position vectors ``(n, d)``, a distance matrix ``(n, n)``, or an object with a
    ``.distances()`` method (posgeom encodings, :class:`~posgeom.embed.mds.MDSResult`). A square
    array is read as distances when it is symmetric with a zero diagonal and non-negative entries
    (``encoding_kind`` overrides that guess).
    """
    if hasattr(encoding, "distances") and callable(encoding.distances):
        return check_distance_matrix(encoding.distances(), name)
    if hasattr(encoding, "detach"):  # a torch tensor
        encoding = encoding.detach().cpu().double().numpy()
    arr = np.asarray(encoding, dtype=np.float64)
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
    if hasattr(target, "distances") and callable(target.distances):
        target = target.distances()
    tgt = check_distance_matrix(target, "target")
    if delta.shape != tgt.shape:
        raise PosgeomError(
            f"the encoding has {delta.shape[0]} positions but the target geometry has "
            f"{tgt.shape[0]}; use the same positions (slice the encoding to the first "
            f"{tgt.shape[0]} rows, or recount with max_positions={delta.shape[0]})"
        )
    if delta.shape[0] < 2:
        raise PosgeomError("scores need at least 2 positions")
    return delta, tgt


def matched_pair_distances(
    encoding: Any, target: Any, *, encoding_kind: EncodingKind = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle distances ``(delta_ij, D_ij)``, ``i < j``, after checking ``n`` matches."""
    delta, tgt = matched_distance_matrices(encoding, target, encoding_kind=encoding_kind)
    iu = np.triu_indices(delta.shape[0], 1)
    return delta[iu], tgt[iu]
