"""Position vectors and their distances: what MDS, SMACOF and the low-rank factors return.

:class:`EmbeddedPositions` holds an encoding's vectors ``P`` (n, d) and their Euclidean
distances; :class:`PlacedCoordinates` holds coordinates ``X`` (n, r) placed in a model space of
width ``d >= r`` by ``Q`` (d, r) with orthonormal columns, ``P = X Q^T``
(:func:`placement_frame`): distances between rows of ``P`` equal those between rows of ``X``.
"""

from __future__ import annotations

import functools

import numpy as np

from posgeom._distance_matrix import DistanceMatrix, euclidean_distances
from posgeom._errors import PosgeomError

__all__ = ["EmbeddedPositions", "PlacedCoordinates", "placement_frame"]


class EmbeddedPositions:
    """Position vectors ``embedding`` (n, d) (the subclass's, also ``vectors``) and their
    Euclidean distances: ``typed_distances``, those of the rows of ``_points()`` as a
    :class:`~posgeom._distance_matrix.DistanceMatrix` (built on first use), ``distances`` its
    (n, n) read-only array.
    """

    embedding: np.ndarray

    def _points(self) -> np.ndarray:
        return self.embedding

    @property
    def vectors(self) -> np.ndarray:
        return self.embedding

    @functools.cached_property
    def typed_distances(self) -> DistanceMatrix:
        return DistanceMatrix.derived(euclidean_distances(self._points()))

    @property
    def distances(self) -> np.ndarray:
        return self.typed_distances.distances


class PlacedCoordinates(EmbeddedPositions):
    """Coordinates ``X`` (n, r) placed in a model space of width ``d`` by ``Q`` (d, r), of
    MDS and SMACOF: ``embedding = X Q^T``, ``distances`` those of ``X`` (equal, ``Q`` being
    orthonormal)."""

    coordinates: np.ndarray
    placement: np.ndarray

    @property
    def embedding(self) -> np.ndarray:
        """``P = X Q^T``, shape (n, d): the position vectors in the model space."""
        return self.coordinates @ self.placement.T

    def _points(self) -> np.ndarray:
        return self.coordinates


def placement_frame(d: int, r: int, kind: str, seed: int) -> np.ndarray:
    """``Q`` (d, r), orthonormal columns: the first ``r`` unit vectors (``"pad"``) or a random
    orthonormal frame of ``seed`` (``"orthonormal"``, QR of a Gaussian, signs fixed by ``R``)."""
    if kind == "pad":
        return np.eye(d, r)
    if kind == "orthonormal":
        q, rr = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, r)))
        return q * np.sign(np.diag(rr))
    raise PosgeomError(f"unknown placement {kind!r}; use 'pad' or 'orthonormal'")
