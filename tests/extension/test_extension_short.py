"""extend on short text: the recommendation is written (exit 0), and the table says which parts
are unavailable, why, and what length of text gives them (issue 33; before: exit 2)."""

from __future__ import annotations

import json

import numpy as np

from posgeom.cli.main import main
from posgeom.lags import count_lags, default_lags, parse_classes

SPEC = "rope:theta=10000,head_dim=16,max_position_embeddings=64"


def _ids(tmp_path, n: int):
    path = tmp_path / "ids.npy"
    np.save(path, np.random.default_rng(0).integers(0, 12, size=(1, n)))
    return path


def _run(tmp_path, n: int, target: int) -> tuple[int, dict, str]:
    out = tmp_path / "out"
    argv = [
        "extend",
        SPEC,
        str(_ids(tmp_path, n)),
        "--target-length",
        str(target),
        "--classes",
        "top:12",
        "--no-fit",
        "-o",
        str(out),
        "-q",
    ]
    rc = main(argv)
    summary = json.loads((out / "summary.json").read_text()) if out.exists() else {}
    md = (out / "table.md").read_text() if out.exists() else ""
    return rc, summary, md


def test_a_text_shorter_than_the_target_gets_the_recommendation_and_the_missing_lags(
    tmp_path, capsys
):
    rc, summary, md = _run(tmp_path, 300, 512)
    assert rc == 0 and summary["rope_parameters"] is not None
    assert (tmp_path / "out" / "rope_parameters.json").exists()
    verdict = "\n".join(summary["verdict"])
    assert "lags 300 to 511 unavailable" in verdict and "at least 512 tokens" in verdict
    # the 40 replicates of 300 tokens in blocks of 299: some replicate keeps no pair at lag 299
    assert "intervals unavailable" in verdict
    assert summary["n_replicates"] == 0 and summary["ranking_stability"] is None
    assert "intervals unavailable" in md


def test_the_intervals_note_follows_the_replicates_themselves(tmp_path, capsys):
    n, target = 1500, 256
    ids = np.random.default_rng(0).integers(0, 12, size=n)
    classes = parse_classes("top:12", token_counts=np.bincount(ids))
    counts = count_lags([ids], classes, lags=default_lags(target - 1), replicates=40, seed=0)
    empty = not (counts.replicate_counts.sum(axis=2) > 0).all()
    rc, summary, _ = _run(tmp_path, n, target)
    assert rc == 0
    assert ("intervals unavailable" in "\n".join(summary["verdict"])) == empty
    assert (summary["n_replicates"] == 0) == empty
