"""Shared input handling for the embedding functions: distance matrix or distributions."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._distance_matrix import check_distance_matrix, looks_like_distance_matrix
from posgeom._errors import PosgeomError

__all__ = ["InputKind", "check_distance_matrix", "classify_input", "looks_like_distance_matrix"]

InputKind = Literal["auto", "distances", "distributions"]


def classify_input(data: Any, kind: InputKind) -> str:
    """Return ``"distances"`` or ``"distributions"`` for the input of an embedding function."""
    if kind not in ("auto", "distances", "distributions"):
        raise PosgeomError(
            f"input_kind must be 'auto', 'distances' or 'distributions', got {kind!r}"
        )
    if kind != "auto":
        return kind
    if hasattr(data, "sqrt_sparse") or hasattr(data, "counts") or sp.issparse(data):
        return "distributions"
    arr = np.asarray(data)
    if arr.dtype == object:
        raise PosgeomError("expected a numeric array, distributions or counts")
    return "distances" if looks_like_distance_matrix(arr) else "distributions"
