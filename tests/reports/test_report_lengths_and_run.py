"""Choosing n (length profile, suggestion) and `run` scoring the comparison's baselines."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posgeom
from posgeom.cli.main import build_parser, main
from posgeom.corpus.lengths import empty_positions_hint, length_profile, suggest_n
from posgeom.pipeline.config import DEFAULT_MODEL_DIM


def _sequences(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 7, size=k) for k in lengths]


def test_length_profile_matches_numpy_on_known_lengths():
    lengths = [1, 2, 2, 3, 5, 7, 2, 4, 4, 9]
    cap = 6
    counts = posgeom.count_positions(_sequences(lengths), max_positions=cap)
    prof = length_profile(counts.totals, counts.n_sequences)
    capped = np.minimum(lengths, cap)
    np.testing.assert_array_equal(prof.histogram, np.bincount(capped, minlength=cap + 1))
    assert prof.capped == sum(k >= cap for k in lengths) == 2
    for p, v in prof.percentiles.items():
        assert v == int(np.percentile(capped, p, method="inverted_cdf"))


def test_suggested_n_is_the_reproduce_rule():
    from posgeom.reproduction import choose_n

    rng = np.random.default_rng(1)
    lengths = rng.geometric(0.05, size=3000)
    counts = posgeom.count_positions(_sequences(lengths), max_positions=400)
    assert suggest_n(counts.totals, counts.n_sequences) == choose_n(
        counts.totals, counts.n_sequences
    )
    # the 95th percentile of lengths reaches it: at least 5% of sequences are that long
    n = suggest_n(counts.totals, counts.n_sequences)
    assert np.mean(lengths >= n) >= 0.05 > np.mean(lengths >= n + 1)


def test_empty_positions_hint():
    counts = posgeom.count_positions(_sequences([3] * 50 + [4]), max_positions=8)
    hint = empty_positions_hint(counts.totals, counts.n_sequences)
    assert hint.startswith("positions 3..7 have fewer than 2 samples (5 of 8)") and "n = 3" in hint
    assert empty_positions_hint(counts.totals[:3], counts.n_sequences) is None


def _corpus(tmp_path, n_lines=300, max_len=12):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    lines = [" ".join(rng.choice(words, rng.integers(3, max_len))) for _ in range(n_lines)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_lengths_command(tmp_path, capsys):
    path = _corpus(tmp_path)
    assert main(["-q", "lengths", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lengths = [len(line.split()) for line in path.read_text().splitlines()]
    assert doc["n_sequences"] == len(lengths)
    assert doc["percentiles"]["50"] == int(np.percentile(lengths, 50, method="inverted_cdf"))
    assert doc["suggested_n"] == int(np.percentile(lengths, 95, method="inverted_cdf"))
    assert main(["-q", "lengths", str(path)]) == 0
    assert "suggested n =" in capsys.readouterr().out


def test_run_scores_the_comparison_baselines_and_hints_n(tmp_path, capsys, caplog):
    path = _corpus(tmp_path)  # lengths 3 .. 11
    assert main(["run", str(path), "-n", "14", "-d", "24", "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "3 of 14 positions have no samples" in err and "posgeom lengths" in err
    rare = tmp_path / "rare.txt"  # positions 5..7 have one sample each
    rare.write_text("a b c d e\n" * 60 + "a b c d e f g h\n")
    assert main(["run", str(rare), "-n", "8", "-d", "8", "-o", str(tmp_path / "y")]) == 0
    log = caplog.text
    assert "positions 5..7 have fewer than 2 samples" in log and "n = 5 is reached" in log
    code = main(["run", str(path), "-n", "11", "-d", "24", "-o", str(tmp_path / "r")])
    assert code == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert list(summary["scores"]) == [
        "sinusoidal",
        "rope",
        "alibi",
        "t5",
        "nope",
        "random",
        "mds",
        "low_rank_mds",
        "mds+smacof",
    ]
    assert len(summary["heads"]) == 12
    # the same rows as `compare` on the same counts
    counts = posgeom.corpus.counting.PositionCounts.load(tmp_path / "r" / "counts.npz")
    cmp = posgeom.analyze(counts, posgeom.GeometryConfig(model_dim=24, max_rank=2), kind="compare")
    for name in ("sinusoidal", "rope", "alibi", "t5", "random", "low_rank_mds"):
        assert summary["scores"][name]["paper"] == pytest.approx(cmp.row(name)["paper"], rel=1e-12)
        assert summary["scores"][name]["description"] == cmp.row(name)["description"]


def test_one_default_width_across_commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    widths = {}
    for name in ("run", "geometry", "demo", "compare"):
        action = next(a for a in sub[name]._actions if a.dest == "model_dim")
        widths[name] = action.default
    assert set(widths.values()) == {DEFAULT_MODEL_DIM} == {768}
