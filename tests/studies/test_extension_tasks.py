"""The position tasks of the extension study (studies/extension/tasks.py): data and statistics
against hand-built references (Python's own sort, reversal and dict lookup; scipy's Spearman)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from studies.extension import tasks as T
from studies.extension import tasks_analysis as A


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_sequence_tasks_answer_slots(task):
    n = 5
    d = T.make_task(task, n, 50, seed=3)
    assert d["inputs"].shape == d["solved"].shape == d["labels"].shape == (50, 2 * n + 1)
    for inp, sol, lab in zip(d["inputs"], d["solved"], d["labels"], strict=True):
        x = [int(t) for t in inp[:n]]
        want = {"copy": x, "reverse": x[::-1], "sort": sorted(x)}[task]
        assert inp[n] == T.SEP and list(inp[n + 1 :]) == [T.QUERY] * n
        assert list(lab[: n + 1]) == [-100] * (n + 1)
        assert list(lab[n + 1 :]) == want == list(sol[n + 1 :])
        assert all(T.FIRST_VALUE <= v < T.FIRST_KEY for v in x)


def test_recall_answer_is_the_value_of_the_query_key():
    n = 4
    d = T.make_task("recall", n, 200, seed=1)
    assert d["inputs"].shape == (200, 2 * n + 3)
    for inp, lab in zip(d["inputs"], d["labels"], strict=True):
        pairs = {int(inp[2 * i]): int(inp[2 * i + 1]) for i in range(n)}
        assert len(pairs) == n  # distinct keys
        assert inp[2 * n] == T.SEP and inp[-1] == T.QUERY
        assert int(lab[-1]) == pairs[int(inp[2 * n + 1])]
        assert (lab[:-1] == -100).all()


def test_pooled_agreement_of_one_task_is_its_spearman():
    rng = np.random.default_rng(0)
    names = [f"e{k}" for k in range(6)]
    scores = {n: float(rng.normal()) for n in names}
    losses = {n: list(rng.normal(size=3)) for n in names}
    got = A.pooled_agreement([(scores, losses)], n_boot=200)
    s = [scores[n] for n in names]
    m = [-np.mean(losses[n]) for n in names]
    assert got["mean_spearman"] == pytest.approx(stats.spearmanr(s, m).statistic, abs=1e-12)
    lo, hi = got["ci95"]
    assert -1 <= lo <= hi <= 1


def test_records_of_another_recipe_are_not_the_current_ones():
    rec = {"task": "copy", "encoding": "rope", "seed": 0, "recipe": dict(T.RECIPE)}
    assert T.same_recipe(rec)
    assert not T.same_recipe({**rec, "recipe": {**T.RECIPE, "steps": T.STEPS + 1}})
    assert not T.same_recipe({"task": "copy", "encoding": "rope", "seed": 0, "steps": 300})
