"""The row-access layout of the roots (``RootColumns``) and the split-half chords, against dense
numpy references computed from the probabilities themselves."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom import positional_distributions
from posgeom.geometry.divergences import HellingerBlocks, root_columns, split_columns
from posgeom.geometry.split_half import (
    _half_counts,
    _halves_squared_chords,
    _row_chords,
    split_half_squared,
    split_rows_vectorized,
)


def _zipf_counts(n: int, vocab: int, seed: int) -> sp.csr_matrix:
    """Counts with a few tokens at every position and a long rare tail (both layouts used)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    rows = [rng.multinomial(int(rng.integers(20, 200)), p / p.sum()) for _ in range(n)]
    return sp.csr_matrix(np.array(rows))


def _dense_roots(dist) -> np.ndarray:
    return np.sqrt(dist.probabilities())


@pytest.mark.parametrize("smoothing", ["none", "add-alpha"])
def test_pairs_and_blocks_match_dense_roots(smoothing):
    counts = _zipf_counts(60, 400, seed=1)
    dist = positional_distributions(counts, smoothing=smoothing, alpha=0.5)
    cols = root_columns(dist)
    assert 0 < cols.dense.shape[1] < 400  # both layouts are exercised
    s = _dense_roots(dist)
    rng = np.random.default_rng(2)
    i, j = rng.integers(0, 60, 500), rng.integers(0, 60, 500)
    want = ((s[i] - s[j]) ** 2).sum(axis=1)
    np.testing.assert_allclose(cols.squared_pairs(i, j, step=64), want, rtol=1e-12, atol=1e-15)
    rows, others = np.arange(0, 60, 3), np.arange(5, 50)
    np.testing.assert_allclose(cols.gram(rows, others), s[rows] @ s[others].T, rtol=1e-12)
    block = HellingerBlocks(dist).squared_block(rows, others)
    want_block = ((s[rows][:, None, :] - s[others][None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(block, want_block, rtol=1e-9, atol=1e-12)


def test_identical_rows_have_zero_chord_without_cancellation():
    counts = _zipf_counts(10, 300, seed=3).toarray()
    counts[7] = counts[2]
    dist = positional_distributions(counts)
    assert root_columns(dist).squared_pairs(np.array([2]), np.array([7]))[0] == 0.0


def test_split_columns_is_the_column_partition():
    counts = _zipf_counts(40, 300, seed=4)
    dense, rest = split_columns(counts.astype(float).tocsr(), 0.3)
    frequent = np.flatnonzero((counts.toarray() > 0).sum(axis=0) >= 0.3 * 40)
    others = np.setdiff1d(np.arange(300), frequent)
    np.testing.assert_array_equal(dense, counts.toarray()[:, frequent])
    np.testing.assert_array_equal(rest.toarray(), counts.toarray()[:, others])


def test_halves_chords_equal_the_sparse_difference_of_the_halves():
    c = _zipf_counts(80, 500, seed=5).tolil()
    c[[3, 40, 79]] = 0  # empty rows, one of them the last
    c = c.tocsr()
    c.eliminate_zeros()
    half = _half_counts(c, np.random.default_rng(0))
    whole = c.data.astype(np.int64)
    assert np.all((half >= 0) & (half <= whole))
    rows = np.repeat(np.arange(80), np.diff(c.indptr))
    np.testing.assert_array_equal(
        np.bincount(rows, half, minlength=80), np.asarray(c.sum(axis=1)).ravel() // 2
    )
    a, b = split_rows_vectorized(c, np.random.default_rng(0))  # the same draws
    np.testing.assert_allclose(  # row ranges of a few entries: the same sums
        _halves_squared_chords(c, half, chunk=7), _halves_squared_chords(c, half), rtol=1e-13
    )
    np.testing.assert_allclose(
        _halves_squared_chords(c, half), _row_chords(a, b) ** 2, rtol=1e-12, atol=1e-15
    )
    full = np.asarray(c.sum(axis=1)).ravel() > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        by_hand = np.sqrt(a.toarray() / a.sum(axis=1)) - np.sqrt(b.toarray() / b.sum(axis=1))
    ours = _halves_squared_chords(c, half)
    np.testing.assert_allclose(ours[full], (np.asarray(by_hand)[full] ** 2).sum(axis=1), rtol=1e-12)
    assert np.all(ours[~full] == 0.0)


def test_vectorized_split_has_the_distribution_of_numpys_multivariate_hypergeometric():
    """The mean split-half chord of the vectorised draws equals that of numpy's own
    ``multivariate_hypergeometric`` per row (``_split_rows``), within the sampling error."""
    from posgeom.geometry.split_half import _split_rows

    c = _zipf_counts(6, 60, seed=6)
    repeats = 400
    fast = np.array(
        [
            split_half_squared(c, 1, np.random.default_rng(s), vectorized=True)
            for s in range(repeats)
        ]
    )
    slow = np.array(
        [
            _row_chords(*_split_rows(c, np.random.default_rng(10_000 + s))) ** 2
            for s in range(repeats)
        ]
    )
    se = np.sqrt(fast.var(axis=0) / repeats + slow.var(axis=0) / repeats)
    assert np.all(np.abs(fast.mean(axis=0) - slow.mean(axis=0)) < 4 * se)


def test_hypergeometric_with_one_good_is_bernoulli_of_the_exact_probability():
    """``P(X = 1) = sample / (good + bad)`` for ``good = 1`` (hand formula), and the general
    draws keep numpy's mean ``sample good / (good + bad)``."""
    from posgeom.geometry.split_half import _hypergeometric

    rng = np.random.default_rng(0)
    m = 200_000
    good = np.where(np.arange(m) % 2 == 0, 1, 7)
    bad = np.full(m, 9)
    sample = np.full(m, 4)
    x = _hypergeometric(good, bad, sample, rng)
    single = good == 1
    assert x[single].mean() == pytest.approx(4 / 10, abs=4 * np.sqrt(0.24 / single.sum()))
    assert x[~single].mean() == pytest.approx(4 * 7 / 16, rel=0.01)
    assert set(np.unique(x[single])) == {0, 1}


@pytest.mark.parametrize("smoothing", ["none", "add-alpha"])
def test_squared_norms_are_the_row_norms_of_the_dense_roots(smoothing):
    counts = _zipf_counts(30, 200, seed=7).tolil()
    counts[4] = 0  # an empty row: dropped
    dist = positional_distributions(
        counts.tocsr(), smoothing=smoothing, alpha=0.3, below_min="drop"
    )
    assert dist.n_positions == 29
    want = (_dense_roots(dist) ** 2).sum(axis=1)
    np.testing.assert_allclose(dist.squared_norms, want, rtol=1e-13)
    np.testing.assert_allclose(want, 1.0, rtol=1e-13)  # every sqrt(mu_i) is a unit vector
