"""A real :class:`~posgeom.embed.mds.MDSResult` built from an independent classical MDS
(numpy ``eigh`` of ``-1/2 J D² J``), for tests of the layers that consume MDS results (``nn``)
without trusting ``classical_mds`` itself."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

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


def zipf_counts(n, v, seed, flat=True):
    """Zipfian counts whose positional spectrum is flat (consecutive eigenvalues within ~1%)."""
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, v + 1) ** 1.1
    p /= p.sum()
    rows = []
    for i in range(n):
        q = p.copy()
        head = q[:60].copy()
        q[:60] = 0.5 * head + 0.5 * head[rng.permutation(60)] if flat else head * (1 + i / n)
        q /= q.sum()
        rows.append(rng.multinomial(int(400 * np.exp(-i / n)) + 20, q))
    return sp.csr_matrix(np.array(rows))
