"""A real :class:`~posgeom.embed.mds.MDSResult` built from an independent classical MDS
(numpy ``eigh`` of ``-1/2 J D² J``), for tests of the layers that consume MDS results (``nn``)
without trusting ``classical_mds`` itself."""

from __future__ import annotations

import numpy as np

from posgeom.embed.mds import MDSResult


def numpy_mds(sq: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``r`` principal coordinates (n, r) and all eigenvalues (descending) of ``B``."""
    n = sq.shape[0]
    j = np.eye(n) - np.ones((n, n)) / n
    w, u = np.linalg.eigh(-0.5 * j @ sq @ j)
    order = np.argsort(w)[::-1]
    w, u = w[order], u[:, order]
    return u[:, :r] * np.sqrt(np.clip(w[:r], 0, None)), w


def mds_result(
    coordinates: np.ndarray, eigenvalues: np.ndarray, placement: np.ndarray
) -> MDSResult:
    """The MDSResult of given coordinates ``X`` (n, r), eigenvalues and placement ``Q`` (d, r)."""
    coordinates = np.asarray(coordinates, dtype=np.float64)
    return MDSResult(
        coordinates=coordinates,
        eigenvalues=np.asarray(eigenvalues, dtype=np.float64),
        total_variance=float(np.sum(eigenvalues)),
        placement=np.asarray(placement, dtype=np.float64),
        positions=np.arange(coordinates.shape[0]),
        solver="exact",
    )
