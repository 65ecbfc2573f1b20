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


@pytest.fixture(scope="module")
def zipf_compare_trace(tmp_path_factory):
    """``compare -n 32`` on a corpus shaped like SST-2's sentences for the trace: a Zipf vocabulary
    of 2,000 words (the recommended estimator coarsens it to token classes, as on SST-2's 4,340)
    and position-dependent words in 30% of the slots (a geometry the estimate resolves above its
    noise, so no warning is logged). Its call pairs are the same as those of ``python -m
    studies.call_trace sst2/sentence/validation.tsv.gz -n 32`` (58 moves, 10 back up on
    2026-12-05); the 40-word corpus above gives 3 more (its full-vocabulary target is described
    in words by the estimators' resolution, and its unresolved estimate logs a warning through
    the CLI's log handler)."""
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(2000)])
    p = 1.0 / np.arange(1, 2001)
    p /= p.sum()

    def line() -> str:
        toks = rng.choice(words, size=int(rng.integers(32, 44)), p=p)
        mark = rng.random(len(toks)) < 0.3
        return " ".join(
            f"s{t // 4}" if m else w for t, (w, m) in enumerate(zip(toks, mark, strict=True))
        )

    tmp = tmp_path_factory.mktemp("zipf")
    corpus = tmp / "corpus.txt"
    corpus.write_text("\n".join(line() for _ in range(900)) + "\n")
    return ct.trace(["compare", str(corpus), "-n", "32", "-q", "-o", str(tmp / "out")])


def test_compare_moves_within_issue_35s_targets(zipf_compare_trace):
    """Issue 35: ``compare`` makes at most 60 distinct cross-folder moves, at most 10 of them
    back against the data flow (91 / 10 before the stage entry points: the pipeline now calls
    each stage through one or two of them, e.g. ``kept_positions``, ``analyse_target``,
    ``fit_mds_family``, ``built_rows``, ``ScoreTargets.score_family``, ``render_report``)."""
    run = zipf_compare_trace
    pairs = run.folder_pairs
    assert pairs[("pipeline", "geometry")] and pairs[("pipeline", "scores")]  # not vacuous
    assert run.n_moves <= 60, sorted(pairs.items())
    assert len(run.back_up) <= 10, run.back_up
    assert 0 < run.counted["as_distances"] <= 40, dict(run.counted)
