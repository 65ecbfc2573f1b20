"""Blocked and sampled stress (long contexts) against the dense computation."""

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom.geometry import hellinger_distances, positional_distributions
from posgeom.geometry.divergences import HellingerBlocks
from posgeom.scores import stress_scores
from posgeom.scores.large import DenseTarget, blocked_stress, sampled_stress


@pytest.fixture(scope="module")
def geometry():
    rng = np.random.default_rng(0)
    counts = sp.csr_matrix(rng.poisson(0.3, size=(150, 400)) + (rng.random((150, 400)) < 0.01))
    counts = counts + sp.csr_matrix(
        (np.ones(150), (np.arange(150), np.zeros(150, int))), shape=(150, 400)
    )
    dist = positional_distributions(counts, smoothing="add-alpha", alpha=0.1)
    return dist, hellinger_distances(dist)


def test_hellinger_blocks_equal_the_dense_matrix(geometry):
    dist, dense = geometry
    blocks = HellingerBlocks(dist)
    rows, cols = np.arange(10, 60), np.arange(40, 150)
    np.testing.assert_allclose(blocks.block(rows, cols), dense[np.ix_(rows, cols)], atol=1e-13)
    i, j = np.array([0, 5, 149, 3]), np.array([1, 5, 0, 77])
    np.testing.assert_allclose(blocks.pairs(i, j), dense[i, j], atol=1e-13)
    norm = HellingerBlocks(dist, convention="normalized")
    np.testing.assert_allclose(norm.pairs(i, j), dense[i, j] / np.sqrt(2), atol=1e-13)


@pytest.mark.parametrize("block_size", [7, 64, 1000])
def test_blocked_stress_equals_dense_stress(geometry, block_size):
    dist, dense = geometry
    vecs = np.random.default_rng(1).standard_normal((150, 5)) * 0.3
    ref = stress_scores(vecs, dense)
    got = blocked_stress(vecs, HellingerBlocks(dist), block_size=block_size)
    for kind in ("paper", "stress1", "scale_optimal", "raw", "scale"):
        assert getattr(got, kind) == pytest.approx(getattr(ref, kind), rel=1e-10), kind


def test_sampled_stress_intervals_cover_the_exact_value(geometry):
    _, dense = geometry
    vecs = np.random.default_rng(2).standard_normal((150, 5)) * 0.3
    ref = stress_scores(vecs, dense)
    runs = [sampled_stress(vecs, DenseTarget(dense), n_pairs=3000, seed=s) for s in range(30)]
    for kind in ("paper", "stress1", "scale_optimal"):
        cover = np.mean(
            [r.intervals[kind][0] <= getattr(ref, kind) <= r.intervals[kind][1] for r in runs]
        )
        assert cover >= 0.8, kind
    big = sampled_stress(vecs, DenseTarget(dense), n_pairs=200_000, seed=0)
    assert big.estimate.paper == pytest.approx(ref.paper, rel=0.02)
    again = sampled_stress(vecs, DenseTarget(dense), n_pairs=3000, seed=3)
    assert again.estimate == runs[3].estimate
