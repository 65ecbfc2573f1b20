"""The estimators inside the pipeline, the comparison and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.pipeline import mds_rows
from posgeom import (
    GeometryConfig,
    PosgeomError,
    analyze,
    estimate_geometry,
    hellinger_distances,
    positional_distributions,
    scale_optimal_stress,
    stress,
)
from posgeom.cli.main import main
from posgeom.encodings import random, sinusoidal
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(12, 2000, structure="drift", periods=(12.0,), strength=1.0)
    return sample_counts(mu, decaying_totals(12, high=1500, low=300), seed=4)


def test_analyze_scores_against_the_estimate_with_the_plugin_beside(counts):
    enc = {"sinusoidal": sinusoidal(12, d=16)}
    res = analyze(counts, mds_rows(model_dim=16, noise=None, refine=False), encodings=enc)
    est = estimate_geometry(counts)
    assert res.options["estimator"] == "corrected" == res.estimate.estimator
    np.testing.assert_array_equal(res.distances, est.distances)
    plug = hellinger_distances(positional_distributions(counts))
    np.testing.assert_array_equal(res.plugin_distances, plug)
    assert res.scores["sinusoidal"]["paper"] == pytest.approx(stress(enc["sinusoidal"], est))
    assert res.plugin_scores["sinusoidal"]["paper"] == pytest.approx(
        stress(enc["sinusoidal"], plug)
    )
    assert res.plugin_scores["mds"]["paper"] == pytest.approx(stress(res.mds, plug))
    summary = res.summary()
    assert summary["estimator"]["estimator"] == "corrected"
    projection = summary["estimator"]["projection"]  # the Euclidean estimate, its diagnostics
    assert projection["rule"] == "noise_edge" and 1 <= projection["kept_rank"] <= 11
    # MDS fits the geometry it is scored against: full rank reproduces it, variance <= 1
    assert res.scores["mds"]["paper"] < 1e-20
    assert max(row["explained_variance"] for row in res.rank_curve) <= 1.0 + 1e-12
    table = res.markdown()
    assert "Target D: corrected estimator" in table and "plug-in geometry" in table
    plugin_run = analyze(counts, mds_rows(model_dim=16, noise=None, estimator="plugin"))
    np.testing.assert_array_equal(plugin_run.distances, plug)
    assert (
        plugin_run.plugin_scores == {}
        and plugin_run.summary()["estimator"]["estimator"] == "plugin"
    )


def test_recommended_falls_back_to_the_plugin_without_a_sampling_model(counts):
    mu = zipf_distributions(6, 50, structure="blocks", n_blocks=2, strength=1.0)
    exact = analyze(mu, mds_rows(model_dim=8, noise=None))
    assert exact.options["estimator"] == "plugin"
    smooth = analyze(counts, mds_rows(model_dim=8, noise=None, smoothing="add-alpha", alpha=0.1))
    assert smooth.options["estimator"] == "plugin"
    with pytest.raises(PosgeomError, match="smoothing='add-alpha' is a plug-in option"):
        analyze(counts, mds_rows(smoothing="add-alpha", estimator="corrected", noise=None))
    with pytest.raises(PosgeomError, match="available: recommended"):
        analyze(counts, mds_rows(estimator="unknown", noise=None))


def test_compare_rows_name_both_targets(counts):
    config = GeometryConfig(
        model_dim=16, families=("sinusoidal", "random", "mds"), noise=None, estimator="corrected"
    )
    res = analyze(counts, config, kind="compare")
    est = estimate_geometry(counts, estimator="corrected")
    plug = hellinger_distances(positional_distributions(counts))
    row = res.row("sinusoidal")
    assert row["scale_optimal"] == pytest.approx(scale_optimal_stress(sinusoidal(12, d=16), est)[0])
    assert row["plugin_scale_optimal"] == pytest.approx(
        scale_optimal_stress(sinusoidal(12, d=16), plug)[0]
    )
    assert res.options["estimator"] == "corrected"
    md = res.markdown()
    assert "Target D: corrected estimator" in md and "Against the plug-in geometry" in md


def test_a_ready_estimate_is_a_target(counts):
    est = estimate_geometry(counts, estimator="split_half", seed=3)
    config = GeometryConfig(model_dim=16, families=("sinusoidal",), noise=None, estimator=est)
    res = analyze(counts, config, kind="compare")
    np.testing.assert_array_equal(res.distances, est.distances)
    assert res.options["estimator"] == "split_half"
    assert res.row("sinusoidal")["paper"] == pytest.approx(stress(sinusoidal(12, d=16), est))
    with pytest.raises(PosgeomError, match="the estimate has 6 buckets"):
        analyze(counts, mds_rows(estimator=estimate_geometry(counts, pool=2), noise=None))


def test_the_estimate_restores_the_truths_ranking_of_encodings():
    """Issue 9's flip on a known truth: against the plug-in a random table beats sinusoidal on
    scale-optimal stress; against the truth and the corrected estimate, sinusoidal wins."""
    mu = zipf_distributions()  # n = 48, V = 30,000, Zipf 1.05, periodic drift
    counts = sample_counts(mu, decaying_totals(48), seed=1)
    truth = hellinger_distances(mu)
    plug = estimate_geometry(counts, estimator="plugin")
    est = estimate_geometry(counts)
    sin, rnd = sinusoidal(48, d=128), random(48, d=128, seed=0)

    def sin_beats_random(target):
        return scale_optimal_stress(sin, target)[0] < scale_optimal_stress(rnd, target)[0]

    assert sin_beats_random(truth) and sin_beats_random(est) and not sin_beats_random(plug)


def test_cli_estimator_option(counts, tmp_path, capsys):
    path = tmp_path / "counts.npz"
    counts.save(path)
    out = tmp_path / "res"
    assert (
        main(["-q", "geometry", str(path), "-d", "8", "--estimator", "corrected", "-o", str(out)])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["options"]["estimator"] == "corrected"
    assert summary["estimator"]["estimator"] == "corrected" and "plugin_scores" in summary
    assert "Target D: corrected estimator" in (out / "table.md").read_text()
    bad = tmp_path / "bad"
    assert main(["-q", "geometry", str(path), "--estimator", "nope", "-o", str(bad)]) == 2
    assert "unknown estimator 'nope'" in capsys.readouterr().err
    assert not bad.exists()
