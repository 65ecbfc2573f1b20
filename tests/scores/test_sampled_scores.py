"""Sampled scores (long contexts) against the exact dense scores at small n."""

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom import encodings as enc
from posgeom.embed import classical_mds
from posgeom.geometry import hellinger_distances, positional_distributions
from posgeom.geometry.divergences import HellingerBlocks
from posgeom.scores import monotonicity_violation_rate, separation_margin, stress_scores
from posgeom.scores.large import DenseTarget, blocked_stress
from posgeom.scores.order import separation_at_scale
from posgeom.scores.sampled import (
    draw_pair_sample,
    sampled_scores,
    sampled_scores_by_target,
)


@pytest.fixture(scope="module")
def geometry():
    rng = np.random.default_rng(0)
    n, v = 60, 300
    drift = np.linspace(0, 1, n)[:, None]
    rate = 0.5 + 2.0 * np.exp(-((np.arange(v)[None, :] / v - drift) ** 2) / 0.02)
    counts = sp.csr_matrix(rng.poisson(rate))
    dist = positional_distributions(counts)
    return dist, hellinger_distances(dist)


def _encodings(dist, n):
    mds = classical_mds(dist, 3)
    return {
        "mds": mds,
        "sinusoidal": enc.sinusoidal(n, d=16),
        "alibi": enc.alibi(n, 12, head=7),
        "t5": enc.t5(n),
        "random": enc.random(n, d=8, seed=1),
    }


def test_blocked_stress_of_every_representation_equals_dense(geometry):
    dist, dense = geometry
    n = dense.shape[0]
    for name, e in _encodings(dist, n).items():
        ref = stress_scores(e, dense)
        got = blocked_stress(e, HellingerBlocks(dist), block_size=17)
        for kind in ("paper", "stress1", "scale_optimal", "raw", "scale"):
            assert getattr(got, kind) == pytest.approx(getattr(ref, kind), rel=1e-9), (name, kind)


def test_sampled_intervals_cover_the_exact_scores(geometry):
    dist, dense = geometry
    n = dense.shape[0]
    encs = _encodings(dist, n)
    exact = {
        name: (stress_scores(e, dense), monotonicity_violation_rate(e, dense, method="exact").rate)
        for name, e in encs.items()
    }
    hits = {name: [] for name in encs}
    for seed in range(40):
        sample = draw_pair_sample(DenseTarget(dense), size=2000, seed=seed)
        for name, e in encs.items():
            got = sampled_scores(e, sample, separation=False)
            s, rate = exact[name]
            hits[name] += [
                got["paper_ci"][0] <= s.paper <= got["paper_ci"][1],
                got["scale_optimal_ci"][0] <= s.scale_optimal <= got["scale_optimal_ci"][1],
                got["violation_ci"][0] <= rate <= got["violation_ci"][1],
            ]
    for name, h in hits.items():  # nominal 0.95; 120 intervals per encoding
        assert np.mean(h) >= 0.85, (name, np.mean(h))
    big = draw_pair_sample(HellingerBlocks(dist), size=100_000, seed=0)
    got = sampled_scores(encs["mds"], big)
    assert got["paper"] == pytest.approx(exact["mds"][0].paper, rel=0.02)
    assert got["sampled"] and got["n_sampled_pairs"] == 100_000


def test_same_seed_same_numbers_and_the_plugin_beside(geometry):
    _, dense = geometry
    e = enc.sinusoidal(dense.shape[0], d=16)
    a = sampled_scores(e, draw_pair_sample(DenseTarget(dense), size=500, seed=3))
    b = sampled_scores(e, draw_pair_sample(DenseTarget(dense), size=500, seed=3))
    assert a == b
    other = 0.5 * dense
    s = draw_pair_sample(
        DenseTarget(dense), size=50_000, seed=1, beside={"plugin": DenseTarget(other)}
    )
    got = sampled_scores_by_target(e, s)
    assert got["plugin"]["paper"] == pytest.approx(stress_scores(e, other).paper, rel=0.03)
    assert got["target"] == sampled_scores(e, s) and set(got) == {"target", "plugin"}


def test_separation_exact_or_a_stated_upper_bound(geometry):
    dist, dense = geometry
    n = dense.shape[0]
    sample = draw_pair_sample(DenseTarget(dense), size=300, seed=0)
    blocked = {"random12": enc.random(n, d=12, seed=3)}  # above the k-d tree's dimensions
    for name, e in (_encodings(dist, n) | blocked).items():
        got, kind = separation_at_scale(e, n, sample=sample)
        assert kind == "exact"
        assert got == pytest.approx(separation_margin(e), rel=1e-9, abs=1e-12), name
    import posgeom.scores.order as order  # separation_at_scale reads its limit there

    r = enc.random(n, d=12, seed=2)
    old = order.SEPARATION_EXACT_FLOPS
    try:
        order.SEPARATION_EXACT_FLOPS = 0
        bound, kind = separation_at_scale(r, n, sample=sample)
    finally:
        order.SEPARATION_EXACT_FLOPS = old
    assert kind == "upper bound" and bound >= separation_margin(r)


def test_vectorised_split_has_the_split_half_distribution():
    """Halves of floor(T/2) samples, inside the row, and each token's share hypergeometric:
    the mean of token t's half count over splits is c_t floor(T/2) / T."""
    from posgeom.geometry.split_half import split_rows_vectorized

    rng = np.random.default_rng(4)
    c = sp.csr_matrix(rng.poisson(1.5, size=(30, 12)) * (rng.random((30, 12)) < 0.6))
    c = c[np.asarray(c.sum(axis=1)).ravel() >= 2]
    totals = np.asarray(c.sum(axis=1)).ravel()
    mean = np.zeros(c.shape)
    reps = 1500
    gen = np.random.default_rng(0)
    for _ in range(reps):
        a, b = split_rows_vectorized(c, gen)
        np.testing.assert_array_equal((a + b).toarray(), c.toarray())
        np.testing.assert_array_equal(np.asarray(a.sum(axis=1)).ravel(), totals // 2)
        assert a.min() >= 0 and b.min() >= 0
        mean += a.toarray()
    expect = c.toarray() * (totals // 2)[:, None] / totals[:, None]
    np.testing.assert_allclose(mean / reps, expect, atol=0.1)
