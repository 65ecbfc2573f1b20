"""Shared input handling for the embedding functions: distance matrix or distributions."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._distance_matrix import check_distance_matrix, looks_like_distance_matrix
from posgeom._errors import PosgeomError
from posgeom.geometry.distributions import PositionalDistributions, as_distributions
from posgeom.geometry.gram import FactoredGram

__all__ = [
    "InputKind",
    "classify_input",
    "euclidean_coordinates",
    "gram_input",
]

InputKind = Literal["auto", "distances", "distributions"]


def classify_input(data: Any, kind: InputKind) -> str:
    """Return ``"distances"`` or ``"distributions"`` for the input of an embedding function."""
    if kind != "auto":
        return kind
    if hasattr(data, "sqrt_sparse") or hasattr(data, "counts") or sp.issparse(data):
        return "distributions"
    arr = np.asarray(data)
    if arr.dtype == object:
        raise PosgeomError("expected a numeric array, distributions or counts")
    return "distances" if looks_like_distance_matrix(arr) else "distributions"


def euclidean_coordinates(data: Any) -> np.ndarray | None:
    """The coordinates ``X`` of a Euclidean estimate (``GeometryEstimate.coordinates``), else
    None: its Gram is ``B+ = X X^T``."""
    x = getattr(data, "coordinates", None) if hasattr(data, "gram") else None
    return x if isinstance(x, np.ndarray) and x.ndim == 2 else None


def gram_input(
    data: Any, input_kind: str, convention: str
) -> tuple[FactoredGram | None, np.ndarray, np.ndarray]:
    """``(gram, distances, positions)``: a factored Gram (distributions, counts, an estimate
    with a factored form) or, for a distance matrix, ``gram = None`` and the matrix."""
    x = euclidean_coordinates(data)
    if x is not None:  # a Euclidean estimate: B+ = X X^T, X its root matrix
        n = x.shape[0]
        roots = PositionalDistributions(
            sqrt_sparse=sp.csr_matrix(x),
            sqrt_floor=np.zeros(n),
            positions=np.arange(n),
            totals=np.full(n, np.inf),
        )
        data = FactoredGram(roots, np.zeros(n))
    gram = data if isinstance(data, FactoredGram) else getattr(data, "gram", None)
    if isinstance(gram, FactoredGram):  # an estimate (or its Gram): its own convention
        if convention != "chord":
            raise PosgeomError(
                "an estimate carries its convention; estimate it with convention=... and leave "
                "classical_mds's convention at its default"
            )
        pos = np.asarray(getattr(data, "positions", gram.roots.positions))
        if pos.shape[0] != gram.n_positions:  # pooled: bucket edges, rows are the buckets
            pos = np.arange(gram.n_positions, dtype=np.int64)
        return gram, np.zeros((0, 0)), pos
    if classify_input(data, input_kind) == "distances":
        if convention != "chord":
            raise PosgeomError(
                f"convention={convention!r} applies to distributions; a distance matrix is used "
                "as given. Fix: pass the distributions, or the distances of that convention "
                "(hellinger_distances(mu, convention=...)) with the default convention"
            )
        dist = check_distance_matrix(data)
        return None, dist, np.arange(dist.shape[0], dtype=np.int64)
    dists = as_distributions(data)
    scale = 0.5 if convention == "normalized" else 1.0  # D / sqrt 2, so B / 2
    gram = FactoredGram(dists, np.zeros(dists.n_positions), scale)
    return gram, np.zeros((0, 0)), dists.positions
