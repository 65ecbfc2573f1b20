"""The verdict leads with what the sample pins down when the auto resolution keeps fewer than
a few token classes (issue 24): the printed line, ``table.md``, ``summary.json`` and the report
say it in the same words as the estimate's classes; a resolution the user gave gets no lead."""

from __future__ import annotations

import json

import numpy as np

from posgeom.cli.main import main
from posgeom.reports.view import load_folder
from posgeom.text.verdict import FEW_CLASSES, verdict


def _few_sequences(tmp_path, lines=20):
    """20 lines of 8 Zipf words from 400: T_ref = 20, so the words kept alone are those of
    frequency >= 1/20 and the rest (about 70%) holds one band of 10 expected: few classes."""
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(400)]
    p = 1.0 / np.arange(1, 401)
    text = [" ".join(rng.choice(words, size=8, p=p / p.sum())) for _ in range(lines)]
    path = tmp_path / "few.txt"
    path.write_text("\n".join(text) + "\n")
    return path


def test_few_classes_lead_every_verdict(tmp_path, capsys):
    out_dir = tmp_path / "r"
    rc = main(
        ["-q", "run", str(_few_sequences(tmp_path)), "-n", "8", "-d", "16", "-o", str(out_dir)]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    summary = json.loads((out_dir / "summary.json").read_text())
    est = summary["estimator"]
    k, words = est["vocab_size"], est["classes"]
    assert k < FEW_CLASSES and est["options"]["resolution_rule"] == "auto"
    line = next(x for x in out.splitlines() if x.startswith("verdict: "))
    assert line.startswith(f"verdict: only {k} token classes pinned down")
    assert f"{est['resolution']}: {words}" in line  # the words of the stored estimate
    assert summary["verdict"]["line"] == line
    assert (out_dir / "table.md").read_text().strip().splitlines()[-1] == line
    view = load_folder(out_dir)
    setting = f"{est['resolution']} ({k} classes: {words})"
    assert view.settings["resolution"] == setting  # the report's settings table
    lead = verdict(view)[0]  # what the report's verdict paragraph opens with
    assert lead.startswith(f"20 sequences pin down only {k} token classes ({words}):")
    assert "More sequences resolve more classes" in lead and "--smooth-positions" in lead


def test_a_given_resolution_gets_no_lead(tmp_path, capsys):
    out_dir = tmp_path / "r"
    argv = ["-q", "run", str(_few_sequences(tmp_path)), "-n", "8", "-d", "16", "-o", str(out_dir)]
    assert main([*argv, "--resolution", "top:2"]) == 0
    out, _ = capsys.readouterr()
    line = next(x for x in out.splitlines() if x.startswith("verdict: "))
    assert line.startswith("verdict: target D:") and "3 token classes (top:2: " in line
    assert not verdict(load_folder(out_dir))[0].startswith("20 sequences")
