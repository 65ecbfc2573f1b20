"""Distances between positional distributions (float64, from sparse square roots).

Conventions (``BC_ij = sum_t sqrt(mu_i(t) mu_j(t))`` is the Bhattacharyya coefficient):

* ``hellinger_distances(..., convention="chord")`` (default, the paper's Eq. 3)::

      D_ij = || sqrt(mu_i) - sqrt(mu_j) ||_2 = sqrt(2 - 2 BC_ij)        in [0, sqrt 2]

* ``convention="normalized"``: ``D_ij / sqrt 2``, in ``[0, 1]``.
* ``fisher_rao_distances``: the geodesic on the probability simplex, ``2 arccos BC_ij`` in
  ``[0, pi]``; computed as ``4 arcsin(D_ij / 2)`` from the chord, which is exact and avoids the
  ill-conditioning of ``arccos`` near 1.

Accuracy. ``2 - 2 BC`` loses relative precision when ``BC`` is close to 1 (catastrophic
cancellation). Pairs whose squared chord from the Gram matrix is below ``close_tol`` are
recomputed directly as ``sum_t (sqrt(mu_i(t)) - sqrt(mu_j(t)))^2``, which has no cancellation.

Speed. The Gram matrix ``S S^T`` of the square roots is split by columns: tokens present at many
positions (the frequent ones of a Zipfian vocabulary) go through a dense BLAS product, the long
sparse tail through a sparse product. Neither ever densifies the full ``n x V`` matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, check_param, validate_params
from posgeom.geometry.distributions import PositionalDistributions, as_distributions

__all__ = [
    "HellingerBlocks",
    "RootColumns",
    "bhattacharyya_coefficients",
    "fisher_rao_distances",
    "hellinger_distances",
    "root_columns",
    "split_columns",
    "sqrt_gram",
]

Convention = Literal["chord", "normalized"]
MAX_DENSE_POSITIONS = 32768  # n x n float64 beyond this is > 8 GiB: use the implicit/blocked paths


def split_columns(s: sp.csr_matrix, dense_fraction: float) -> tuple[np.ndarray, sp.csr_matrix]:
    """Split ``s`` (``n x V`` CSR) into a dense ``(n, H)`` block of its frequent columns (those
    stored in at least ``max(2, dense_fraction n)`` rows, in column order) and the CSR remainder
    ``(n, V - H)`` of the other columns (renumbered in order), in ``O(nnz)``."""
    n, vocab = s.shape
    col_nnz = np.bincount(s.indices, minlength=vocab)
    is_frequent = col_nnz >= max(2, dense_fraction * n)
    frequent = np.flatnonzero(is_frequent)
    if frequent.size == 0:
        return np.zeros((n, 0)), s
    rows = np.repeat(np.arange(n), np.diff(s.indptr))
    in_dense = is_frequent[s.indices]
    dense = np.zeros((n, frequent.size))
    rank = np.cumsum(is_frequent) - 1  # column -> its index among the frequent (or the rest)
    dense[rows[in_dense], rank[s.indices[in_dense]]] = s.data[in_dense]
    keep = ~in_dense
    rest_rank = np.cumsum(~is_frequent) - 1
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=n))])
    rest = sp.csr_matrix(
        (s.data[keep], rest_rank[s.indices[keep]], indptr), shape=(n, vocab - frequent.size)
    )
    return dense, rest


# pairs and blocks: a column stored in at least half the rows is held dense (at most 8 bytes per
# value where CSR takes >= 12 / 2: never more memory than the sparse form; at n = 8,192 Zipf counts
# 50% and 10% read 200k pairs equally fast, 0.3 s against 0.9 s all sparse)
ROW_DENSE_FRACTION = 0.5


@dataclass(frozen=True, eq=False)
class RootColumns:
    """The roots ``S = Ssp + f 1^T`` (``n x V``) laid out for reading rows: ``dense`` ``(n, H)``
    holds the ``H`` columns of ``Ssp`` stored in at least :data:`ROW_DENSE_FRACTION` of the rows
    (a Zipfian vocabulary's frequent tokens), ``rest`` ``(n, V - H)`` CSR the others, ``floor``
    ``f`` ``(n,)``, ``row_sums`` ``Ssp 1`` ``(n,)``. Built once per distributions."""

    dense: np.ndarray
    rest: sp.csr_matrix
    floor: np.ndarray
    row_sums: np.ndarray
    vocab_size: int

    def squared_pairs(self, i: np.ndarray, j: np.ndarray, step: int = 2048) -> np.ndarray:
        """``||s_i - s_j||^2 = sum_t (s_it - s_jt)^2`` for index pairs, summed term by term (no
        cancellation): the dense columns as rows of differences, the rare ones as sparse row
        differences, the floor's shift ``f_i - f_j`` on every token (stored or not)."""
        out = np.empty(len(i))
        unstored = self.vocab_size - self.dense.shape[1]  # rest columns, before the stored ones
        for lo in range(0, len(i), step):
            ii, jj = i[lo : lo + step], j[lo : lo + step]
            delta = self.floor[ii] - self.floor[jj]
            frequent = self.dense[ii] - self.dense[jj]
            frequent += delta[:, None]
            diff = (self.rest[ii] - self.rest[jj]).tocsr()
            row_nnz = np.diff(diff.indptr)
            diff.data = (diff.data + np.repeat(delta, row_nnz)) ** 2
            out[lo : lo + step] = (
                np.einsum("ij,ij->i", frequent, frequent)
                + np.asarray(diff.sum(axis=1)).ravel()
                + (unstored - row_nnz) * delta**2
            )
        return out

    def gram(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``S[rows] S[cols]^T`` ``(len(rows), len(cols))``: ``Ssp Ssp'^T + (Ssp 1) f'^T +
        f (Ssp' 1)^T + V f f'^T``, the dense columns by one GEMM."""
        g = self.dense[rows] @ self.dense[cols].T
        g += (self.rest[rows] @ self.rest[cols].T).toarray()
        fr, fc = self.floor[rows], self.floor[cols]
        if np.any(fr) or np.any(fc):
            g += np.outer(self.row_sums[rows], fc) + np.outer(fr, self.row_sums[cols])
            g += self.vocab_size * np.outer(fr, fc)
        return g


def root_columns(d: PositionalDistributions) -> RootColumns:
    """The :class:`RootColumns` of ``d``, built once and cached on it (read-only arrays)."""
    cached = d.__dict__.get("_root_columns")
    if cached is None:
        dense, rest = split_columns(d.sqrt_sparse, ROW_DENSE_FRACTION)
        dense = np.ascontiguousarray(dense)
        row_sums = np.asarray(d.sqrt_sparse.sum(axis=1)).ravel()
        for a in (dense, row_sums):
            a.setflags(write=False)
        cached = RootColumns(dense, rest, d.sqrt_floor, row_sums, d.vocab_size)
        object.__setattr__(d, "_root_columns", cached)
    return cached


def sqrt_gram(
    distributions: Any,
    other: Any | None = None,
    *,
    dense_fraction: float = 0.05,
) -> np.ndarray:
    """The Gram matrix ``G = S S'^T`` of square-root distributions, i.e. ``BC`` (shape (n, m)).

    ``S S^T`` is computed once per distributions object and cached (a copy is returned).
    ``S = sqrt_sparse + sqrt_floor 1^T`` (see :mod:`posgeom.geometry.distributions`), so::

        G = Ssp Ssp'^T + (Ssp 1) f'^T + f (Ssp' 1)^T + V f f'^T
    """
    a = as_distributions(distributions)
    b = a if other is None else as_distributions(other)
    if a.vocab_size != b.vocab_size:
        raise PosgeomError(
            f"vocabulary sizes differ ({a.vocab_size} vs {b.vocab_size}); count both with the same "
            "tokenizer"
        )
    if other is None:  # cached on the distributions (read-only); callers get a copy
        key = f"_gram_{dense_fraction!r}"
        cached = a.__dict__.get(key)
        if cached is None:
            cached = _self_gram(a.sqrt_sparse, dense_fraction)
            cached.setflags(write=False)
            object.__setattr__(a, key, cached)
        gram = cached.copy()
    else:
        gram = (a.sqrt_sparse @ b.sqrt_sparse.T).toarray()
    fa, fb = a.sqrt_floor, b.sqrt_floor
    if np.any(fa) or np.any(fb):
        ra = np.asarray(a.sqrt_sparse.sum(axis=1)).ravel()
        rb = np.asarray(b.sqrt_sparse.sum(axis=1)).ravel()
        gram += np.outer(ra, fb) + np.outer(fa, rb) + a.vocab_size * np.outer(fa, fb)
    return gram


def _mirror_upper(m: np.ndarray, block: int = 1024) -> None:
    """Copy the upper triangle onto the lower one in place (exact symmetry), block by block."""
    n = m.shape[0]
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        m[lo:hi, :lo] = m[:lo, lo:hi].T
        tile = m[lo:hi, lo:hi]
        low = np.tril_indices(hi - lo, -1)
        tile[low] = tile.T[low]


def _self_gram(s: sp.csr_matrix, dense_fraction: float, block: int = 1024) -> np.ndarray:
    """``S S^T`` (n x n), exactly symmetric: BLAS ``syrk`` on the frequent columns (one triangle,
    half the flops), sparse products on the rest in row blocks (bounded temporaries)."""
    from scipy.linalg.blas import dsyrk

    n = s.shape[0]
    dense, rest = split_columns(s, dense_fraction)
    if dense.shape[1]:  # the upper triangle
        gram = np.ascontiguousarray(dsyrk(1.0, np.asfortranarray(dense), lower=0))
    else:
        gram = np.zeros((n, n))
    del dense
    if rest.nnz:
        rest_t = rest.T.tocsc()
        for lo in range(0, n, block):
            hi = min(lo + block, n)
            # only columns >= lo are needed for the upper triangle of these rows
            gram[lo:hi, lo:] += (rest[lo:hi] @ rest_t[:, lo:]).toarray()
    _mirror_upper(gram)
    return gram


def _sq_chords(distributions: Any, *, close_tol: float, dense_fraction: float) -> np.ndarray:
    d = as_distributions(distributions)
    n = d.n_positions
    if n > MAX_DENSE_POSITIONS:
        raise PosgeomError(
            f"{n} positions need a {n}x{n} matrix ({8 * n * n / 2**30:.0f} GiB); for long contexts use "
            "classical_mds(distributions, solver='implicit') and the blocked or sampled stress"
        )
    sq = sqrt_gram(d, dense_fraction=dense_fraction)  # exactly symmetric; becomes ||s_i - s_j||^2
    diag = np.diag(sq).copy()
    sq *= -2.0
    sq += diag[:, None]
    sq += diag[None, :]
    np.maximum(sq, 0.0, out=sq)
    _mirror_upper(sq)  # d_i + d_j and d_j + d_i can round differently
    np.fill_diagonal(sq, 0.0)
    ci, cj = np.nonzero(np.triu(sq < close_tol, 1))
    if ci.size:
        sq[ci, cj] = sq[cj, ci] = root_columns(d).squared_pairs(ci, cj)  # term by term
    return sq


@validate_params(
    {
        "convention": [Options({"chord", "normalized"})],
        "close_tol": [Interval(Real, 0, None)],
        "dense_fraction": [Interval(Real, 0, None)],
    }
)
def hellinger_distances(
    distributions: Any,
    *,
    convention: Convention = "chord",
    close_tol: float = 1e-6,
    dense_fraction: float = 0.05,
) -> np.ndarray:
    """Pairwise Hellinger distances between positional distributions.

    Parameters
    ----------
    distributions : PositionalDistributions, PositionCounts, or (n, V) probabilities
    convention : {"chord", "normalized"}
        ``"chord"``: ``||sqrt(mu_i) - sqrt(mu_j)||`` in ``[0, sqrt 2]`` (the paper's).
        ``"normalized"``: the chord divided by ``sqrt 2``, in ``[0, 1]``.
    close_tol : float
        Pairs with squared chord below this are recomputed term by term (exact for close pairs).

    Returns
    -------
    ndarray, shape (n, n), float64
        Exactly symmetric, exactly zero on the diagonal.
    """
    dist = np.sqrt(_sq_chords(distributions, close_tol=close_tol, dense_fraction=dense_fraction))
    np.minimum(dist, np.sqrt(2.0), out=dist)
    if convention == "normalized":
        dist /= np.sqrt(2.0)
    return dist


def bhattacharyya_coefficients(distributions: Any) -> np.ndarray:
    """``BC_ij = sum_t sqrt(mu_i(t) mu_j(t)) = 1 - D_ij^2 / 2`` (chord ``D``), shape (n, n)."""
    bc = 1.0 - 0.5 * _sq_chords(distributions, close_tol=1e-6, dense_fraction=0.05)
    np.fill_diagonal(bc, 1.0)
    return np.clip(bc, 0.0, 1.0)


def fisher_rao_distances(distributions: Any) -> np.ndarray:
    """Fisher-Rao geodesic distance ``2 arccos BC_ij = 4 arcsin(D_ij / 2)``, in ``[0, pi]``."""
    chord = hellinger_distances(distributions)
    return 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


class HellingerBlocks:
    """Hellinger chord distances of ``distributions`` on demand, never the full ``n x n`` matrix.

    ``block(rows, cols)`` returns the ``(len(rows), len(cols))`` block (from the Gram block, with
    the same close-pair correction as :func:`hellinger_distances`); ``pairs(i, j)`` returns
    ``D[i[k], j[k]]`` for index arrays, computed term by term (exact, no cancellation).
    """

    def __init__(
        self, distributions: Any, *, convention: Convention = "chord", close_tol: float = 1e-6
    ):
        check_param("convention", convention, [Options({"chord", "normalized"})])
        self.distributions = as_distributions(distributions)
        self.scale = 1.0 if convention == "chord" else 1.0 / np.sqrt(2.0)
        self.close_tol = close_tol
        self._norms = self.distributions.squared_norms

    @property
    def n_positions(self) -> int:
        return self.distributions.n_positions

    def squared_block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Squared chords ``||s_i - s_j||^2`` of the block (chord units, whatever the convention)."""
        d = self.distributions
        rows, cols = np.asarray(rows), np.asarray(cols)
        gram = root_columns(d).gram(rows, cols)
        sq = self._norms[rows][:, None] + self._norms[cols][None, :] - 2.0 * gram
        np.maximum(sq, 0.0, out=sq)
        close = np.argwhere(sq < self.close_tol)
        if len(close):  # term by term
            sq[close[:, 0], close[:, 1]] = root_columns(d).squared_pairs(
                rows[close[:, 0]], cols[close[:, 1]]
            )
        sq[rows[:, None] == cols[None, :]] = 0.0
        return sq

    def squared_pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Squared chords of index pairs, term by term (chord units)."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        return root_columns(self.distributions).squared_pairs(i, j)

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.sqrt(self.squared_block(rows, cols)) * self.scale

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return np.sqrt(self.squared_pairs(i, j)) * self.scale
