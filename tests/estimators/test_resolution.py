"""The resolution of an estimate (issue 16): the rule, the class map, the coarsened truth."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom import estimate_geometry
from posgeom._errors import PosgeomError
from posgeom.estimators.resolution import (
    RESOLVED_COUNT,
    auto_resolution,
    describe_resolution,
    resolve,
)
from posgeom.synthetic import sample_counts, zipf_distributions


def _counts_with_pooled(pooled: np.ndarray, n: int) -> sp.csr_matrix:
    """``n`` identical rows, each with the given token counts (so ``T_i = pooled.sum()``)."""
    return sp.csr_matrix(np.tile(pooled, (n, 1)).astype(np.int64))


def test_the_rule_keeps_the_tokens_expected_c_times_at_the_thinnest_position():
    c = 5.0
    # 37 tokens seen 6 times per position (expected 6 >= c), 400 tokens seen once (1 < c)
    pooled = np.array([6] * 37 + [1] * 400)
    assert auto_resolution(_counts_with_pooled(pooled, 5), resolved_count=c) == "top:30"
    # a thinner position decides: four rows of twice the counts, one of the counts above
    rows = np.vstack([np.tile(pooled * 2, (4, 1)), pooled[None, :]])
    t_min, freq = pooled.sum(), rows.sum(axis=0) / rows.sum()
    assert int(np.sum(t_min * freq >= c)) == 37  # by hand: the same 37 tokens
    assert auto_resolution(sp.csr_matrix(rows), resolved_count=c) == "top:30"
    assert auto_resolution(sp.csr_matrix(rows), resolved_count=0.5) == "full"
    # when every token occurring passes, the full vocabulary (unseen ids do not count)
    wide = np.concatenate([np.full(50, 20), np.zeros(20, dtype=np.int64)])
    assert auto_resolution(_counts_with_pooled(wide, 3), resolved_count=c) == "full"
    one_short = np.array([20] * 49 + [1])  # all but one pass: top:49 + other = every token
    assert auto_resolution(_counts_with_pooled(one_short, 3), resolved_count=c) == "full"
    # the default threshold is the validated one
    assert auto_resolution(sp.csr_matrix(rows)) == auto_resolution(
        sp.csr_matrix(rows), resolved_count=RESOLVED_COUNT
    )


@pytest.mark.parametrize(("resolved", "label"), [(1, "top:1"), (4, "top:3"), (999, "top:500")])
def test_the_rule_rounds_down_to_the_grid(resolved, label):
    pooled = np.array([10] * resolved + [1] * 5000)
    assert auto_resolution(_counts_with_pooled(pooled, 2), resolved_count=5.0) == label


def test_more_samples_never_give_a_coarser_resolution():
    mu = zipf_distributions(12, 5000, exponent=1.1, seed=3)
    ks = []
    for t in (100, 1000, 10_000, 100_000):
        label = auto_resolution(sample_counts(mu, np.full(12, t), seed=1).counts)
        ks.append(5000 if label == "full" else int(label.split(":")[1]))
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
    with pytest.raises(PosgeomError, match="disagree"):
        estimate_geometry(counts, resolution="top:2", coarsen="top:3")
    with pytest.raises(PosgeomError, match="not understood"):
        estimate_geometry(counts, resolution="finest")


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
