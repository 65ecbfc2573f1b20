"""Stress, monotonicity, separation and rank against hand-computed values and brute force."""

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from posgeom import PosgeomError
from posgeom.embed import classical_mds, effective_rank, effective_ranks, low_rank_factors
from posgeom.scores import (
    monotonicity_violation_rate,
    scale_optimal_stress,
    separation_margin,
    shepard_table,
    stress,
    stress_scores,
)

TARGET = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
# 1-D encoding at 0, 2, 3: distances (2, 3, 1) against target (1, 2, 1)
ENCODING = np.array([[0.0], [2.0], [3.0]])


def test_stress_kinds_by_hand():
    # pairs (0,1), (0,2), (1,2): delta = 2, 3, 1; D = 1, 2, 1
    raw = (2 - 1) ** 2 + (3 - 2) ** 2 + 0
    assert stress(ENCODING, TARGET, kind="raw") == pytest.approx(raw)
    assert stress(ENCODING, TARGET) == pytest.approx(raw / (1 + 4 + 1))
    assert stress(ENCODING, TARGET, kind="stress1") == pytest.approx(np.sqrt(raw / (4 + 9 + 1)))
    alpha = (2 * 1 + 3 * 2 + 1 * 1) / (4 + 9 + 1)
    value, scale = scale_optimal_stress(ENCODING, TARGET)
    assert scale == pytest.approx(alpha)
    expected = ((alpha * 2 - 1) ** 2 + (alpha * 3 - 2) ** 2 + (alpha - 1) ** 2) / 6
    assert value == pytest.approx(expected)
    assert value == pytest.approx(1 - (2 + 6 + 1) ** 2 / (14 * 6))


def test_vectors_distances_and_objects_score_the_same():
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((6, 4))
    target = squareform(pdist(rng.standard_normal((6, 2))))
    by_vectors = stress_scores(vecs, target)
    by_matrix = stress_scores(squareform(pdist(vecs)), target)
    assert by_vectors == by_matrix
    # a 6x6 array that is not a distance matrix is read as vectors
    square = rng.standard_normal((6, 6))
    assert stress(square, target) == pytest.approx(stress(squareform(pdist(square)), target))
    mds = classical_mds(target, 2)
    assert stress(mds, target) == pytest.approx(stress(mds.embedding, target))


def test_stress_is_scale_dependent_but_scale_optimal_is_not():
    rng = np.random.default_rng(1)
    target = squareform(pdist(rng.standard_normal((8, 3))))
    vecs = rng.standard_normal((8, 3))
    assert stress(10 * vecs, target) > 10 * stress(vecs, target)
    a = stress(vecs, target, kind="scale_optimal")
    assert stress(250 * vecs, target, kind="scale_optimal") == pytest.approx(a, rel=1e-10)
    assert stress(target, target) == 0.0


def test_score_input_errors():
    with pytest.raises(PosgeomError, match="NaN"):
        stress(np.array([[0.0], [np.nan], [1.0]]), TARGET)
    with pytest.raises(PosgeomError, match="positions"):
        stress(np.zeros((4, 2)), TARGET)
    with pytest.raises(PosgeomError, match="kind must be one of"):
        stress(ENCODING, TARGET, kind="kruskal")
    with pytest.raises(PosgeomError, match="all distances zero"):
        stress(ENCODING, np.zeros((3, 3)))


def brute_force_violations(delta, target):
    """(discordant + half the encoding's ties, informative) by a loop over every triple."""
    n = len(target)
    violations = informative = 0
    for i in range(n):
        others = [x for x in range(n) if x != i]
        for j, k in itertools.combinations(others, 2):
            if target[i, j] == target[i, k]:
                continue
            informative += 1
            lo, hi = (j, k) if target[i, j] < target[i, k] else (k, j)
            if delta[i, lo] > delta[i, hi]:
                violations += 1
            elif delta[i, lo] == delta[i, hi]:
                violations += 0.5
    return violations, informative


def test_violation_rate_counts_encoding_ties_as_half_by_hand():
    # D = |i - j| on 4 positions: 10 informative triples (anchors 0..3 give 3, 2, 2, 3). The
    # encoding puts positions at 0, 1, 1, 2: no triple reversed, 4 tied (anchor 0: {1, 2};
    # anchor 1: {0, 3}; anchor 2: {0, 3}; anchor 3: {1, 2}), so the rate is (0 + 4/2) / 10.
    target = squareform(pdist(np.arange(4.0)[:, None]))
    got = monotonicity_violation_rate(np.array([[0.0], [1.0], [1.0], [2.0]]), target)
    assert (got.n_triples, got.n_ties, got.n_violations, got.rate) == (10, 4, 2.0, 0.2)
    nope = monotonicity_violation_rate(np.zeros((4, 3)), target)  # every triple a tie
    assert (nope.n_ties, nope.rate) == (10, 0.5)


def test_violation_rate_with_ties_is_somers_d_of_the_anchor_rows():
    # independent reference: scipy's Somers' D(delta | D) per anchor (concordant minus
    # discordant over the pairs D orders); pooled over anchors by their informative pairs, the
    # rate is (1 - D) / 2. Integer coordinates make ties in both the target and the encoding.
    from scipy.stats import somersd

    rng = np.random.default_rng(11)
    target = squareform(pdist(rng.integers(0, 4, (14, 2)).astype(float), "cityblock"))
    vecs = rng.integers(0, 3, (14, 1)).astype(float)
    delta = squareform(pdist(vecs))
    weighted = total = 0.0
    for i in range(14):
        keep = np.arange(14) != i
        a, b = target[i, keep], delta[i, keep]
        m = sum(a[j] != a[k] for j, k in itertools.combinations(range(13), 2))
        weighted += somersd(a, b).statistic * m
        total += m
    got = monotonicity_violation_rate(vecs, target)
    assert got.n_ties > 0 and got.rate == pytest.approx((1 - weighted / total) / 2, abs=1e-12)
    assert (got.n_violations, got.n_triples) == brute_force_violations(delta, target)
    sampled = monotonicity_violation_rate(vecs, target, method="sampled", n_samples=20000)
    assert sampled.ci_low <= got.rate <= sampled.ci_high


def test_monotonicity_exact_matches_brute_force_and_sampling_covers_it():
    rng = np.random.default_rng(2)
    target = squareform(pdist(rng.standard_normal((12, 3))))
    vecs = rng.standard_normal((12, 2))
    delta = squareform(pdist(vecs))
    v, m = brute_force_violations(delta, target)
    got = monotonicity_violation_rate(vecs, target)
    assert got.exact and (got.n_violations, got.n_triples) == (v, m)
    assert got.rate == pytest.approx(v / m)
    runs = [
        monotonicity_violation_rate(vecs, target, method="sampled", n_samples=5000, seed=s)
        for s in range(40)
    ]
    coverage = np.mean([r.ci_low <= v / m <= r.ci_high for r in runs])
    assert coverage >= 0.85  # nominal 95% intervals
    assert np.mean([r.rate for r in runs]) == pytest.approx(v / m, abs=0.005)
    again = monotonicity_violation_rate(vecs, target, method="sampled", n_samples=5000, seed=3)
    assert again == runs[3]


def test_sampled_rate_counts_exactly_the_drawn_triples():
    # reference: the triples draw_triples gives for the seed, counted by hand in numpy; the
    # sampled rate reuses them (cached per (n, m, seed)) for every encoding it scores
    from posgeom.scores.order import draw_triples

    rng = np.random.default_rng(6)
    target = squareform(pdist(rng.standard_normal((30, 3))))
    for seed in (7, 8, 7):
        delta = squareform(pdist(rng.standard_normal((30, 2))))
        i, j, k = draw_triples(30, 2000, np.random.default_rng(seed))
        a, b = target[i, j] - target[i, k], delta[i, j] - delta[i, k]
        got = monotonicity_violation_rate(
            delta, target, method="sampled", n_samples=2000, seed=seed
        )
        assert not got.exact
        assert (got.n_triples, got.n_violations) == (
            int(np.count_nonzero(a)),
            int(np.count_nonzero(a * b < 0)) + 0.5 * int(np.count_nonzero((a != 0) & (b == 0))),
        )


def test_monotonicity_reference_points():
    rng = np.random.default_rng(4)
    pts = rng.standard_normal((40, 2))
    target = squareform(pdist(pts))
    assert monotonicity_violation_rate(pts, target).rate == 0.0
    random_rate = monotonicity_violation_rate(rng.standard_normal((40, 16)), target).rate
    assert 0.4 < random_rate < 0.6
    # NoPE: every informative triple is a tie, each half a violation: chance, like random
    assert monotonicity_violation_rate(np.zeros((40, 3)), target).rate == 0.5


def test_separation_margin_and_shepard_table():
    assert separation_margin(ENCODING) == pytest.approx(1.0)
    assert separation_margin(np.array([[0.0], [0.0], [1.0]])) == 0.0
    table = shepard_table(ENCODING, TARGET)
    assert table["i"].tolist() == [0, 0, 1] and table["j"].tolist() == [1, 2, 2]
    assert table["encoding"].tolist() == [2.0, 3.0, 1.0]
    assert table["target"].tolist() == [1.0, 2.0, 1.0]


def test_effective_rank_definitions_by_hand():
    lam = np.array([4.0, 2.0, 1.0, 1.0, 0.0, -1e-15])
    assert effective_rank(lam, method="tolerance") == 4
    assert effective_rank(lam, method="energy", energy=0.75) == 2
    assert effective_rank(lam, method="energy", energy=0.99) == 4
    p = np.array([4, 2, 1, 1]) / 8
    assert effective_rank(lam, method="entropy") == pytest.approx(np.exp(-np.sum(p * np.log(p))))
    assert effective_rank(lam, method="participation") == pytest.approx(64 / 22)
    assert set(effective_ranks(lam)) == {"tolerance", "energy", "entropy", "participation"}
    with pytest.raises(PosgeomError, match="method must be one of"):
        effective_rank(lam, method="nuclear")


def test_low_rank_factors_parameter_count_and_eckart_young():
    rng = np.random.default_rng(5)
    target = squareform(pdist(rng.standard_normal((32, 6))))
    mds = classical_mds(target, 5, model_dim=128)
    f = low_rank_factors(mds, 3)
    assert (f.n_parameters, f.full_parameters) == (480, 4096)  # the paper's example
    assert f.parameter_reduction == pytest.approx(1 - 480 / 4096)
    np.testing.assert_allclose(f.embedding, mds.truncate(3).embedding, atol=1e-12)
    table = rng.standard_normal((20, 10))
    g = low_rank_factors(table, 4)
    u, s, vt = np.linalg.svd(table)
    best = (u[:, :4] * s[:4]) @ vt[:4]
    np.testing.assert_allclose(g.embedding, best, atol=1e-10)
    with pytest.raises(PosgeomError, match="rank must be"):
        low_rank_factors(table, 11)
    with pytest.raises(PosgeomError, match="only 5 components"):
        low_rank_factors(mds, 6)


def test_effective_rank_of_a_partial_spectrum_is_honest():
    import warnings

    from posgeom.embed.mds import MDSResult

    lam = np.array([4.0, 2.0, 1.0, 1.0])
    full_total = lam.sum()
    partial = MDSResult(
        coordinates=np.zeros((5, 2)),
        eigenvalues=lam[:2],
        total_variance=full_total,
        placement=np.eye(2),
        positions=np.arange(5),
        solver="implicit",
    )
    assert effective_rank(partial, method="energy", energy=0.5) == 1
    with pytest.raises(PosgeomError, match=r"explain 75\.0%"):
        effective_rank(partial, method="energy", energy=0.9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert effective_rank(partial, method="participation") == pytest.approx(36 / 20)
    assert any("only 2 eigenvalues" in str(w.message) for w in caught)
    with pytest.warns(RuntimeWarning, match="only 2 eigenvalues"):
        assert effective_ranks(partial, energy=0.9)["energy"] is None


def test_round_off_never_creates_violations():
    # |i - j| has exact ties; one ulp in the target and one in the encoding order a tie both ways
    target = squareform(pdist(np.arange(12.0)[:, None]))
    encoding = target.copy()
    up = np.nextafter(2.0, 3.0)
    target[5, 7] = target[7, 5] = up  # D(5,3) = 2 < D(5,7) = 2 + 1 ulp
    encoding[5, 3] = encoding[3, 5] = up  # delta(5,3) = 2 + 1 ulp > delta(5,7) = 2
    assert monotonicity_violation_rate(encoding, target, tie_rtol=0).n_violations >= 1
    assert monotonicity_violation_rate(encoding, target).rate == 0.0
