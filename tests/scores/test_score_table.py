"""The score table: encodings scored against named targets, checked by hand (scipy's pdist)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

import posgeom.scores.table as score_table
from posgeom._errors import PosgeomError
from posgeom.scores.table import ScoreTable, ScoreTargets


def _paper(delta: np.ndarray, target: np.ndarray) -> float:
    """Paper stress by hand over i < j: sum (delta - D)^2 / sum D^2."""
    d, t = squareform(delta, checks=False), squareform(target, checks=False)
    return float(np.sum((d - t) ** 2) / np.sum(t**2))


def _scale_optimal(delta: np.ndarray, target: np.ndarray) -> float:
    d, t = squareform(delta, checks=False), squareform(target, checks=False)
    return float(1.0 - np.dot(d, t) ** 2 / (np.dot(d, d) * np.dot(t, t)))


@pytest.fixture
def case():
    rng = np.random.default_rng(0)
    n = 30
    target = squareform(pdist(rng.normal(size=(n, 3))))
    plugin = squareform(pdist(rng.normal(size=(n, 2))))
    encodings = {"a": rng.normal(size=(n, 4)), "b": np.arange(n, dtype=float)[:, None]}
    return target, plugin, encodings


def test_cells_per_named_target_match_the_hand_formulas(case):
    target, plugin, encodings = case
    targets = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin})
    table = targets.score(encodings)
    assert table.encodings == ("a", "b") and table.targets == ("target", "plugin")
    for name, vec in encodings.items():
        delta = squareform(pdist(vec))
        assert table.value(name, "paper") == pytest.approx(_paper(delta, target), rel=1e-12)
        got = table.scores_of(name, "plugin")
        assert got["paper"] == pytest.approx(_paper(delta, plugin), rel=1e-12)
        assert got["scale_optimal"] == pytest.approx(_scale_optimal(delta, plugin), rel=1e-12)
        row = table.row(name)  # the files' spelling: the target beside as <target>_<score>
        assert row["plugin_paper"] == got["paper"] and row["paper"] == table.value(name, "paper")
        assert "plugin_stress1" not in row


def test_with_cells_concat_and_their_refusals(case):
    target, plugin, encodings = case
    beside = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin})
    alone = ScoreTargets.for_target(target, len(target))
    first = beside.score({"a": encodings["a"]})
    second = beside.score({"b": encodings["b"]})
    both = ScoreTable.concat([first, ScoreTable.concat([]), second])
    assert (
        both.encodings == ("a", "b")
        and both.cells[("b", "plugin")] == second.cells[("b", "plugin")]
    )
    with pytest.raises(PosgeomError, match="different targets"):
        ScoreTable.concat([first, alone.score({"b": encodings["b"]})])
    more = both.with_cells({"a": {"paper_ci": [0.1, 0.2]}, "unknown": {"paper_ci": [0, 1]}})
    assert more.value("a", "paper_ci") == [0.1, 0.2] and "paper_ci" not in more.scores_of("b")
    assert ("unknown", "target") not in more.cells and "paper_ci" not in both.scores_of("a")


def test_sampled_cells_estimate_the_exact_ones(case, monkeypatch):
    target, plugin, encodings = case
    exact = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin}).score(encodings)
    monkeypatch.setattr(score_table, "SAMPLED_ABOVE", 10)
    targets = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin}, size=60_000)
    assert targets.sampled and targets.matrix is None and targets.n_positions == len(target)
    sampled = targets.score(encodings)
    for name in encodings:
        for t in ("target", "plugin"):
            want = exact.value(name, "scale_optimal", t)
            assert sampled.value(name, "scale_optimal", t) == pytest.approx(
                want, rel=0.05, abs=0.01
            )
        assert sampled.value(name, "sampled") is True


def test_chosen_is_the_lowest_choice_score_renamed(case):
    """A family's row: the encoding of lowest paper stress against the primary (by hand), its
    cells against every target under the row's name; no choice: the only encoding, else refused."""
    target, plugin, encodings = case
    targets = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin})
    table = targets.score(encodings)
    papers = {k: _paper(squareform(pdist(np.asarray(v))), target) for k, v in encodings.items()}
    best = min(papers, key=papers.get)
    key, row = table.chosen("paper", "fam")
    assert key == best and row.encodings == ("fam",) and row.targets == table.targets
    for t in table.targets:
        assert dict(row.scores_of("fam", t)) == dict(table.scores_of(best, t))
    tied = ScoreTable(("x", "y"), ("target",), {(e, "target"): {"paper": 1.0} for e in "xy"})
    assert tied.chosen("paper", "fam")[0] == "x"  # ties to the first
    one = targets.score({"only": encodings["a"]})
    assert one.chosen(None, "fam")[0] == "only"
    with pytest.raises(PosgeomError, match="without a row choice built 2 encodings"):
        table.chosen(None, "fam")


def test_score_family_picks_the_lowest_row_and_draws_its_shepard_pairs(case):
    """``score_family``: the row of lowest paper stress (by hand), every encoding's cells, and
    the chosen encoding's distances at the Shepard pairs (scipy's pdist at those pairs)."""
    target, plugin, encodings = case
    targets = ScoreTargets.for_target(target, len(target), beside={"plugin": plugin}, shepard=True)
    i, j = targets.shepard_pairs
    assert np.all(i < j) and len(i) == len(target) * (len(target) - 1) // 2  # all pairs: n small
    got = targets.score_family("fam", encodings, choice="paper")
    papers = {k: _paper(squareform(pdist(np.asarray(v))), target) for k, v in encodings.items()}
    assert got.key == min(papers, key=papers.get)
    assert got.table.encodings == ("fam",)
    assert got.table.value("fam", "paper") == pytest.approx(papers[got.key], rel=1e-12)
    assert set(got.rows) == {"a", "b"}
    assert got.rows["a"]["plugin_paper"] == pytest.approx(
        _paper(squareform(pdist(encodings["a"])), plugin), rel=1e-12
    )
    expected = squareform(pdist(np.asarray(encodings[got.key])))[i, j]
    np.testing.assert_allclose(got.shepard, expected, rtol=1e-12, atol=1e-12)


def test_score_family_without_a_choice_needs_one_encoding(case):
    target, _, encodings = case
    targets = ScoreTargets.for_target(target, len(target))
    assert targets.shepard_pairs is None
    one = targets.score_family("x", {"x": encodings["a"]})
    assert one.key == "x" and one.shepard is None
    with pytest.raises(PosgeomError, match="without a row choice"):
        targets.score_family("x", encodings)


def test_rank_scores_are_the_registry_rank_curve_scores(case):
    from posgeom.scores import scores

    target, _, encodings = case
    targets = ScoreTargets.for_target(target, len(target))
    got = targets.rank_scores(encodings["a"])
    assert list(got) == [s.name for s in scores() if s.rank_curve]
    assert got["paper"] == pytest.approx(
        _paper(squareform(pdist(encodings["a"])), target), rel=1e-12
    )
