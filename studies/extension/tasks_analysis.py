"""Analysis of the position tasks (:mod:`studies.extension.tasks`): per task and pooled rank agreement
between the stress of each trained encoding and its error or loss, with bootstrap intervals, over
the records of the current recipe (:data:`studies.extension.tasks.RECIPE`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from studies.extension.tasks import PRIMARY, RECIPE, RESULTS, TASKS, encodings, same_recipe

#: outcome label -> (record key, measure, the scores' length key)
OUTCOMES = {
    "error at 1x": ("trained", "accuracy", "scores_trained"),
    "loss at 1x": ("trained", "loss", "scores_trained"),
    "error at 2x": ("double", "accuracy", "scores_double"),
    "loss at 2x": ("double", "loss", "scores_double"),
}


#: (geometry, stress kind, encodings left out) of the scores compared; "primary" is the task's
#: (``PRIMARY``); NoPE left out once: its stress is 1 by construction and it cannot tell positions
#: apart at all, so it alone can make a correlation look good
SCORES = (
    ("primary", "scale_optimal", ()),
    ("primary", "scale_optimal", ("nope",)),
    ("lag", "scale_optimal", ()),
    ("position", "scale_optimal", ()),
    ("primary", "paper", ()),
)


def score_label(geometry: str, kind: str, without: tuple[str, ...]) -> str:
    label = f"{geometry} geometry, {kind.replace('_', '-')} stress"
    return label + "".join(f", without {e}" for e in without)


def _cells(records: list[dict], task: str, outcome: str, geometry: str, kind: str) -> tuple:
    """``({encoding: -mean stress}, {encoding: [loss or error per seed]})`` of one task."""
    where, measure, at = OUTCOMES[outcome]
    by: dict[str, dict[int, dict]] = {}
    for r in records:
        if r["task"] == task:
            by.setdefault(r["encoding"], {})[r["seed"]] = r
    seeds = sorted(set.intersection(*(set(v) for v in by.values()))) if by else []
    scores, losses = {}, {}
    for enc, rs in by.items():
        vals = [rs[s][where][measure] for s in seeds]
        losses[enc] = [1.0 - v for v in vals] if measure == "accuracy" else vals
        scores[enc] = -float(np.mean([rs[s][at][geometry][kind] for s in seeds]))
    return scores, losses


def pooled_agreement(cells: list[tuple[dict, dict]], *, n_boot: int = 2000) -> dict[str, Any]:
    """Mean over tasks of the within-task Spearman rho (score vs minus loss), with a percentile
    bootstrap interval that resamples the encodings and the seeds of every task independently."""
    from studies.extension.common import spearman, spearman_rows

    rhos, boots = [], []
    rng = np.random.default_rng(0)
    for scores, losses in cells:
        names = list(losses)
        if len(names) < 3:
            continue
        s = np.array([scores[n] for n in names])
        loss = np.array([losses[n] for n in names])
        rhos.append(spearman(s, -loss.mean(1)))
        i = rng.integers(0, len(names), (n_boot, len(names)))
        j = rng.integers(0, loss.shape[1], (n_boot, loss.shape[1]))
        bl = np.stack([loss[i[b]][:, j[b]].mean(1) for b in range(n_boot)])
        boots.append(spearman_rows(s[i], -bl))
    valid = [r for r in rhos if r is not None]
    if not boots:
        return {"tasks": 0, "mean_spearman": None, "ci95": None}
    boot = np.stack(boots).mean(0)  # a replicate with a constant ranking in any task drops out
    boot = boot[np.isfinite(boot)]
    return {
        "tasks": len(valid),
        "mean_spearman": float(np.mean(valid)) if valid else None,
        "ci95": [float(np.quantile(boot, q)) for q in (0.025, 0.975)] if boot.size else None,
    }


def analyze(out: Path) -> dict[str, Any]:
    """Per task and pooled: Spearman of minus the stress against minus the error / loss, over
    the records of ``RESULTS`` trained under ``RECIPE`` (others are left out, and counted)."""
    from studies._common import read_jsonl
    from studies.extension.common import rank_agreement

    path = out / RESULTS
    rows = read_jsonl(path) if path.exists() else []
    current = [r for r in rows if same_recipe(r)]
    records = list({(r["task"], r["encoding"], r["seed"]): r for r in current[::-1]}.values())[
        ::-1
    ]  # the first record of a (task, encoding, seed) done twice by two processes
    if not records:
        return {}
    tasks = [t for t in TASKS if any(r["task"] == t for r in records)]
    result: dict[str, Any] = {
        "recipe": RECIPE,
        "other_recipes_left_out": len(rows) - len(current),
        "outcomes": _outcome_table(records, tasks),
        "agreement": {},
    }
    for outcome in OUTCOMES:
        block: dict[str, Any] = {}
        for geometry, kind, without in SCORES:
            kept = [r for r in records if r["encoding"] not in without]
            per = {}
            for t in tasks:
                which = PRIMARY[t] if geometry == "primary" else geometry
                per[t] = _cells(kept, t, outcome, which, kind)
            block[score_label(geometry, kind, without)] = {
                **{t: rank_agreement(*per[t]) for t in tasks},
                "pooled": pooled_agreement(list(per.values())),
            }
        result["agreement"][outcome] = block
    return result


#: a run "solved" its task at this held-out accuracy on the answer slots
SOLVED = 0.95


def _outcome_table(records: list[dict], tasks: list[str]) -> dict[str, Any]:
    """task -> encoding -> means over seeds of the outcomes and the primary scores."""
    table: dict[str, Any] = {}
    trained = encodings()
    for t in tasks:
        for enc in trained:
            rs = [r for r in records if r["task"] == t and r["encoding"] == enc]
            if not rs:
                continue
            g = PRIMARY[t]
            table.setdefault(t, {})[enc] = {
                "seeds": len(rs),
                "accuracy_1x": float(np.mean([r["trained"]["accuracy"] for r in rs])),
                "accuracy_1x_range": float(np.ptp([r["trained"]["accuracy"] for r in rs])),
                "solved_1x": sum(r["trained"]["accuracy"] >= SOLVED for r in rs),
                "accuracy_2x": float(np.mean([r["double"]["accuracy"] for r in rs])),
                "loss_1x": float(np.mean([r["trained"]["loss"] for r in rs])),
                "stress_1x": float(np.mean([r["scores_trained"][g]["scale_optimal"] for r in rs])),
                "stress_2x": float(np.mean([r["scores_double"][g]["scale_optimal"] for r in rs])),
                "cpu_s": float(np.sum([r["cpu_s"] for r in rs])),
            }
    return table
