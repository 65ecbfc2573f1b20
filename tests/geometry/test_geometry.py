"""Distributions and distances, checked against direct scipy/numpy/mpmath computations."""

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist, squareform

from posgeom import PosgeomError
from posgeom.geometry import (
    bhattacharyya_coefficients,
    fisher_rao_distances,
    hellinger_distances,
    positional_distributions,
)
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.noise import noise_floor


def reference_hellinger(probs):
    return squareform(pdist(np.sqrt(probs), metric="euclidean"))


def random_counts(rng, n=30, v=80, lam=0.4):
    c = rng.poisson(lam, size=(n, v))
    c[:, rng.integers(0, v)] += 1
    return c


@pytest.mark.parametrize("alpha", [None, 0.5, 2.0])
def test_hellinger_matches_scipy_pdist(alpha):
    c = random_counts(np.random.default_rng(0))
    if alpha is None:
        d = positional_distributions(c)
        probs = c / c.sum(1, keepdims=True)
    else:
        d = positional_distributions(sp.csr_matrix(c), smoothing="add-alpha", alpha=alpha)
        probs = (c + alpha) / (c + alpha).sum(1, keepdims=True)
    np.testing.assert_allclose(hellinger_distances(d), reference_hellinger(probs), atol=1e-13)
    np.testing.assert_allclose(d.probabilities(), probs, atol=1e-15)
    norm = hellinger_distances(d, convention="normalized")
    np.testing.assert_allclose(norm, reference_hellinger(probs) / np.sqrt(2), atol=1e-13)


def test_dense_and_sparse_column_paths_agree():
    c = random_counts(np.random.default_rng(1), n=40, v=300, lam=0.2)
    c[:, :5] += 3  # frequent columns go through the dense path
    d = positional_distributions(c)
    a = hellinger_distances(d, dense_fraction=0.0001)
    b = hellinger_distances(d, dense_fraction=2.0)
    np.testing.assert_allclose(a, b, atol=1e-14)
    np.testing.assert_allclose(a, reference_hellinger(c / c.sum(1, keepdims=True)), atol=1e-13)


def test_close_pairs_have_no_cancellation():
    eps = 1e-9
    p = np.array([[0.5 + eps, 0.25 - eps, 0.25], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    got = hellinger_distances(PositionalDistributions.from_probabilities(p))
    mpmath.mp.dps = 50
    exact = mpmath.sqrt(
        sum(
            (mpmath.sqrt(mpmath.mpf(a)) - mpmath.sqrt(mpmath.mpf(b))) ** 2
            for a, b in zip(p[0], p[1], strict=False)
        )
    )
    assert got[0, 1] == pytest.approx(float(exact), rel=1e-9)
    # the naive formula loses most digits here
    bc = np.sum(np.sqrt(p[0] * p[1]))
    naive = np.sqrt(max(2 - 2 * bc, 0))
    assert abs(naive - float(exact)) / float(exact) > 1e-6


def test_fisher_rao_and_bhattacharyya_against_direct_formulas():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(12), size=7)
    bc = np.sqrt(probs) @ np.sqrt(probs).T
    np.testing.assert_allclose(bhattacharyya_coefficients(probs), np.clip(bc, 0, 1), atol=1e-13)
    fr = 2 * np.arccos(np.clip(bc, -1, 1))
    np.fill_diagonal(fr, 0)
    np.testing.assert_allclose(fisher_rao_distances(probs), fr, atol=1e-7)
    # disjoint supports: the chord is sqrt 2, Fisher-Rao is pi
    onehot = np.eye(3)
    assert fisher_rao_distances(onehot)[0, 1] == pytest.approx(np.pi)
    assert hellinger_distances(onehot)[0, 1] == pytest.approx(np.sqrt(2))


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.int64, st.tuples(st.integers(2, 9), st.integers(1, 12)), elements=st.integers(0, 20))
)
def test_distance_properties(counts):
    counts[:, 0] += 1  # every position has a sample
    d = hellinger_distances(positional_distributions(counts))
    assert np.array_equal(d, d.T)
    assert np.all(np.diag(d) == 0)
    assert np.all(d >= 0) and np.all(d <= np.sqrt(2))
    n = d.shape[0]
    for k in range(n):  # triangle inequality through every k
        assert np.all(d <= d[:, [k]] + d[[k], :] + 1e-12)
    ref = reference_hellinger(counts / counts.sum(1, keepdims=True))
    np.testing.assert_allclose(d, ref, atol=1e-12)


def test_sample_floor_flags_and_drops():
    c = np.array([[5, 5], [1, 0], [3, 1], [0, 0]])
    with pytest.raises(PosgeomError, match="no samples"):
        positional_distributions(c)
    d = positional_distributions(c, min_samples=4, below_min="drop")
    assert d.positions.tolist() == [0, 2] and d.dropped.tolist() == [1, 3]
    flagged = positional_distributions(c[:3], min_samples=4)
    assert flagged.flagged.tolist() == [1] and flagged.n_positions == 3
    with pytest.raises(PosgeomError, match="alpha"):
        positional_distributions(c[:3], smoothing="add-alpha", alpha=0)
    with pytest.raises(PosgeomError, match="negative"):
        positional_distributions(-np.ones((3, 2)))
    with pytest.raises(PosgeomError, match="sums to"):
        hellinger_distances(np.array([[0.2, 0.2], [0.5, 0.5]]))


def test_noise_floor_matches_delta_method_bias():
    # delta method: E||sqrt(p_hat) - sqrt(p)||^2 ≈ (K - 1) / (4 T) for T samples over K categories
    rng = np.random.default_rng(3)
    k, t = 10, 4000
    p = rng.dirichlet(np.full(k, 5.0))
    counts = np.stack([rng.multinomial(t, p) for _ in range(4)])
    expected_bias = (k - 1) / (4 * t)
    for method in ("split_half", "bootstrap"):
        nf = noise_floor(counts, method=method, n_repeats=30, seed=0)
        bias = nf.pair_floor[0, 1] ** 2 / 2
        assert bias == pytest.approx(expected_bias, rel=0.25), method
        # positions drawn from one distribution are not trusted to differ
        assert not nf.trusted(threshold=2.0)[0, 1]
    again = noise_floor(counts, n_repeats=5, seed=7)
    assert np.array_equal(
        again.self_distance, noise_floor(counts, n_repeats=5, seed=7).self_distance
    )


def test_noise_floor_trusts_real_differences_and_rejects_bad_input():
    rng = np.random.default_rng(4)
    a, b = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    counts = np.stack(
        [rng.multinomial(3000, a), rng.multinomial(3000, b), rng.multinomial(3000, a)]
    )
    nf = noise_floor(counts, n_repeats=10)
    assert nf.trusted()[0, 1] and not nf.trusted()[0, 2]
    # the fields set when it is made: the mask at 2, its share and the median floor over i < j
    want = [nf.distances[i, j] > 2 * nf.pair_floor[i, j] for i, j in ((0, 1), (0, 2), (1, 2))]
    assert np.array_equal(nf.trusted_pairs, nf.trusted()) and not nf.trusted_pairs.flags.writeable
    assert nf.trusted_share == pytest.approx(sum(want) / 3, abs=0)
    floors = [nf.pair_floor[0, 1], nf.pair_floor[0, 2], nf.pair_floor[1, 2]]
    assert nf.median_pair_floor == pytest.approx(float(np.median(floors)), abs=0)
    with pytest.raises(PosgeomError, match="fewer than 2"):
        noise_floor(np.array([[1, 0], [3, 3]]))


def test_large_matrix_is_exactly_symmetric_across_blocks():
    # more positions than one block of the blocked Gram/mirror code (1024)
    rng = np.random.default_rng(9)
    dense = rng.poisson(0.05, size=(1100, 400))
    dense[np.arange(1100), rng.integers(0, 400, 1100)] += 1
    dense[:, :3] += 2  # frequent columns take the dense (syrk) path
    counts = sp.csr_matrix(dense)
    d = hellinger_distances(positional_distributions(counts))
    assert np.array_equal(d, d.T) and np.all(np.diag(d) == 0)
    probs = counts.toarray() / counts.toarray().sum(1, keepdims=True)
    np.testing.assert_allclose(d, reference_hellinger(probs), atol=1e-12)
