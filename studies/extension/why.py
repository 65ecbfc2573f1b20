"""Why the lag geometry does not rank SmolLM2's extensions, and what does (issue 17, item 3).

Cheap computations only: posgeom's scores and the strategies' frequencies, no further forwards.
For every Track A strategy with a measured window, from its ``rope_parameters`` at the target
length (``w`` SmolLM2's inverse frequencies, ``w'`` the strategy's,
:func:`posgeom.encodings.rope_types.rope_frequencies`):

- **restricted lag stress**: the scale-optimal stress of the strategy's lag kernel
  (:func:`posgeom.encodings.rope_extension.rope_lag_vectors`) against the corpus's lag geometry
  (:func:`posgeom.lags.lag_geometry`, ``top:30`` classes, recommended estimator, lags
  :func:`~posgeom.lags.default_lags` up to 12,287: the same geometry ``scores_a.json`` scored),
  over a subset of the lags only: those where the corpus's dependence is above its noise level
  (``k <= longest_signal_lag``), those inside the trained length (``k < 8,192``) and those beyond
  it (``k >= 8,192``); "all lags" recomputes the study's primary score as a check;
- **fast-plane distortion**: ``mean |ln(w_f / w'_f)|`` over the planes whose period ``2 pi / w_f``
  is shorter than the trained length (the planes training saw turn fully, which the model uses
  inside its window), negated so that larger = predicted better;
- **fast planes + unseen phases**: the sum of the strategy's ranks by fast-plane distortion
  and by the share of rotation phases never seen in training (``unseen_phase_fraction`` of
  :func:`posgeom.extension.fit.phase_report`), negated: a rule that rewards keeping the fast
  planes *and* covering the slow ones; **fast planes + factor rule**: the same with the
  ``factor rule`` of :func:`studies.extension.common.baseline_scores` (the slowest plane scaled by ``L / L0``) in place of
  the unseen phases: YaRN's recipe as a score;
- the spread of the primary score: the range of the strategies' point scores against the median
  width of their 95% intervals (``scores_a.json``).

Each is compared with the measured loss past 8k by :func:`studies.extension.common.rank_agreement`.
The frequency rules (fast-plane distortion, unseen phases, factor rule and the rank sums) are
also applied to Track B's RoPE strategies (base 10,000, head width 32, 128 -> 256 / 512 / 1,024,
loss beyond 128), which the rules were not formed on.
Token ids come from the study's cache (``tokens_<text>.npy`` under ``--work``). Writes ``why.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

CORPUS = {"books": "moby_dick", "stacks": "stacks_algebra"}


def corpus_geometry(text: str, work: Path) -> Any:
    from posgeom.lags import count_lags, default_lags, lag_geometry, top_classes
    from studies.extension import track_a as A

    ids = np.load(work / f"tokens_{text}.npy")
    classes = top_classes(np.bincount(ids), 30)
    return lag_geometry(count_lags([ids], classes, lags=default_lags(A.WINDOW - 1)))


def _frequencies(params: dict[str, Any]) -> np.ndarray:
    from studies.extension import track_a as A
    from studies.extension.common import rope_freqs

    return rope_freqs(params, A.HEAD_DIM, A.WINDOW, A.L0)


def frequency_predictors(
    params: dict[str, Any] | None, *, theta: float, head_dim: int, l0: int, target: int
) -> dict[str, float]:
    """Fast-plane distortion, unseen phases and the factor rule of one strategy, with the two
    rank-sum rules added by :func:`add_rules` (module docstring; larger = predicted better)."""
    from posgeom.extension.fit import phase_report
    from studies.extension.common import baseline_scores, rope_freqs

    base = {"rope_type": "default", "rope_theta": theta}
    w0 = rope_freqs(base, head_dim, target, l0)
    w = rope_freqs(params or base, head_dim, target, l0)
    fast = 2 * np.pi / w0 < l0
    rules = baseline_scores(params, theta=theta, head_dim=head_dim, l0=l0, target=target)
    return {
        "fast-plane distortion": -float(np.mean(np.abs(np.log(w0[fast] / w[fast])))),
        "unseen phases": -phase_report(w0, w, l0, target)["unseen_phase_fraction"],
        "factor rule": rules["factor rule"],
    }


def lag_predictors(params: dict[str, Any], geo: Any) -> dict[str, float]:
    """The restricted lag stresses of one Track A strategy (module docstring)."""
    from posgeom.encodings.rope_extension import rope_lag_vectors
    from posgeom.scores.table import score_encoding
    from studies.extension import track_a as A
    from studies.extension.common import rope_freqs

    vec = rope_lag_vectors(rope_freqs(params, A.HEAD_DIM, A.WINDOW, A.L0), geo.lags)
    signal = geo.dependence.longest_signal_lag
    subsets = {
        "all lags": geo.lags > 0,
        f"signal lags (<= {signal})": geo.lags <= signal,
        "lags inside 8k": geo.lags < A.L0,
        "lags beyond 8k": geo.lags >= A.L0,
    }
    out = {}
    for name, keep in subsets.items():
        idx = np.flatnonzero(keep)
        s = score_encoding(vec[idx], geo.distances[np.ix_(idx, idx)])
        out[f"lag stress, {name}"] = -float(s["scale_optimal"])
    return out


def _by_predictor(per: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """strategy -> predictor -> value, turned into predictor -> strategy -> value, with the
    two rank-sum rules."""
    names = list(per)
    pred = {k: {n: per[n][k] for n in names} for k in per[names[0]]}
    pred["fast planes + unseen phases"] = _rank_rule(pred, "fast-plane distortion", "unseen phases")
    pred["fast planes + factor rule"] = _rank_rule(pred, "fast-plane distortion", "factor rule")
    return pred


def _rank_rule(pred: dict[str, dict[str, float]], first: str, second: str) -> dict[str, float]:
    """Minus the sum of the strategies' ranks by two predictors (rank 1 = predicted best)."""
    from scipy.stats import rankdata

    names = list(pred[first])
    a = rankdata([-pred[first][n] for n in names])
    b = rankdata([-pred[second][n] for n in names])
    return {n: -float(x + y) for n, x, y in zip(names, a, b, strict=True)}


def spread(entry: dict[str, Any]) -> dict[str, float]:
    """Range of the primary score's point values and the median width of their intervals."""
    rows = [v for v in entry["scores"].values() if "scale_optimal_ci" in v]
    point = np.array([v["scale_optimal"] for v in rows])
    width = np.array([v["scale_optimal_ci"][1] - v["scale_optimal_ci"][0] for v in rows])
    return {
        "strategies": len(rows),
        "range_of_scores": float(np.ptp(point)),
        "median_interval_width": float(np.median(width)),
    }


def run(out: Path, work: Path) -> None:
    from studies._common import read_jsonl
    from studies.extension import track_a as A
    from studies.extension.analysis import analyze_track_a, complete_windows, track_a_table
    from studies.extension.common import rank_agreement

    records = read_jsonl(out / "track_a.jsonl")
    params = {r["strategy"]: r["rope_parameters"] for r in records}
    scored = json.loads((out / "scores_a.json").read_text())
    measured = analyze_track_a(out)["domains"]
    result: dict[str, Any] = {}
    for domain, text in CORPUS.items():
        if domain not in measured:
            continue
        by = track_a_table(records, domain)
        names = list(measured[domain]["mean_loss_past_8k"])
        windows = complete_windows(by, names)
        losses = {s: [by[s][w]["loss_past_8k"] for w in windows] for s in names}
        geo = corpus_geometry(text, work)
        kw = {"theta": A.THETA, "head_dim": A.HEAD_DIM, "l0": A.L0, "target": A.WINDOW}
        pred = _by_predictor(
            {
                n: {**lag_predictors(params[n], geo), **frequency_predictors(params[n], **kw)}
                for n in names
            }
        )
        pred["in-window loss"] = {
            s: -float(np.mean([by[s][w]["loss_first_2k"] for w in windows])) for s in names
        }
        result[domain] = {
            "mean_loss_past_8k": {n: float(np.mean(v)) for n, v in losses.items()},
            "windows": [f"{t}#{i}" for t, i in windows],
            "longest_signal_lag": int(geo.dependence.longest_signal_lag),
            "spread": spread(scored[f"{text} top:30"]),
            "predictors": pred,
            "agreement": {k: rank_agreement(v, losses) for k, v in pred.items()},
        }
        print(f"why: {domain} done ({len(names)} strategies)", flush=True)
    if "books" in result and "stacks" in result:
        result["books vs stacks"] = domain_flip(result, scored)
    result["track B"] = track_b(out)
    (out / "why.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def domain_flip(result: dict[str, Any], scored: dict[str, Any]) -> dict[str, Any]:
    """Over the strategies measured in both domains: Spearman between the two domains' measured
    losses, and between posgeom's primary scores on the two corpora (does the geometry of each
    domain predict a change of ranking?)."""
    from studies.extension.common import spearman

    books, stacks = (result[d]["mean_loss_past_8k"] for d in ("books", "stacks"))
    common = [n for n in books if n in stacks]
    score = {d: scored[f"{CORPUS[d]} top:30"]["scores"] for d in CORPUS}
    with_scores = [n for n in common if all(n in score[d] for d in CORPUS)]

    def rho(a: dict, b: dict, names: list[str]) -> float | None:
        return spearman(np.array([a[n] for n in names]), np.array([b[n] for n in names]))

    return {
        "strategies": common,
        "spearman_measured": rho(books, stacks, common) if len(common) >= 3 else None,
        "spearman_scores": rho(
            {n: score["books"][n]["scale_optimal"] for n in with_scores},
            {n: score["stacks"][n]["scale_optimal"] for n in with_scores},
            with_scores,
        )
        if len(with_scores) >= 3
        else None,
        "best_books": min(common, key=books.get) if common else None,
        "best_stacks": min(common, key=stacks.get) if common else None,
    }


def track_b(out: Path) -> dict[str, Any]:
    """The frequency rules on Track B's RoPE strategies: data the rules were not formed on."""
    from studies._common import read_jsonl
    from studies.extension import track_b as B
    from studies.extension.analysis import B_DOMAINS, b_cells, complete_windows
    from studies.extension.common import rank_agreement

    records = read_jsonl(out / "track_b.jsonl")
    result: dict[str, Any] = {}
    for length in B.LENGTHS[1:]:
        params = B.rope_strategies(length / B.L0)
        kw = {"theta": 10000.0, "head_dim": B.D // B.HEADS, "l0": B.L0, "target": length}
        for domain, texts in B_DOMAINS.items():
            by = b_cells(records, "rope", length, texts)
            names = [n for n in by if by[n] and (n != "posgeom fitted" or params[n])]
            cells = complete_windows(by, names)
            if len(names) < 3 or not cells:
                continue
            losses = {n: [by[n][c]["loss_beyond_trained"] for c in cells] for n in names}
            rope = {n: {**(params[n] or {"type": "default"}), "rope_theta": 10000.0} for n in names}
            pred = _by_predictor({n: frequency_predictors(rope[n], **kw) for n in names})
            result[f"rope L={length} {domain}"] = {
                "cells": [f"seed{s}:{t}" for s, t in cells],
                "agreement": {k: rank_agreement(v, losses) for k, v in pred.items()},
            }
    return result
