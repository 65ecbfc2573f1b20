"""Two random halves of every row of a count matrix, and the chord between them (the split-half
statistic of :mod:`posgeom.geometry.noise` and of the estimators that correct with it).

Row ``i`` (``T_i`` samples) is split into ``floor(T_i / 2)`` samples drawn without replacement
(multivariate hypergeometric) and the rest. ``s_i`` is the chord ``||sqrt(a_i / A_i) - sqrt(b_i /
B_i)||`` between the two halves' distributions; :func:`split_half_squared` averages ``s_i^2`` over
splits, drawn one row at a time (:func:`_split_rows`) or every row at once (:func:`_half_counts`).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from posgeom.geometry.distributions import plugin_roots

log = logging.getLogger("posgeom")
__all__ = ["split_half_squared", "split_rows_vectorized"]

_EXACT_SPLIT_MAX = 10**9 - 1  # numpy's multivariate hypergeometric takes fewer samples


def _split_rows(c: sp.csr_matrix, rng: np.random.Generator) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each row split into two random halves: exactly ``total // 2`` samples drawn without
    replacement, or, past :data:`_EXACT_SPLIT_MAX` samples, each sample kept with probability
    1/2 (``Binomial(c, 1/2)`` per token: halves equal to a relative ``1/sqrt(total)``)."""
    half = c.copy()
    for i in range(c.shape[0]):
        lo, hi = c.indptr[i], c.indptr[i + 1]
        row = c.data[lo:hi].astype(np.int64)
        total = int(row.sum())
        if total > _EXACT_SPLIT_MAX:
            half.data[lo:hi] = rng.binomial(row, 0.5)
        elif total >= 2:
            half.data[lo:hi] = rng.multivariate_hypergeometric(row, total // 2)
    return half.tocsr(), (c - half).tocsr()


def split_rows_vectorized(
    c: sp.csr_matrix, rng: np.random.Generator
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each row's samples split at random into halves of ``floor(T_i / 2)`` and the rest (the
    distribution of :func:`_split_rows`, other draws): :func:`_half_counts` as two CSR matrices."""
    half = _half_counts(c, rng)
    data = c.data.astype(np.int64)
    a = sp.csr_matrix((half, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    b = sp.csr_matrix((data - half, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    a.eliminate_zeros()
    b.eliminate_zeros()
    return a, b


def _half_counts(c: sp.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """The first half's counts on ``c``'s stored entries (``(nnz,)`` int64; the second half is
    ``c.data - half``): ``floor(T_i / 2)`` of row ``i``'s samples drawn without replacement, as
    successive hypergeometrics on the ``k``-th stored token of every row at once (``max_i nnz_i``
    vectorised steps; rows held longest first, so the rows with a ``k``-th token are a prefix)."""
    data = np.asarray(c.data, dtype=np.int64)
    nnz = np.diff(c.indptr)
    order = np.argsort(-nnz, kind="stable")
    sorted_nnz = nnz[order]
    start = c.indptr[:-1][order]
    remaining = np.diff(np.concatenate([[0], np.cumsum(data)])[c.indptr])[order]  # row totals
    need = remaining // 2
    half = np.zeros_like(data)
    prefix = np.searchsorted(-sorted_nnz, -np.arange(int(nnz.max(initial=0))), side="left")
    for k, m in enumerate(prefix):
        idx = start[:m] + k
        good = data[idx]
        remaining[:m] -= good
        half[idx] = x = _hypergeometric(good, remaining[:m], need[:m], rng)
        need[:m] -= x
    return half


def _hypergeometric(
    good: np.ndarray, bad: np.ndarray, sample: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``Hypergeometric(good, bad, sample)`` draws; where ``good == 1`` (most stored counts of a
    Zipfian tail) the draw is ``Bernoulli(sample / (1 + bad))``, exactly, from one uniform (a
    numpy hypergeometric draw costs about 100 times more)."""
    x = np.empty_like(good)
    single = good == 1
    x[single] = rng.random(int(single.sum())) * (bad[single] + 1) < sample[single]
    many = ~single
    x[many] = rng.hypergeometric(good[many], bad[many], sample[many])
    return x


def _halves_squared_chords(c: sp.csr_matrix, half: np.ndarray, chunk: int = 2**18) -> np.ndarray:
    """``||sqrt(a_i / A_i) - sqrt(b_i / B_i)||^2`` per row for the halves ``a = half`` and ``b =
    c.data - half`` on ``c``'s stored entries (``A_i``, ``B_i`` their row totals), term by term,
    in row ranges of about ``chunk`` entries."""
    n = c.shape[0]
    out = np.zeros(n)
    cuts = np.unique(np.searchsorted(c.indptr, np.arange(0, c.nnz, chunk), side="right") - 1)
    for lo, hi in zip(cuts, [*cuts[1:], n], strict=True):
        sl = slice(c.indptr[lo], c.indptr[hi])
        counts = np.diff(c.indptr[lo : hi + 1])
        rows = np.repeat(np.arange(hi - lo), counts)
        a = half[sl].astype(np.float64)
        b = c.data[sl] - a
        ta = np.bincount(rows, weights=a, minlength=hi - lo)
        tb = np.bincount(rows, weights=b, minlength=hi - lo)
        a /= np.maximum(ta, 1e-300)[rows]
        b /= np.maximum(tb, 1e-300)[rows]
        np.sqrt(a, out=a)
        np.sqrt(b, out=b)
        a -= b
        a *= a
        out[lo:hi] = np.bincount(rows, weights=a, minlength=hi - lo)
    return out


def _row_chords(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    diff = (plugin_roots(a) - plugin_roots(b)).tocsr()
    diff.data **= 2
    return np.sqrt(np.asarray(diff.sum(axis=1)).ravel())


def split_half_squared(
    c: sp.csr_matrix, n_repeats: int, rng: np.random.Generator, *, vectorized: bool = False
) -> np.ndarray:
    """``s_i^2``: the squared chord between two random halves of each row, mean of
    ``n_repeats`` splits (``(n,)``; ``O(nnz)`` per split). ``vectorized``: the halves drawn by
    :func:`_half_counts` (long contexts), else by :func:`_split_rows`."""
    sq = np.zeros(c.shape[0])
    for r in range(n_repeats):
        if c.shape[0] > 4096:
            log.info("noise floor: split %d/%d", r + 1, n_repeats)
        if vectorized:
            sq += _halves_squared_chords(c, _half_counts(c, rng))
        else:
            sq += _row_chords(*_split_rows(c, rng)) ** 2
    return sq / n_repeats
