"""`compare` above SAMPLED_ABOVE: sampled stationarity and rows, no (n, n) matrix, same numbers."""

import json

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

import posgeom.embed.refine as refinement
import posgeom.scores.table as score_table
from posgeom.cli.main import main
from posgeom.geometry.stationarity import lag_bins, sampled_stationarity
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.scores.large import DenseTarget
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(120, 2000)
    return sample_counts(mu, decaying_totals(120, high=1500, low=300), seed=2)


def _binned_r2(d: np.ndarray, edges: np.ndarray) -> tuple[float, float]:
    """Independent reference: every pair i < j read, the fit constant on each lag bin (bin means,
    then scikit-learn's weighted isotonic regression of them over the bins)."""
    n = d.shape[0]
    vals, bins = [], []
    for k in range(1, n):
        diag = np.diagonal(d, k)
        vals.append(diag)
        bins.append(np.full(diag.size, np.searchsorted(edges, k, "right") - 1))
    v, b = np.concatenate(vals), np.concatenate(bins)
    means = np.array([v[b == c].mean() for c in range(len(edges) - 1)])
    weights = np.array([np.sum(b == c) for c in range(len(edges) - 1)], dtype=float)
    iso = IsotonicRegression(increasing=True).fit(np.arange(means.size), means, weights)
    mono = iso.predict(np.arange(means.size))
    total = np.sum((v - v.mean()) ** 2)
    return 1 - np.sum((v - means[b]) ** 2) / total, 1 - np.sum((v - mono[b]) ** 2) / total


def _nonstationary(n: int, seed: int) -> np.ndarray:
    """A distance matrix that is partly a function of |i - j|, not monotone in it (twice round a
    circle, a drifting third coordinate, noise)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    ring = [np.cos(4 * np.pi * t), np.sin(4 * np.pi * t)]
    x = np.column_stack([*ring, 0.8 * t**2, 0.05 * rng.standard_normal(n)])
    return np.sqrt(np.sum((x[:, None] - x[None]) ** 2, axis=-1))


def test_bins_read_whole_equal_the_exact_per_lag_fit():
    d = _nonstationary(90, 0)
    s = sampled_stationarity(DenseTarget(d), size=20_000)
    assert s.sampling["bins_read_whole"] == 89 and len(s.lag_edges) == 90
    t_ref, m_ref = _binned_r2(d, np.arange(1, 91))
    assert s.toeplitz_r2 == pytest.approx(t_ref, rel=1e-12)
    assert s.monotone_r2 == pytest.approx(m_ref, rel=1e-12)
    assert s.toeplitz_ci == pytest.approx((t_ref, t_ref), rel=1e-12)
    assert 0 < m_ref < t_ref < 1


def test_sampled_intervals_cover_the_binned_fit():
    d = _nonstationary(400, 1)
    edges = lag_bins(400, 24)
    t_ref, m_ref = _binned_r2(d, edges)
    per_lag, _ = _binned_r2(d, np.arange(1, 401))
    assert t_ref <= per_lag + 1e-12  # a binned Toeplitz fit is a Toeplitz matrix
    covered, errors = [], []
    for seed in range(40):
        s = sampled_stationarity(DenseTarget(d), bins=24, size=2400, seed=seed)
        assert s.sampling["bins_read_whole"] == 0 and s.sampling["pairs"] == 2400
        np.testing.assert_array_equal(s.lag_edges, edges)
        covered += [s.toeplitz_ci[0] <= t_ref <= s.toeplitz_ci[1]]
        covered += [s.monotone_ci[0] <= m_ref <= s.monotone_ci[1]]
        errors += [s.toeplitz_r2 - t_ref, s.monotone_r2 - m_ref]
    assert np.mean(covered) >= 0.85
    assert abs(np.mean(errors)) < 0.01 and np.max(np.abs(errors)) < 0.05


def _compare(counts, monkeypatch, sampled_above):
    with monkeypatch.context() as m:
        m.setattr(score_table, "SAMPLED_ABOVE", sampled_above)
        m.setattr(refinement, "REFINE_MAX_N", sampled_above)
        return analyze(counts, GeometryConfig(model_dim=32, max_rank=4), kind="compare")


def test_large_compare_agrees_with_the_exact_one(counts, monkeypatch, tmp_path):
    exact = _compare(counts, monkeypatch, 10_000)
    big = _compare(counts, monkeypatch, 50)
    assert exact.distances is not None and big.distances is None and big.sampled
    fixed = ("sinusoidal", "rope", "alibi", "t5", "nope", "random")
    inside = []
    for name in fixed:
        row, ref = big.row(name), exact.row(name)
        assert row["sampled"], name
        for kind in ("paper", "scale_optimal"):
            inside.append(row[f"{kind}_ci"][0] <= ref[kind] <= row[f"{kind}_ci"][1])
            assert row[kind] == pytest.approx(ref[kind], rel=0.05, abs=1e-3), (name, kind)
    assert np.mean(inside) >= 0.8
    # n - 1 = 119 lags, each its own bin with at most 120 pairs: read whole, the exact diagnostic
    s, t = big.stationarity, exact.stationarity
    assert s.sampled and not t.sampled and s.sampling["bins_read_whole"] == 119
    assert s.toeplitz_r2 == pytest.approx(t.toeplitz_r2, abs=1e-6)
    assert s.monotone_r2 == pytest.approx(t.monotone_r2, abs=1e-6)
    text = big.markdown()
    assert "Stationarity (sampled:" in text and "Sampled: every score" in text
    assert "sampled pairs): median pair floor" in text
    arrays = big.report_arrays()
    assert not {"hellinger", "toeplitz", "noise_pair_floor"} & set(arrays)
    assert arrays["hellinger_grid"].shape == (120, 120) and arrays["lag_edges"].size == 120
    big.save(tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert doc["stationarity"]["toeplitz_r2_ci"][0] <= doc["stationarity"]["toeplitz_r2"]


def _cli_compare(counts, monkeypatch, tmp_path):
    counts.save(tmp_path / "c.npz")
    monkeypatch.setattr(score_table, "SAMPLED_ABOVE", 50)
    monkeypatch.setattr(refinement, "REFINE_MAX_N", 50)
    out = tmp_path / "cmp"
    args = ["compare", "--counts", str(tmp_path / "c.npz"), "-d", "16", "--max-rank", "2"]
    assert main(["-q", *args, "-o", str(out)]) == 0
    return out


def test_cli_compare_on_a_long_context(counts, monkeypatch, tmp_path):
    out = _cli_compare(counts, monkeypatch, tmp_path)
    assert "Stationarity (sampled:" in (out / "comparison.md").read_text()
    doc = json.loads((out / "comparison.json").read_text())
    assert all(r["sampled"] for r in doc["scores"].values()) and doc["stationarity"]["sampling"]


@pytest.mark.e2e
def test_cli_report_of_a_long_context_comparison(counts, monkeypatch, tmp_path, capsys):
    out = _cli_compare(counts, monkeypatch, tmp_path)
    assert main(["-q", "report", str(out)]) == 0
    assert "report in" in capsys.readouterr().out
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "no n x n matrix was formed" in page and "Stationarity" in page  # block-mean heatmap


def _geometry_folder(counts, tmp_path, name, *extra):
    counts.save(tmp_path / "c.npz")
    argv = ["-q", "geometry", str(tmp_path / "c.npz"), "-d", "16", "-o", str(tmp_path / name)]
    assert main([*argv, "--noise", "none", *extra]) == 0
    return tmp_path / name / "arrays.npz"


def test_score_against_a_long_context_folder(counts, monkeypatch, tmp_path, capsys):
    from posgeom.encodings import sinusoidal
    from posgeom.scores.stress import stress_scores

    exact = _geometry_folder(counts, tmp_path, "exact")
    monkeypatch.setattr(score_table, "SAMPLED_ABOVE", 50)
    monkeypatch.setattr(refinement, "REFINE_MAX_N", 50)
    big = _geometry_folder(counts, tmp_path, "big")
    np.save(tmp_path / "sin.npy", sinusoidal(120, 16).vectors)
    capsys.readouterr()
    assert main(["-q", "score", "--json", "--target", str(big), str(tmp_path / "sin.npy")]) == 0
    row = json.loads(capsys.readouterr().out)["sin"]
    from posgeom.io.artifacts import load_artifact

    ref = stress_scores(sinusoidal(120, 16), load_artifact(exact)[0]["hellinger"])
    assert row["sampled"] and row["paper_ci"][0] <= ref.paper <= row["paper_ci"][1]
    assert row["paper"] == pytest.approx(ref.paper, rel=0.02)
    # the plug-in's folder keeps only a rank-16 MDS of its target: one line, what to run instead
    plugin = _geometry_folder(counts, tmp_path, "plug", "--estimator", "plugin")
    capsys.readouterr()
    assert main(["-q", "score", "--target", str(plugin), str(tmp_path / "sin.npy")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "posgeom geometry COUNTS -o DIR --encoding" in err
