"""studies.call_trace: the folder-level trace of one command, on hand-made call paths and on a
real ``posgeom compare`` (issue 25's targets for the counts' path, issue 35's for the distance
converter)."""

from __future__ import annotations

import numpy as np
import pytest

from studies import call_trace as ct


def test_path_moves_by_hand():
    run = ct.CallTrace(handler="h")
    run.counts_path = ["cli", "pipeline", "pipeline", "geometry", "pipeline", "estimators"]
    run.counts_path += ["geometry", "corpus"]
    # collapsed: cli pipeline geometry pipeline estimators geometry corpus: 6 moves;
    # back up (not to an orchestrator): estimators -> geometry, geometry -> corpus;
    # into a folder already left: pipeline (2nd time), geometry (2nd time)
    path = ["cli", "pipeline", "geometry", "pipeline", "estimators", "geometry", "corpus"]
    assert run.collapsed_path() == path
    assert run.path_moves() == (6, 2, 2)


def test_folder_of_a_file_and_its_stage(tmp_path):
    root = str(tmp_path)
    assert ct._folder(f"{root}/embed/mds.py", root) == "embed"
    assert ct._folder(f"{root}/_errors.py", root) == "_root"
    assert ct._folder(f"{root}/nn/decoder.py", root) == "_root"  # not a stage of the main job
    assert ct._folder("/usr/lib/python3/json/__init__.py", root) is None


@pytest.fixture(scope="module")
def compare_trace(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    lines = [" ".join(rng.choice(words, size=int(rng.integers(12, 20)))) for _ in range(300)]
    tmp = tmp_path_factory.mktemp("trace")
    corpus = tmp / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    return ct.trace(["compare", str(corpus), "-n", "12", "-q", "-o", str(tmp / "out")])


def test_compare_follows_the_counts_within_issue_25s_targets(compare_trace):
    moves, back, _ = compare_trace.path_moves()
    assert compare_trace.handler.startswith("cli/")
    assert compare_trace.counts_path[0] in ("cli", "pipeline", "analysis")
    assert moves <= 15, compare_trace.collapsed_path()
    assert back <= 3, compare_trace.collapsed_path()


def test_compare_converts_distances_within_issue_35s_target(compare_trace):
    """Issue 35: the distance converter runs at most 40 times per command (204 before; each
    encoding's distances are built once and handed to the score table, the rank curve scores
    each rank-r MDS's own typed distances), and the target is validated once per name."""
    assert 0 < compare_trace.counted["as_distances"] <= 40, dict(compare_trace.counted)
    assert compare_trace.counted["check_distance_matrix"] <= 2, dict(compare_trace.counted)
