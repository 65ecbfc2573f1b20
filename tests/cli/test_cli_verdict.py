"""Every command that prints scores ends with a one-line verdict that says what its own outputs
say: the estimator, the share of pairs above the noise floor, the closest encoding and whether the
bootstrap intervals separate it from the next."""

from __future__ import annotations

import json

import numpy as np

from helpers.cli import run_cli


def _verdict(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    assert len(lines) == 1, stdout
    return lines[0]


def _ranked(rows):
    cands = [
        r
        for r in rows
        if not r["encoding"].startswith(("mds", "low_rank_mds"))
        and r["encoding"] not in ("random", "nope")
        and r.get("scale_optimal") is not None
    ]
    return sorted(cands, key=lambda r: r["scale_optimal"])


def test_demo_verdict_matches_its_summary(tmp_path, capsys):
    rc, out, err = run_cli(capsys, "demo", "-n", 12, "--sequences", 400, "-o", tmp_path / "d")
    assert rc == 0, err
    line = _verdict(out)
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    share = summary["noise_floor"]["trusted_pair_share"]
    assert f"{100 * share:.0f}% of pairs above twice the noise floor" in line
    assert "target D: plugin estimator, geometry of the full vocabulary" in line
    assert "stability not measured: count with --bootstrap B" in line


def test_compare_verdict_follows_the_bootstrap_intervals(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(12)]
    lines = [" ".join(rng.choice(words[: 4 + (j % 8)], size=8)) for j in range(600)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n")
    counts = tmp_path / "c.npz"
    rc, _, err = run_cli(
        capsys, "count", corpus, "-n", 8, "-t", "word", "-o", counts, "--bootstrap", 6
    )
    assert rc == 0, err
    out_dir = tmp_path / "cmp"
    rc, out, err = run_cli(capsys, "compare", "--counts", counts, "-d", 16, "-o", out_dir)
    assert rc == 0, err
    line = _verdict(out)
    result = json.loads((out_dir / "comparison.json").read_text())
    first, second = _ranked([{"encoding": k, **v} for k, v in result["scores"].items()])[:2]
    assert f"closest in shape: {first['encoding']}, then {second['encoding']}" in line
    # separated: the interval of the paired difference of the two stresses excludes 0
    top = result["uncertainty"]["candidates"]["neighbours"][0]
    assert top["pair"] == [first["encoding"], second["encoding"]]
    assert ("not separated" in line) == (top["difference"][0] <= 0)
    assert f"target D: {result['options']['estimator']} estimator" in line


def test_score_verdict_has_no_noise_floor(tmp_path, capsys):
    n = 6
    x = np.arange(n, dtype=float)
    target = np.abs(x[:, None] - x[None, :]) / n
    np.save(tmp_path / "target.npy", target)
    np.save(tmp_path / "enc.npy", np.column_stack([x, x**2]))
    rc, out, err = run_cli(
        capsys, "score", "--target", tmp_path / "target.npy", tmp_path / "enc.npy"
    )
    assert rc == 0, err
    line = _verdict(out)
    assert "noise floor not estimated" in line and "target D: as given" in line


def test_score_verdict_names_the_estimator_of_a_results_folder(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "demo", "-n", 10, "--sequences", 300, "-o", tmp_path / "d")
    assert rc == 0, err
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    np.save(tmp_path / "enc.npy", np.random.default_rng(0).normal(size=(10, 4)))
    rc, out, err = run_cli(
        capsys, "score", "--target", tmp_path / "d" / "arrays.npz", tmp_path / "enc.npy"
    )
    assert rc == 0, err
    assert f"target D: {summary['estimator']['estimator']} estimator" in _verdict(out)


def test_the_no_special_hint_reads_the_report_input():
    """The CLI's hint after the verdict reads the result's ReportInput: position 0 at the largest
    distance from every other position (a [CLS]-like token) while the rest are close, hinted only
    when the counts counted the special tokens (the summary's corpus options)."""
    from posgeom.text.hints import special_token_hint
    from posgeom.text.report_input import ReportInput

    n = 6
    d = np.full((n, n), 0.2)
    d[0, :] = d[:, 0] = 1.0  # position 0 apart: min_j D[0, j] = max D
    np.fill_diagonal(d, 0.0)

    def report(include_special):
        summary = {"corpus": {"options": {"include_special": include_special}}}
        return ReportInput("run", "geometry", summary, {"hellinger": d})

    assert "rerun with --no-special" in special_token_hint(report(True))
    assert special_token_hint(report(False)) is None
    flat = ReportInput("run", "geometry", report(True).summary, {"hellinger": np.full((n, n), 0.2)})
    assert special_token_hint(flat) is None  # no position apart
