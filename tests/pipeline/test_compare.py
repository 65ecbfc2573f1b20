"""The comparison table: checked against independent computations (scipy, hand-built matrices)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.linalg import toeplitz
from scipy.spatial.distance import pdist, squareform

from posgeom import encodings as E
from posgeom._errors import PosgeomError
from posgeom.cli.main import main
from posgeom.corpus.counting import count_positions
from posgeom.encodings import default_rope_head_dim, rope_heads
from posgeom.encodings.comparison import default_encodings
from posgeom.geometry.stationarity import stationarity
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.scores.stress import stress
from posgeom.synthetic import synthetic_corpus, synthetic_distributions


def _hellinger(mu: np.ndarray) -> np.ndarray:
    return squareform(pdist(np.sqrt(mu)))


@pytest.fixture(scope="module")
def synth_result():
    counts = count_positions(
        synthetic_corpus(3000, 16, 32, kind="three_regimes", seed=1), max_positions=16
    )
    config = GeometryConfig(model_dim=32, max_rank=5, noise_repeats=2, estimator="plugin")
    result = analyze(counts, config, kind="compare")  # the plug-in target, checked below
    return counts, result


# ----------------------------------------------------------------------------- stationarity
def test_stationarity_exact_toeplitz_from_drifting_is_one():
    d = _hellinger(synthetic_distributions(24, 32, kind="drifting", seed=2))
    # the drifting kind is exactly Toeplitz: every diagonal is constant
    np.testing.assert_allclose(d, toeplitz(d[0]), atol=1e-12)
    s = stationarity(d)
    assert s.toeplitz_r2 == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(s.diagonal_mean, d[0, 1:], atol=1e-12)
    np.testing.assert_allclose(s.diagonal_std, 0.0, atol=1e-6)
    np.testing.assert_allclose(s.toeplitz(), d, atol=1e-12)


def test_stationarity_three_regimes_below_one():
    d = _hellinger(synthetic_distributions(24, 32, kind="three_regimes", seed=2))
    s = stationarity(d)
    assert 0.0 < s.toeplitz_r2 < 0.99
    assert s.monotone_r2 <= s.toeplitz_r2 + 1e-12


def test_stationarity_hand_built_4x4():
    # diagonal 1: pairs (0,1)=1, (1,2)=3, (2,3)=2 -> mean 2; diagonal 2: (0,2)=4, (1,3)=2 -> 3;
    # diagonal 3: (0,3)=1 -> 1.
    d = np.array([[0, 1, 4, 1], [1, 0, 3, 2], [4, 3, 0, 2], [1, 2, 2, 0]], dtype=float)
    s = stationarity(d)
    np.testing.assert_allclose(s.diagonal_mean, [2.0, 3.0, 1.0])
    vals = np.array([1, 4, 1, 3, 2, 2], dtype=float)  # upper triangle row by row
    fit_t = np.array([2, 3, 1, 2, 3, 2], dtype=float)
    sst = np.sum((vals - vals.mean()) ** 2)  # mean 13/6
    assert s.toeplitz_r2 == pytest.approx(1 - np.sum((vals - fit_t) ** 2) / sst)
    # isotonic (non-decreasing) fit of (2, 3, 1) with weights (3, 2, 1): pool the last two
    # blocks -> (3*2 + 1*1)/3 = 7/3 ... then (2, 7/3, 7/3) is non-decreasing.
    np.testing.assert_allclose(s.monotone_fit, [2.0, 7 / 3, 7 / 3])
    fit_m = np.array([2, 7 / 3, 7 / 3, 2, 7 / 3, 2])
    assert s.monotone_r2 == pytest.approx(1 - np.sum((vals - fit_m) ** 2) / sst)
    # sklearn's isotonic regression on all pairs agrees
    from sklearn.isotonic import IsotonicRegression

    gaps = np.array([1, 2, 3, 1, 2, 1])
    iso = IsotonicRegression().fit(gaps, vals)
    np.testing.assert_allclose(iso.predict([1, 2, 3]), s.monotone_fit)


def test_stationarity_constant_and_errors():
    d = np.ones((4, 4)) - np.eye(4)
    s = stationarity(d)
    assert s.toeplitz_r2 == 1.0 and s.monotone_r2 == 1.0
    with pytest.raises(PosgeomError):
        stationarity(np.zeros((2, 2)))
    with pytest.raises(PosgeomError):
        stationarity(np.array([[0, 1, 2], [1, 0, 1], [3, 1, 0]], dtype=float))


# ----------------------------------------------------------------------------- encodings
def test_rope_heads_distances_by_hand_and_full_width_equals_sinusoidal():
    n, d, h = 9, 48, 16
    enc = rope_heads(n, d, h)
    theta = 10000.0 ** (-np.arange(0, h, 2) / h)
    gap = np.arange(n)[:, None] - np.arange(n)[None, :]
    expected = np.sqrt((d // h) * np.sum(2 - 2 * np.cos(gap[..., None] * theta), axis=-1))
    np.testing.assert_allclose(enc.distances, expected, atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(enc.vectors, axis=1), np.sqrt(d / 2))
    np.testing.assert_allclose(
        rope_heads(n, d, d).distances, E.sinusoidal(n, d=d).distances, atol=1e-10
    )
    assert default_rope_head_dim(768, 12) == 64 and default_rope_head_dim(128, 12) == 64
    with pytest.raises(PosgeomError):
        rope_heads(n, 48, 10)


# ----------------------------------------------------------------------------- the table
def test_table_matches_independent_stress(synth_result):
    counts, res = synth_result
    n = 16
    mu = counts.counts.toarray() / counts.totals[:, None]
    target = _hellinger(mu)
    np.testing.assert_allclose(res.distances, target, atol=1e-12)
    expected = {
        "sinusoidal": E.sinusoidal(n, d=32),
        "rope": rope_heads(n, 32, default_rope_head_dim(32, 12)),  # one head of 32
        "t5": E.t5(n),
        "nope": E.nope(n, d=32),
        "random": E.random(n, d=32, seed=0),
    }
    for name, enc in expected.items():
        row = res.row(name)
        for kind in ("paper", "stress1", "scale_optimal"):
            expected_value = stress(enc, target, kind=kind)
            assert row[kind] == pytest.approx(expected_value, rel=1e-10), (name, kind)
    # the paper stress by hand for sinusoidal
    delta = squareform(pdist(E.sinusoidal(n, d=32).vectors))
    iu = np.triu_indices(n, 1)
    by_hand = np.sum((delta[iu] - target[iu]) ** 2) / np.sum(target[iu] ** 2)
    assert res.row("sinusoidal")["paper"] == pytest.approx(by_hand, rel=1e-12)
    assert res.row("nope")["paper"] == pytest.approx(1.0)
    # MDS rows reproduce D: stress ~ 0
    assert res.row("mds")["paper"] < 1e-20
    assert res.row("mds+smacof")["paper"] < 1e-12
    # ALiBi: the best head is the minimum over heads, each equal to m |i - j| scored by hand
    gaps = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(float)
    heads = [stress(m * gaps, target) for m in E.alibi_slopes(12)]
    np.testing.assert_allclose([h["paper"] for h in res.heads], heads, rtol=1e-10)
    assert res.row("alibi")["paper"] == pytest.approx(min(heads))
    # low rank: classical MDS by hand (eigh of the double-centred squared distances)
    j = np.eye(n) - 1.0 / n
    vals, vecs = np.linalg.eigh(-0.5 * j @ target**2 @ j)
    x3 = vecs[:, ::-1][:, :3] * np.sqrt(vals[::-1][:3])
    assert res.row("low_rank_mds")["paper"] == pytest.approx(stress(x3, target), rel=1e-8)
    assert res.row("low_rank_mds")["parameters"] == 3 * (n + 32)
    assert [r["encoding"] for r in res.table] == [x for x in default_encodings() if x != "learned"]


def test_rank_curve_and_violation_against_brute_force(synth_result):
    _, res = synth_result
    target, n = res.distances, 16
    c = res.rank_curve
    assert [r["rank"] for r in c] == [1, 2, 3, 4, 5]
    assert all(r["parameters"] == r["rank"] * (n + 32) for r in c)
    assert all(r["full_parameters"] == n * 32 for r in c)
    # rank-r paper stress equals that of an independent MDS; violation rate by brute force
    j = np.eye(n) - 1.0 / n
    vals, vecs = np.linalg.eigh(-0.5 * j @ target**2 @ j)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    x2 = vecs[:, :2] * np.sqrt(vals[:2])
    assert c[1]["paper"] == pytest.approx(stress(x2, target), rel=1e-8)
    delta = squareform(pdist(x2))
    bad = total = 0
    for i in range(n):
        for a in range(n):
            for b in range(a + 1, n):
                if i in (a, b) or target[i, a] == target[i, b]:
                    continue
                total += 1
                bad += (target[i, a] - target[i, b]) * (delta[i, a] - delta[i, b]) < 0
    assert c[1]["violation_rate"] == pytest.approx(bad / total)
    assert np.all(np.diff([r["paper"] for r in c]) <= 1e-12)


def test_outputs_json_markdown_and_save(synth_result, tmp_path):
    from posgeom.io.artifacts import load_artifact

    _, res = synth_result
    doc = json.loads(res.to_json())
    assert doc["kind"] == "compare" and next(iter(doc["scores"])) == "sinusoidal"
    assert doc["stationarity"]["toeplitz_r2"] == pytest.approx(res.stationarity.toeplitz_r2)
    assert doc["scores"]["nope"]["stress1"] is None  # inf is not JSON
    md = res.markdown()
    assert "| sinusoidal |" in md and "Stationarity" in md and "| r |" in md
    out = res.save(tmp_path / "cmp")
    arrays, _ = load_artifact(out / "arrays.npz")
    np.testing.assert_array_equal(arrays["hellinger"], res.distances)
    assert (out / "comparison.md").read_text() == md
    with pytest.raises(PosgeomError):
        res.save(tmp_path / "cmp")  # exists: refused without overwrite


def test_exact_distributions_dropped_positions_and_errors():
    mu = synthetic_distributions(12, 20, kind="drifting", seed=0)
    config = GeometryConfig(model_dim=16, families=("sinusoidal", "mds"), max_rank=2)
    res = analyze(mu, config, kind="compare")
    assert res.noise is None and res.stationarity.toeplitz_r2 == pytest.approx(1.0)
    # positions dropped by the sample floor: encodings follow the kept positions
    seqs = [np.arange(k) % 5 for k in [10] * 50 + [6] * 3]
    counts = count_positions(seqs, max_positions=10)
    config = config.replace(model_dim=8, min_samples=10, below_min="drop", noise=None)
    res = analyze(counts, config, kind="compare")
    pos = res.distributions.positions
    assert pos.tolist() == list(range(10))  # every position has >= 50 samples
    with pytest.raises(PosgeomError, match="learned_model"):
        analyze(mu, GeometryConfig(model_dim=16, families=("learned",)), kind="compare")
    with pytest.raises(PosgeomError, match="unknown encodings"):
        analyze(mu, GeometryConfig(model_dim=16, families=("nonsense",)), kind="compare")


# ----------------------------------------------------------------------------- CLI
def _user_text(tmp_path):
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat while dogs ran far away from home".split()
    lines = []
    for _ in range(200):
        k = int(rng.integers(4, 12))
        lines.append(" ".join(["once", *list(rng.choice(words, k)), "end"]))
    path = tmp_path / "my corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_compare_on_user_text(tmp_path, capsys):
    corpus = _user_text(tmp_path)
    out = tmp_path / "out"
    rc = main(
        ["-q", "compare", str(corpus), "-n", "6", "-d", "16", "-o", str(out), "--max-rank", "3"]
    )
    assert rc == 0
    for name in ("comparison.json", "comparison.md", "arrays.npz", "counts.npz"):
        assert (out / name).is_file()
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["options"]["n_positions"] == 6 and len(doc["rank_curve"]) == 3
    assert "| sinusoidal |" in capsys.readouterr().out
    # the saved counts feed --counts, with -n keeping the first positions
    rc = main(
        [
            "-q",
            "compare",
            "--counts",
            str(out / "counts.npz"),
            "-n",
            "5",
            "-d",
            "16",
            "-o",
            str(tmp_path / "out2"),
            "--encodings",
            "sinusoidal,mds",
        ]
    )
    assert rc == 0
    doc = json.loads((tmp_path / "out2" / "comparison.json").read_text())
    assert list(doc["scores"]) == ["sinusoidal", "mds"] and doc["kind"] == "compare"


@pytest.mark.parametrize("case", ["missing", "too_long", "no_corpus"])
def test_cli_compare_bad_input_exits_2_with_one_line(tmp_path, capsys, case):
    corpus = _user_text(tmp_path)
    args = {
        "missing": [str(tmp_path / "nope.txt"), "-n", "5"],
        "too_long": [str(corpus), "-n", "500"],
        "no_corpus": ["-n", "5"],
    }[case]
    rc = main(["-q", "compare", *args, "-o", str(tmp_path / "o")])
    assert rc == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("posgeom: error:")
    assert not (tmp_path / "o").exists()
