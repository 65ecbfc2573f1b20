"""The pipeline above SAMPLED_ABOVE: every default score sampled, no (n, n) matrix, same numbers."""

import numpy as np
import pytest

import posgeom.embed.refine as refinement
import posgeom.scores.long_context as long_context
import posgeom.scores.table as score_table
from helpers.pipeline import default_rows
from posgeom.pipeline import analyze
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(120, 2000)
    return sample_counts(mu, decaying_totals(120, high=1500, low=300), seed=2)


@pytest.mark.e2e  # a whole long-context folder and its report: CI's second pass
def test_a_long_context_folder_reports_without_n_by_n(counts, monkeypatch, tmp_path):
    big = _run(counts, monkeypatch, 50, "recommended")
    arrays = big.report_arrays()
    assert arrays["hellinger_grid"].shape == (120, 120)  # n < GRID: every position
    np.testing.assert_array_equal(arrays["hellinger_grid_positions"], np.arange(120))
    i, j = arrays["shepard_pairs"]
    np.testing.assert_allclose(arrays["shepard_target"], arrays["hellinger_grid"][i, j], atol=1e-12)
    np.testing.assert_allclose(arrays["hellinger_blocks"], arrays["hellinger_grid"], atol=1e-12)
    big.save(tmp_path / "out", report=True)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "at every pair of its 120 positions" in page and "straight rising cloud" in page
    assert "plug-in distances too large" in page  # the estimate against the plug-in


def _run(counts, monkeypatch, sampled_above, estimator):
    with monkeypatch.context() as m:
        m.setattr(score_table, "SAMPLED_ABOVE", sampled_above)
        m.setattr(refinement, "REFINE_MAX_N", sampled_above)
        return analyze(counts, default_rows(model_dim=64, estimator=estimator))


@pytest.mark.parametrize("estimator", ["plugin", "recommended"])
def test_sampled_rows_agree_with_the_exact_rows(counts, monkeypatch, estimator):
    exact = _run(counts, monkeypatch, 10_000, estimator)
    big = _run(counts, monkeypatch, 50, estimator)
    assert exact.distances is not None and big.distances is None
    assert big.sampled and not exact.sampled
    assert "hellinger" not in big.report_arrays() and "noise_pair_floor" not in big.report_arrays()
    assert "mds+smacof" in exact.scores and "mds+smacof" not in big.scores
    assert "not run" in big.markdown() and "Sampled:" in big.markdown()
    assert set(exact.scores) - {"mds+smacof"} == set(big.scores)
    inside = []
    beside = {} if estimator == "plugin" else {"plugin": exact.plugin_distances}
    dense = score_table.ScoreTargets.for_target(
        exact.distances, len(exact.distances), beside=beside
    )
    own = {"mds": big.mds, "low_rank_mds": big.mds.truncate(3)}  # the large path's own MDS
    for name, row in big.scores.items():
        assert row["sampled"], name
        ref = dense.score_one(own[name])["target"] if name in own else exact.scores[name]
        for kind in ("paper", "scale_optimal"):
            lo, hi = row[f"{kind}_ci"]
            inside.append(lo <= ref[kind] <= hi)
            assert row[kind] == pytest.approx(ref[kind], rel=0.05, abs=1e-3), (name, kind)
        assert row["violation_rate"] == pytest.approx(ref["violation_rate"], abs=0.02), name
        if row["separation_kind"] == "exact":
            assert row["separation"] == pytest.approx(ref["separation"], rel=1e-9), name
    assert np.mean(inside) >= 0.8
    if estimator != "plugin":
        for name, row in big.plugin_scores.items():
            ref = dense.score_one(own[name]) if name in own else {}
            want = exact.plugin_scores[name]["paper"] if name not in own else ref["plugin"]["paper"]
            assert row["paper"] == pytest.approx(want, rel=0.05), name
    nf = big.summary()["noise_floor"]
    ref_nf = exact.summary()["noise_floor"]
    assert nf["median_pair_floor"] == pytest.approx(ref_nf["median_pair_floor"], rel=0.1)
    assert nf["trusted_pair_share"] == pytest.approx(ref_nf["trusted_pair_share"], abs=0.03)
    for a in big.rank_curve:
        b = dense.score_one(big.mds.truncate(a["rank"]))["target"]
        assert a["paper"] == pytest.approx(b["paper"], rel=0.05) and a["sampled"]


@pytest.mark.e2e  # the report's heatmap of a long-context folder: CI's second pass
def test_a_long_context_heatmap_is_block_means(counts, monkeypatch, tmp_path):
    """Blocks of 5 positions with 8 drawn per block: every pair is read, so the heatmap's array is
    the exact block means of the dense estimate (figures.block_mean of the exact run's D)."""
    from posgeom.reports.figures import block_mean

    exact = _run(counts, monkeypatch, 10_000, "recommended").report_arrays()["hellinger"]
    monkeypatch.setattr(long_context, "GRID", 24)
    big = _run(counts, monkeypatch, 50, "recommended")
    arrays = big.report_arrays()
    want, width = block_mean(exact, 24)
    assert width == int(np.ravel(arrays["hellinger_block_width"])[0]) == 5
    np.testing.assert_allclose(arrays["hellinger_blocks"], want, atol=1e-9)
    big.save(tmp_path / "out", report=True)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "24 x 24 block means of 5 x 5 consecutive positions" in page


def test_sampled_block_means_estimate_the_exact_ones():
    """Fewer positions drawn than a block has: unbiased for every block (mean of 400 seeds within
    4.5 standard errors of scipy's dense block means), and the diagonal blocks count their zeros."""
    from scipy.spatial.distance import pdist, squareform

    from posgeom.reports.figures import block_mean
    from posgeom.scores.large import DenseTarget

    x = np.random.default_rng(1).normal(size=(240, 3))
    d = squareform(pdist(x))
    want, width = block_mean(d, 20)
    draws = np.array(
        [
            long_context.sampled_block_means(DenseTarget(d), size=20, per_block=4, seed=s)[0]
            for s in range(400)
        ]
    )
    assert width == 12
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - want) < 4.5 * se + 1e-12)
    assert np.abs(draws[0] - want).max() > 0.05  # one draw is an estimate, not the exact value
