"""The resolution of an estimate (issue 16): the rule, the class map, the coarsened truth."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom import estimate_geometry
from posgeom._errors import PosgeomError
from posgeom.estimators.resolution import (
    BAND_COUNT,
    REACH,
    RESOLVED_COUNT,
    auto_resolution,
    band_classes,
    describe_resolution,
    reference_samples,
    resolve,
    thin_positions,
)
from posgeom.synthetic import sample_counts, zipf_distributions


def _counts_with_pooled(pooled: np.ndarray, n: int) -> sp.csr_matrix:
    """``n`` identical rows, each with the given token counts (so ``T_i = pooled.sum()``)."""
    return sp.csr_matrix(np.tile(pooled, (n, 1)).astype(np.int64))


BEFORE = {"reach": 0.0, "band_count": np.inf}  # the rule of issue 16: top:K, T_min decides


def test_the_rule_keeps_the_tokens_expected_c_times_at_the_thinnest_position():
    c = 5.0
    # 37 tokens seen 6 times per position (expected 6 >= c), 400 tokens seen once (1 < c)
    pooled = np.array([6] * 37 + [1] * 400)
    assert auto_resolution(_counts_with_pooled(pooled, 5), resolved_count=c, **BEFORE) == "top:30"
    # a thinner position decides: four rows of twice the counts, one of the counts above
    rows = np.vstack([np.tile(pooled * 2, (4, 1)), pooled[None, :]])
    t_min, freq = pooled.sum(), rows.sum(axis=0) / rows.sum()
    assert int(np.sum(t_min * freq >= c)) == 37  # by hand: the same 37 tokens
    assert auto_resolution(sp.csr_matrix(rows), resolved_count=c, **BEFORE) == "top:30"
    assert auto_resolution(sp.csr_matrix(rows), resolved_count=0.5) == "full"
    # when every token occurring passes, the full vocabulary (unseen ids do not count)
    wide = np.concatenate([np.full(50, 20), np.zeros(20, dtype=np.int64)])
    assert auto_resolution(_counts_with_pooled(wide, 3), resolved_count=c) == "full"
    one_short = np.array([20] * 49 + [1])  # all but one pass: top:49 + other = every token
    assert auto_resolution(_counts_with_pooled(one_short, 3), resolved_count=c) == "full"
    # the default thresholds are the validated ones
    assert auto_resolution(sp.csr_matrix(rows)) == auto_resolution(
        sp.csr_matrix(rows), resolved_count=RESOLVED_COUNT, band_count=BAND_COUNT, reach=REACH
    )


def test_the_bands_of_the_rest_are_each_expected_c_band_times():
    """By hand: T = 622 per position, top 30 kept (37 pass, grid 30), the rest holds 7 x 6 +
    400 = 442 samples, so B = floor(622 * (442 / 622) / c_band) bands, rounded to the grid."""
    pooled = np.array([6] * 37 + [1] * 400)
    counts = _counts_with_pooled(pooled, 5)
    assert auto_resolution(counts, resolved_count=5.0, band_count=10.0) == "top:30+bands:30"  # 44
    assert auto_resolution(counts, resolved_count=5.0, band_count=100.0) == "top:30+bands:3"  # 4
    assert auto_resolution(counts, resolved_count=5.0, band_count=300.0) == "top:30"  # B = 1
    classes, label = resolve(counts, "top:30+bands:30")
    assert label == "top:30+bands:30" and classes.max() + 1 == 60
    mass = np.bincount(classes, weights=pooled)[30:]
    assert mass.sum() == 442 and np.all(np.abs(mass - 442 / 30) <= 6)  # equal, within a token
    # no token of the top 30 shares a class, no band mixes a top token
    order = np.lexsort((np.arange(pooled.size), -pooled))
    assert sorted(classes[order[:30]]) == list(range(30))
    assert np.all(np.diff(classes[order[30:]]) >= 0)  # bands are runs of frequency ranks


def test_band_classes_by_hand():
    """Masses 10 | 5 5 3 3 2 1 1 0 0 (rest 20, 3 bands of 6.67): each token in the band of its
    mass's midpoint (2.5, 7.5, 11.5, 14.5, 17, 18.5, 19.5 -> 0, 1, 1, 2, 2, 2, 2), unseen last."""
    counts = sp.csr_matrix(np.array([[10, 5, 5, 3, 3, 2, 1, 1, 0, 0]]))
    np.testing.assert_array_equal(band_classes(counts, 1, 3), [0, 1, 2, 2, 3, 3, 3, 3, 3, 3])
    assert resolve(counts, "bands:2")[0].tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1]  # 10 | 20


def test_a_thin_position_no_longer_decides_the_classes():
    """Nine positions of 1,000 samples and one of 20 (2% of the most): T_ref is 1,000 (by hand:
    the fewest samples among positions with >= 5% of 1,000), not 20."""
    mu = zipf_distributions(10, 3000, exponent=1.1, seed=1)
    counts = sample_counts(mu, np.array([1000] * 9 + [20]), seed=2).counts
    assert reference_samples(np.array([1000] * 9 + [20])) == 1000.0
    assert thin_positions(np.array([1000] * 9 + [20])).tolist() == [9]
    new, old = auto_resolution(counts), auto_resolution(counts, **BEFORE)
    pooled = np.sort(np.asarray(counts.sum(axis=0)).ravel())[::-1] / counts.sum()
    assert old == f"top:{_grid(int(np.sum(20 * pooled >= 1)))}"  # the 20-sample position decides
    k = int(np.sum(1000 * pooled >= 1))
    assert new.startswith(f"top:{_grid(k)}+bands:") and _grid(k) > int(old[4:])
    # the estimate records what set its classes
    options = estimate_geometry(counts).summary()["options"]
    assert options["resolution_rule"] == "auto" and options["coarsen"] == new
    assert options["reference_samples"] == 1000.0 and options["thin_positions"] == [9]
    given = estimate_geometry(counts, resolution=new).summary()["options"]
    assert given["resolution_rule"] == "given" and "thin_positions" not in given


def _grid(k: int) -> int:
    return max(g * 10**e for e in range(6) for g in (1, 2, 3, 5) if g * 10**e <= k)


@pytest.mark.parametrize(("resolved", "label"), [(1, "top:1"), (4, "top:3"), (999, "top:500")])
def test_the_rule_rounds_down_to_the_grid(resolved, label):
    pooled = np.array([10] * resolved + [1] * 5000)
    assert auto_resolution(_counts_with_pooled(pooled, 2), resolved_count=5.0, **BEFORE) == label
    # the bands too: 5,000 samples of the rest at T = 5,000 + 10 K, c_band 10 -> 500 (grid)
    assert auto_resolution(_counts_with_pooled(pooled, 2), resolved_count=5.0).endswith(
        "+bands:500"
    )


def test_more_samples_never_give_a_coarser_resolution():
    mu = zipf_distributions(12, 5000, exponent=1.1, seed=3)
    ks = []
    for t in (100, 1000, 10_000, 100_000):
        counts = sample_counts(mu, np.full(12, t), seed=1).counts
        ks.append(int(resolve(counts, auto_resolution(counts))[0].max()) + 1)
    assert ks == sorted(ks) and ks[0] < ks[-1]


def test_the_class_map_is_the_pooled_top_k_at_every_position():
    mu = zipf_distributions(10, 800, exponent=1.1, seed=2)
    counts = sample_counts(mu, np.linspace(3000, 300, 10).astype(np.int64), seed=4)
    est = estimate_geometry(counts, resolution="top:25")
    pooled = np.asarray(counts.counts.sum(axis=0)).ravel()
    order = sorted(range(800), key=lambda t: (-pooled[t], t))  # by count, ties by id
    top = set(order[:25])
    assert est.resolution == "top:25" and est.class_map.shape == (800,)
    assert est.vocab_size == 26 and len(np.unique(est.class_map)) == 26
    other = {int(est.class_map[t]) for t in range(800) if t not in top}
    assert len(other) == 1  # one "other" class
    assert len({int(est.class_map[t]) for t in top} | other) == 26


def test_the_estimate_converges_to_the_coarsened_truth():
    """Coarsened truth by hand: the K most probable tokens (pooled) and one other class."""
    n, vocab, k = 8, 2000, 20
    mu = zipf_distributions(n, vocab, exponent=1.1, strength=1.5, seed=5)
    counts = sample_counts(mu, np.full(n, 400_000), seed=6)
    est = estimate_geometry(counts, estimator="corrected", resolution=f"top:{k}")
    top = np.argsort(-mu.mean(axis=0), kind="stable")[:k]
    rest = np.setdiff1d(np.arange(vocab), top)
    coarse = np.column_stack([mu[:, top], mu[:, rest].sum(axis=1)])
    roots = np.sqrt(coarse)
    truth = np.sqrt(np.maximum(((roots[:, None, :] - roots[None, :, :]) ** 2).sum(-1), 0.0))
    iu = np.triu_indices(n, 1)
    assert np.sqrt(np.mean((est.distances[iu] - truth[iu]) ** 2)) < 0.01
    assert np.median(truth[iu]) > 0.1  # a truth with something to recover


def test_auto_is_the_default_and_is_stated():
    mu = zipf_distributions(8, 30_000, exponent=1.05, seed=0)
    counts = sample_counts(mu, np.full(8, 500), seed=0)
    est = estimate_geometry(counts)
    assert est.resolution == auto_resolution(counts.counts) != "full"
    assert est.summary()["resolution"] == est.resolution
    again = estimate_geometry(counts, resolution=est.class_map)
    np.testing.assert_array_equal(again.distances, est.distances)
    # the plug-in (no sampling model) stays on the paper's full vocabulary
    assert estimate_geometry(counts, estimator="plugin").resolution == "full"


def test_resolution_labels_and_bad_input():
    counts = sp.csr_matrix(np.array([[3, 1, 0, 2], [1, 1, 1, 1]]))
    classes, label = resolve(counts, "full")
    np.testing.assert_array_equal(classes, np.arange(4))
    assert label == "full"
    assert resolve(counts, "top:10")[1] == "full"  # K >= V: every token its own class
    assert describe_resolution("top:300") == "the top 300 tokens + other"
    assert describe_resolution("full") == "the full vocabulary"
    assert describe_resolution("top:10+bands:3") == (
        "the top 10 tokens + 3 frequency bands of the other tokens"
    )
    assert describe_resolution("bands:4") == "4 frequency bands of the tokens"
    with pytest.raises(PosgeomError, match="disagree"):
        estimate_geometry(counts, resolution="top:2", coarsen="top:3")
    with pytest.raises(PosgeomError, match="not understood"):
        estimate_geometry(counts, resolution="finest")
    with pytest.raises(PosgeomError, match="not understood"):
        estimate_geometry(counts, resolution="top:2+bands:0")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unequal_samples_make_no_geometry_at_the_auto_resolution(seed):
    """A stationary known truth (every D_ij = 0) with samples decaying tenfold: on the full
    vocabulary the corrected estimate grows with the gap in sample sizes (issue 16); at the auto
    resolution it does not."""
    from scipy.stats import spearmanr

    from posgeom.synthetic import decaying_totals

    mu = zipf_distributions(24, 30_000, exponent=1.05, structure="stationary")
    totals = decaying_totals(24, high=3000, low=300)
    counts = sample_counts(mu, totals, seed=seed)
    iu = np.triu_indices(24, 1)
    gap = np.abs(np.log(totals)[:, None] - np.log(totals)[None, :])[iu]
    raw = {"euclidean": False}  # the clipped estimate: what the classes alone do
    auto = estimate_geometry(counts, **raw).distances[iu]
    full = estimate_geometry(counts, resolution="full", **raw).distances[iu]
    assert spearmanr(full, gap).statistic > 0.25 and np.median(full) > 0.05
    assert abs(spearmanr(auto, gap).statistic) < 0.3 and np.median(auto) < 0.05
    # the default (Euclidean) estimate: far less geometry, and less of it made by the sizes
    auto = estimate_geometry(counts).distances[iu]
    full = estimate_geometry(counts, resolution="full").distances[iu]
    assert spearmanr(auto, gap).statistic < spearmanr(full, gap).statistic - 0.15
    assert np.median(auto) < 0.5 * np.median(full)


def _planted_rare_band(n: int = 12, vocab: int = 3000) -> np.ndarray:
    """``(n, V)`` known truth: Zipf 1.1 at every position, except that from position ``n / 2`` on
    the tokens of frequency ranks 100-399 have twice their probability and those of ranks 400
    on give that mass back. The top 100 tokens and the rest's total are the same everywhere, so
    the geometry of any ``top:K`` + other with ``K <= 100`` is exactly 0."""
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    late = p.copy()
    late[100:400] *= 2.0
    late[400:] *= 1.0 - p[100:400].sum() / p[400:].sum()
    return np.vstack([np.tile(p, (n // 2, 1)), np.tile(late, (n - n // 2, 1))])


def test_the_bands_find_a_positional_signal_in_rare_tokens_that_top_k_misses():
    from posgeom.estimators.transforms import apply_classes

    mu = _planted_rare_band()
    counts = sample_counts(mu, np.full(12, 1000), seed=3)
    old, new = auto_resolution(counts.counts, **BEFORE), auto_resolution(counts.counts)
    k = int(new.split("+")[0][4:])
    assert old.startswith("top:") and "+" not in old and int(old[4:]) <= 100  # misses it
    assert k <= 100 and "+bands:" in new  # the signal sits outside the tokens kept alone
    early, late = np.arange(6), np.arange(6, 12)

    def between_within(d: np.ndarray) -> tuple[float, float]:
        within = np.concatenate([d[np.ix_(g, g)][np.triu_indices(6, 1)] for g in (early, late)])
        return float(d[np.ix_(early, late)].mean()), float(within.mean())

    est = estimate_geometry(counts)
    truth_counts = apply_classes(sp.csr_matrix(mu), est.class_map).toarray()
    roots = np.sqrt(truth_counts)
    truth = np.sqrt(((roots[:, None, :] - roots[None, :, :]) ** 2).sum(-1))  # by hand
    true_between, true_within = between_within(truth)
    assert true_within < 1e-12 and true_between > 0.1  # the bands' truth: two groups
    got_between, got_within = between_within(np.asarray(est.distances))
    assert est.diagnostics["projection"]["resolved"]
    assert got_between > 4 * got_within and abs(got_between / true_between - 1) < 0.3
    # the rule before: the truth on its classes is 0, and its estimate finds no groups
    flat = estimate_geometry(counts, resolution=old)
    flat_between, flat_within = between_within(np.asarray(flat.distances))
    assert flat_between < 1.5 * flat_within + 1e-3
