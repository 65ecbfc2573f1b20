"""The centred Gram matrix ``B`` of a Hellinger geometry, implicit or in factored form.

Root vectors ``S`` (``n x V``: :class:`~posgeom.geometry.distributions.PositionalDistributions`,
a sparse part plus a per-row floor) and a per-position correction ``b`` (``n``) define the
squared chords of an estimate::

    D^2_ij = ||s_i - s_j||^2 - b_i - b_j   (i != j),      D^2_ii = 0

(``b = 0``: the plug-in; the corrected estimator's ``b_i = 1 - sum_t h(X_it) / T_i``). Classical
MDS needs ``B = -1/2 J D^2 J`` (``J = I - 11^T / n``). With ``n_i = ||s_i||^2``,
``-1/2 J (n 1^T + 1 n^T) J = 0`` and the off-diagonal outer sum is ``b 1^T + 1 b^T - 2 diag(b)``
with ``J b 1^T J = 0``, so, exactly::

    B = c J (S S^T - diag(b)) J,        c = 1 (chord) or 1/2 ("normalized": D / sqrt 2)

:class:`FactoredGram` holds ``(S, b, c)``: ``operator()`` is ``y -> B y`` in ``O(nnz(S) + n k)``
for a block of ``k`` vectors, ``trace()`` is ``trace(B)``; only ``dense()`` and
``squared_chords()`` form an ``n x n`` array (refused above ``MAX_DENSE_POSITIONS``).
"""

from __future__ import annotations

import functools
import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from posgeom._errors import PosgeomError
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.divergences import (
    MAX_DENSE_POSITIONS,
    HellingerBlocks,
    _sq_chords,
    split_columns,
    sqrt_gram,
)

__all__ = ["FactoredGram", "centred_sqrt_operator", "centred_trace", "double_centre_inplace"]


def centred_sqrt_operator(
    distributions: PositionalDistributions,
    *,
    dense_fraction: float = 0.7,
    n_threads: int | None = None,
) -> spla.LinearOperator:
    """The ``n x n`` operator ``y -> J S S^T J y`` (= ``B``) for square-root distributions ``S``.

    ``S = Ssp + f 1^T`` (sparse part plus per-row floor). Columns of ``Ssp`` filled above
    ``dense_fraction`` are held dense (BLAS); the sparse rest ``R`` is held once, as ``R^T`` in
    CSR, split into token ranges ``R_t``: for a block ``z`` ``(n, b)``, ``R R^T z = sum_t R_t
    (R_t^T z)``, the ranges on ``n_threads`` threads (scipy's sparse kernels release the GIL).
    Never forms an ``n x n`` matrix.
    """
    d = distributions
    n = d.n_positions
    dense, rest = split_columns(d.sqrt_sparse, dense_fraction)
    by_token = rest.T.tocsr()
    by_token.sort_indices()
    threads = max(1, min(n_threads or os.cpu_count() or 1, 8, max(1, rest.nnz // 200_000)))
    cuts = np.searchsorted(by_token.indptr, np.linspace(0, rest.nnz, threads + 1))
    ranges = [_row_range(by_token, lo, hi) for lo, hi in itertools.pairwise(np.unique(cuts))]
    pool = ThreadPoolExecutor(len(ranges)) if len(ranges) > 1 else None
    floor, vocab = d.sqrt_floor, d.vocab_size
    has_floor = bool(np.any(floor))
    row_sums = np.asarray(rest.sum(axis=1)).ravel() + dense.sum(axis=1)  # Ssp 1

    def part(z: np.ndarray, r_t: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        w = r_t @ z  # R_t^T z, (tokens of t, b)
        return r_t.T @ w, w.sum(axis=0)

    def matmat(y: np.ndarray) -> np.ndarray:
        y = y.reshape(n, -1)
        z = y - y.mean(axis=0, keepdims=True)
        wd = dense.T @ z
        parts = list((pool.map if pool else map)(lambda r_t: part(z, r_t), ranges))
        u = dense @ wd
        for p, _ in parts:
            u += p
        if has_floor:
            # S^T z has an extra (f . z) on every column; S w an extra f (1 . w).
            fz = floor @ z
            sum_w = wd.sum(axis=0) + sum(s for _, s in parts) + vocab * fz
            u += np.outer(row_sums, fz)
            u += np.outer(floor, sum_w)
        return u - u.mean(axis=0, keepdims=True)

    return spla.LinearOperator(
        (n, n), matvec=matmat, matmat=matmat, rmatvec=matmat, dtype=np.float64
    )


def _row_range(m: sp.csr_matrix, lo: int, hi: int) -> sp.csr_matrix:
    """Rows ``lo:hi`` of ``m`` as a CSR matrix on views of its arrays (slicing copies them)."""
    start, stop = m.indptr[lo], m.indptr[hi]
    return sp.csr_matrix(
        (m.data[start:stop], m.indices[start:stop], m.indptr[lo : hi + 1] - start),
        shape=(hi - lo, m.shape[1]),
        copy=False,
    )


def centred_trace(d: PositionalDistributions) -> float:
    """``trace(J S S^T J) = ||S||_F^2 - ||S^T 1||^2 / n`` computed from the sparse parts."""
    n = d.n_positions
    fro = float(np.sum(d.squared_norms))
    col = np.asarray(d.sqrt_sparse.sum(axis=0)).ravel() + d.sqrt_floor.sum()  # column sums of S
    return fro - float(col @ col) / n


@dataclass(frozen=True, eq=False)
class FactoredGram:
    """``B = c J (S S^T - diag(b)) J`` in factored form (module docstring).

    Attributes
    ----------
    roots : PositionalDistributions, ``S`` of shape (n, V') (V' token classes after coarsening;
        buckets as rows when pooled).
    correction : (n,) float64, ``b`` (zeros for the plug-in).
    scale : ``c``: 1.0 for the chord convention, 0.5 for "normalized".
    """

    roots: PositionalDistributions
    correction: np.ndarray
    scale: float = 1.0

    @property
    def n_positions(self) -> int:
        return self.roots.n_positions

    def _check_dense(self, what: str) -> None:
        n = self.n_positions
        if n > MAX_DENSE_POSITIONS:
            raise PosgeomError(
                f"{what} of {n} positions is a {n}x{n} matrix ({8 * n * n / 2**30:.0f} GiB); use "
                "classical_mds(estimate, k) (implicit) and estimate.blocks() instead"
            )

    def operator(self, *, n_threads: int | None = None) -> spla.LinearOperator:
        """``y -> B y`` for ``(n,)`` or ``(n, k)`` blocks, never forming ``B``."""
        n, b, c = self.n_positions, self.correction, self.scale
        plain = centred_sqrt_operator(self.roots, n_threads=n_threads)

        def matmat(y: np.ndarray) -> np.ndarray:
            y = y.reshape(n, -1)
            z = y - y.mean(axis=0, keepdims=True)
            w = b[:, None] * z
            return c * (plain.matmat(y) - (w - w.mean(axis=0, keepdims=True)))

        return spla.LinearOperator(
            (n, n), matvec=matmat, matmat=matmat, rmatvec=matmat, dtype=np.float64
        )

    def trace(self) -> float:
        """``trace(B) = c (trace(J S S^T J) - (1 - 1/n) sum_i b_i)``."""
        n = self.n_positions
        return self.scale * (
            centred_trace(self.roots) - (1.0 - 1.0 / n) * float(self.correction.sum())
        )

    def dense(self) -> np.ndarray:
        """``B`` as a dense ``(n, n)`` float64 array (the exact solver; small ``n`` only)."""
        self._check_dense("the Gram matrix")
        g = sqrt_gram(self.roots)
        g[np.diag_indices_from(g)] -= self.correction
        double_centre_inplace(g)
        if self.scale != 1.0:
            g *= self.scale
        return g

    def squared_chords(self) -> np.ndarray:
        """The ``(n, n)`` squared chords ``D^2`` (chord units, unclipped, zero diagonal)."""
        self._check_dense("the distance matrix")
        sq = _sq_chords(self.roots, close_tol=1e-6, dense_fraction=0.05)
        b = self.correction
        if np.any(b):
            sq -= b[:, None] + b[None, :]  # an exactly symmetric outer sum
            np.fill_diagonal(sq, 0.0)
        return sq

    @functools.cached_property
    def _blocks(self) -> HellingerBlocks:
        return HellingerBlocks(self.roots)

    def squared_block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``D^2[rows][:, cols]`` (chord units, unclipped; 0 where ``rows[a] == cols[b]``)."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        sq = self._blocks.squared_block(rows, cols)
        b = self.correction
        sq -= b[rows][:, None] + b[cols][None, :]
        sq[rows[:, None] == cols[None, :]] = 0.0
        return sq

    def squared_pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``D^2[i[k], j[k]]`` for index arrays (term by term, no cancellation)."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        sq = self._blocks.squared_pairs(i, j) - self.correction[i] - self.correction[j]
        sq[i == j] = 0.0
        return sq


def double_centre_inplace(g: np.ndarray) -> None:
    """``g <- J g J`` in place (``J = I - 11^T/n``): subtract column means, then row means.

    LAPACK's ``eigh`` reads one triangle only, so the round-off asymmetry needs no repair.
    """
    g -= g.mean(axis=0)[None, :]
    g -= g.mean(axis=1)[:, None]
