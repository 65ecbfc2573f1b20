"""The pipeline above SAMPLED_ABOVE: every default score sampled, no (n, n) matrix, same numbers."""

import numpy as np
import pytest

import posgeom.pipeline_scale as scale
from posgeom.compare import with_baselines
from posgeom.pipeline import analyze_counts
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(120, 2000)
    return sample_counts(mu, decaying_totals(120, high=1500, low=300), seed=2)


def _run(counts, monkeypatch, sampled_above, estimator):
    with monkeypatch.context() as m:
        m.setattr(scale, "SAMPLED_ABOVE", sampled_above)
        m.setattr(scale, "REFINE_MAX_N", sampled_above)
        return with_baselines(analyze_counts(counts, model_dim=64, estimator=estimator))


@pytest.mark.parametrize("estimator", ["plugin", "recommended"])
def test_sampled_rows_agree_with_the_exact_rows(counts, monkeypatch, estimator):
    exact = _run(counts, monkeypatch, 10_000, estimator)
    big = _run(counts, monkeypatch, 50, estimator)
    assert exact.distances is not None and big.distances is None
    assert big.sampled and not exact.sampled
    assert "hellinger" not in big.report_arrays() and "noise_pair_floor" not in big.report_arrays()
    assert "mds+smacof" in exact.scores and "mds+smacof" not in big.scores
    assert "not run" in big.markdown_table() and "Sampled:" in big.markdown_table()
    assert set(exact.scores) - {"mds+smacof"} == set(big.scores)
    inside = []
    for name, row in big.scores.items():
        assert row["sampled"], name
        ref = exact.scores[name]
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
            assert row["paper"] == pytest.approx(exact.plugin_scores[name]["paper"], rel=0.05)
    nf = big.summary()["noise_floor"]
    ref_nf = exact.summary()["noise_floor"]
    assert nf["median_pair_floor"] == pytest.approx(ref_nf["median_pair_floor"], rel=0.1)
    assert nf["trusted_pair_share"] == pytest.approx(ref_nf["trusted_pair_share"], abs=0.03)
    for a, b in zip(big.rank_curve, exact.rank_curve, strict=True):
        assert a["paper"] == pytest.approx(b["paper"], rel=0.05) and a["sampled"]
