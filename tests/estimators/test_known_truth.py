"""The known-truth Zipf generator: exact distributions, multinomial counts, token sequences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from posgeom import PosgeomError, count_positions, hellinger_distances
from posgeom.synthetic import (
    STRUCTURES,
    decaying_totals,
    sample_counts,
    sample_sequences,
    zipf_distributions,
)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_rows_are_distributions_and_seeded(structure):
    mu = zipf_distributions(12, 500, structure=structure, seed=3)
    assert mu.dtype == np.float64 and mu.shape == (12, 500)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(mu > 0)
    np.testing.assert_array_equal(mu, zipf_distributions(12, 500, structure=structure, seed=3))


def test_stationary_is_exactly_zipf():
    mu = zipf_distributions(5, 300, structure="stationary", exponent=1.1)
    ref = np.arange(1, 301, dtype=float) ** -1.1
    np.testing.assert_allclose(mu, np.tile(ref / ref.sum(), (5, 1)), rtol=1e-12)
    assert np.all(hellinger_distances(mu) == 0)


def test_blocks_zero_inside_positive_across():
    mu = zipf_distributions(12, 400, structure="blocks", n_blocks=3)
    d = hellinger_distances(mu)
    blocks = np.repeat(np.arange(3), 4)
    same = blocks[:, None] == blocks[None, :]
    assert np.all(d[same] < 1e-7) and np.all(d[~same] > 0.1)


def test_frequent_only_keeps_the_tail_conditional_fixed():
    mu = zipf_distributions(10, 1000, structure="frequent_only", n_frequent=20, strength=1.0)
    tail = mu[:, 20:] / mu[:, 20:].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(tail, np.tile(tail[0], (10, 1)), rtol=1e-10)
    assert np.ptp(mu[:, :20], axis=0).max() > 1e-3  # the head moves


def test_drift_is_periodic_and_small_strength_is_fisher():
    # g_i = (cos(2 pi i/P) z_0 + sin(2 pi i/P) z_1) with one period P = n: positions i and i + P
    # coincide, and for small strength D ≈ (s/2) sd_mu(g_i - g_j) (exponential-family Fisher rule).
    n, s = 9, 1e-3
    mu = zipf_distributions(n, 200, structure="drift", periods=(8,), strength=s, exponent=0.0)
    d = hellinger_distances(mu)
    assert d[0, 8] < 1e-9 and d[0, 4] > d[0, 1] > 0
    # exponent 0, tiny strength: mu ≈ uniform, g_0 - g_4 = 2 z_0, so D_04 ≈ (s/2) * 2 sd(z_0)
    big = zipf_distributions(n, 200, structure="drift", periods=(8,), strength=1.0, exponent=0.0)
    z0 = np.log(big[0]) - np.log(big[4])  # = 2 z_0 + const
    np.testing.assert_allclose(d[0, 4], (s / 2) * np.std(z0), rtol=1e-2)


def test_decaying_totals():
    t = decaying_totals(48)
    assert t[0] == 3050 and t[-1] == 336 and np.all(np.diff(t) <= 0)
    np.testing.assert_array_equal(decaying_totals(3, high=10, low=4, shape="linear"), [10, 7, 4])
    with pytest.raises(PosgeomError, match="decay"):
        decaying_totals(4, high=5, low=9)


def test_sample_counts_totals_and_distribution():
    mu = zipf_distributions(3, 8, structure="three_regimes", strength=2.0)
    totals = np.array([40000, 30000, 20000])
    c = sample_counts(mu, totals, seed=5)
    np.testing.assert_array_equal(c.totals, totals)
    np.testing.assert_array_equal(
        c.counts.toarray(), sample_counts(mu, totals, seed=5).counts.toarray()
    )
    for i in range(3):  # Pearson chi-square against the exact expectations
        assert chisquare(c.counts[i].toarray().ravel(), totals[i] * mu[i]).pvalue > 1e-4


def test_sample_sequences_count_to_the_totals():
    mu = zipf_distributions(6, 10, structure="drift", strength=2.0)
    totals = np.array([5000, 5000, 4000, 2500, 2500, 1000])
    seqs = sample_sequences(mu, totals, seed=2)
    assert len(seqs) == 5000
    lengths = np.bincount([len(s) for s in seqs], minlength=7)
    np.testing.assert_array_equal(lengths[1:], [0, 1000, 1500, 0, 1500, 1000])
    counts = count_positions(seqs, max_positions=6, vocab_size=10)
    np.testing.assert_array_equal(counts.totals, totals)
    for i in range(6):
        assert chisquare(counts.counts[i].toarray().ravel(), totals[i] * mu[i]).pvalue > 1e-4
    again = sample_sequences(mu, totals, seed=2)
    assert all(np.array_equal(a, b) for a, b in zip(seqs, again, strict=True))
    with pytest.raises(PosgeomError, match="increase"):
        sample_sequences(mu, np.array([1, 2, 3, 4, 5, 6]))


def test_bad_structure_names_the_choices():
    with pytest.raises(PosgeomError, match="frequent_only"):
        zipf_distributions(4, 10, structure="nope")
