"""Analysis of the context-extension study: do the scores rank the strategies as the losses do?

For a set of strategies with a measured mean loss (averaged over the windows of a domain) and a
score where larger means "predicted better", the statistics are:

- Spearman's rho between the score and the *negated* loss (so +1 = the score orders the
  strategies exactly as the measurement, best first), ties averaged (``scipy.stats.spearmanr``);
- a 95% percentile bootstrap interval of rho from 2,000 resamples (seed 0) of the strategies with
  replacement, and, where a domain has several windows, of its windows too (the loss of a
  strategy is then the mean over the resampled windows); it estimates the sampling uncertainty
  of rho over strategies like these and windows like these;
- whether the score's best strategy is among the two lowest measured losses (ties in the score:
  every tied best must be).

Baseline rules (all computed from the strategy's frequencies at the target length with
:func:`posgeom.encodings.rope_types.rope_frequencies`, ``w`` the original and ``w'`` the strategy's
inverse frequencies, ``d`` the rotary width, ``L0`` trained and ``L`` target length):

- ``in-window loss``: minus the measured loss on the first 2k (Track A) or at 1x (Track B);
- ``factor rule`` (the default NTK / YaRN / PI recipe "scale by L / L0"): minus
  ``|ln(w_min / w'_min) - ln(L / L0)|``, the distance of the slowest plane's scaling to L / L0;
- ``critical planes`` (Liu et al. 2023): minus the number of planes with period ``2 pi / w_k > L0``
  (beyond the critical dimension) whose phase at the target, ``w'_k (L - 1)``, leaves the range
  seen in training, ``w_k (L0 - 1)``;
- ``Men bound`` (Men et al. 2024, ``theta >= 0.0424 L^1.628``): ``min(0, ln theta_eff - ln
  bound(L))`` with ``theta_eff = w'_min^(-d / (d - 2))`` the base whose slowest plane equals the
  strategy's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from studies._common import read_jsonl
from studies.extension.common import baseline_scores, rank_agreement, spearman


# ------------------------------------------------------------------------------ track A
def track_a_table(records: list[dict[str, Any]], domain: str | None = None) -> dict[str, Any]:
    """strategy -> {window key -> record}, restricted to windows every strategy has."""
    by: dict[str, dict[tuple[str, int], dict]] = defaultdict(dict)
    for r in records:
        if domain is None or r["domain"] == domain:
            by[r["strategy"]][(r["text"], r["window"])] = r
    return by


def complete_windows(by: dict[str, dict], strategies: list[str]) -> list[tuple[str, int]]:
    keys = [set(by[s]) for s in strategies if s in by]
    if not keys:
        return []
    return sorted(set.intersection(*keys))


#: a window joins a domain's table when it has at least this many strategies measured
MIN_STRATEGIES = 10


def common_design(by: dict[str, dict], order: list[str]) -> tuple[list[str], list[tuple]]:
    """``(strategies, windows)``: every window with at least ``MIN_STRATEGIES`` strategies
    measured, and the strategies (in ``order``) measured on all of them; a strategy measured on
    fewer windows (a later addition) is left out rather than a window."""
    per_window: dict[tuple, int] = defaultdict(int)
    for cells in by.values():
        for w in cells:
            per_window[w] += 1
    windows = sorted(w for w, k in per_window.items() if k >= MIN_STRATEGIES)
    names = [s for s in order if s in by and all(w in by[s] for w in windows)]
    return names, windows


#: posgeom's scores in the analysis: (label, key in the scores, sign); the first is the tool's
#: default ranking (``rank_by="scale_optimal"``), the primary score of the study
POSGEOM_SCORES = (
    ("posgeom lag stress (scale-optimal)", "scale_optimal", -1.0),
    ("posgeom lag stress (paper)", "paper", -1.0),
    ("posgeom unseen phases", "unseen_phase_fraction", -1.0),
)


def posgeom_scores(entry: dict[str, Any] | None, suffix: str) -> dict[str, dict[str, float]]:
    """label -> strategy -> score (larger = predicted better) from one scores_*.json entry."""
    if not entry:
        return {}
    out: dict[str, dict[str, float]] = {}
    for label, key, sign in POSGEOM_SCORES:
        out[f"{label}{suffix}"] = {n: sign * v[key] for n, v in entry["scores"].items() if key in v}
    return out


A_CORPUS = {"books": "moby_dick", "stacks": "stacks_algebra"}


def own_text_scores(
    texts: dict[str, Any], windows: list[tuple], names: list[str]
) -> dict[str, dict[str, float]]:
    """posgeom's scores with each window scored against its own text's lag geometry
    (``scores_a_texts.json``), averaged over the windows: label -> strategy -> score."""
    if not windows or any(t not in texts for t, _ in windows):
        return {}
    out: dict[str, dict[str, float]] = {}
    for label, key, sign in POSGEOM_SCORES[:1]:
        per = [texts[t]["scores"] for t, _ in windows]
        if all(n in p and key in p[n] for p in per for n in names):
            out[f"{label}, top:30, each window's own text"] = {
                n: sign * float(np.mean([p[n][key] for p in per])) for n in names
            }
    return out


def analyze_track_a(out: Path) -> dict:
    from studies.extension import track_a as A

    scored = (
        json.loads((out / "scores_a.json").read_text()) if (out / "scores_a.json").exists() else {}
    )
    own = out / "scores_a_texts.json"
    texts = json.loads(own.read_text()) if own.exists() else {}

    records = read_jsonl(out / "track_a.jsonl")
    params = {r["strategy"]: r["rope_parameters"] for r in records}
    result: dict[str, Any] = {"domains": {}}
    for domain in ("books", "stacks"):
        by = track_a_table(records, domain)
        names, windows = common_design(by, list(params))
        if len(names) < 3:
            continue
        losses = {s: [by[s][w]["loss_past_8k"] for w in windows] for s in names}
        in_window = {
            s: -float(np.mean([by[s][w]["loss_first_2k"] for w in windows])) for s in names
        }
        scores: dict[str, dict[str, float]] = {"in-window loss": in_window}
        for s in names:
            for k, v in baseline_scores(
                params[s], theta=A.THETA, head_dim=A.HEAD_DIM, l0=A.L0, target=A.WINDOW
            ).items():
                scores.setdefault(k, {})[s] = v
        for classes in ("top:30", "embedding:64"):
            entry = scored.get(f"{A_CORPUS[domain]} {classes}")
            scores.update(posgeom_scores(entry, f", {classes}"))
        scores.update(own_text_scores(texts, windows, names))
        result["domains"][domain] = {
            "windows": [f"{t}#{i}" for t, i in windows],
            "mean_loss_past_8k": {s: float(np.mean(v)) for s, v in losses.items()},
            "agreement": {k: rank_agreement(v, losses) for k, v in scores.items()},
        }
    return result


# ------------------------------------------------------------------------------ track B
B_DOMAINS = {"books": ("war_and_peace_tail", "moby_dick"), "stacks": ("stacks_algebra",)}


def b_cells(records: list[dict], encoding: str, length: int, texts: tuple[str, ...]) -> dict:
    """strategy -> {(seed, text): record} for one encoding at one length."""
    by: dict[str, dict] = defaultdict(dict)
    for r in records:
        if r["encoding"] == encoding and r["length"] == length and r["text"] in texts:
            by[r["strategy"]][(r["seed"], r["text"])] = r
    return by


def _first_bins(r: dict, upto: int) -> float:
    from studies.extension.common import bin_mean

    return bin_mean(r["bin_loss"], r["bin"], 0, upto)


def analyze_track_b(out: Path) -> dict:
    """Per RoPE test length and domain: the strategies' loss beyond 128 against the scores."""
    from studies.extension import track_b as B

    records = read_jsonl(out / "track_b.jsonl")
    scored = (
        json.loads((out / "scores_b.json").read_text()) if (out / "scores_b.json").exists() else {}
    )
    result: dict[str, Any] = {}
    for length in B.LENGTHS[1:]:
        for domain, texts in B_DOMAINS.items():
            by = b_cells(records, "rope", length, texts)
            names = [n for n in by if by[n]]
            cells = complete_windows(by, names)
            if len(names) < 3 or not cells:
                continue
            losses = {n: [by[n][c]["loss_beyond_trained"] for c in cells] for n in names}
            params = B.rope_strategies(length / B.L0)
            scores: dict[str, dict[str, float]] = {
                "in-window loss": {
                    n: -float(np.mean([_first_bins(by[n][c], B.L0) for c in cells])) for n in names
                }
            }
            for n in names:
                p = params.get(n) or {"type": "default"}
                rules = baseline_scores(
                    {**p, "rope_theta": 10000.0},
                    theta=10000.0,
                    head_dim=B.D // B.HEADS,
                    l0=B.L0,
                    target=length,
                )
                for k, v in rules.items():
                    scores.setdefault(k, {})[n] = v
            entry = scored.get(f"war_and_peace L={length}")
            if entry:  # the fitted strategy is scored as "posgeom fitted (L=...)"
                entry = {
                    "scores": {
                        ("posgeom fitted" if n.startswith("posgeom fitted (") else n): v
                        for n, v in entry["scores"].items()
                        if n != "posgeom fitted"
                    }
                }
            scores.update(posgeom_scores(entry, ", top:30"))
            primary = scores.get(f"{POSGEOM_SCORES[0][0]}, top:30")
            if primary:
                scores[f"{POSGEOM_SCORES[0][0]}, top:30, without the fitted"] = {
                    n: v for n, v in primary.items() if n != "posgeom fitted"
                }
            result[f"rope L={length} {domain}"] = {
                "cells": [f"seed{s}:{t}" for s, t in cells],
                "mean_loss_beyond_128": {n: float(np.mean(v)) for n, v in losses.items()},
                "agreement": {k: rank_agreement(v, losses) for k, v in scores.items()},
            }
    for length in B.LENGTHS[1:]:
        books, stacks = (result.get(f"rope L={length} {d}") for d in ("books", "stacks"))
        if books and stacks:
            mb, ms = books["mean_loss_beyond_128"], stacks["mean_loss_beyond_128"]
            common = [n for n in mb if n in ms]
            result[f"rope L={length} books vs stacks"] = {
                "spearman_of_measured_losses": spearman(
                    np.array([mb[n] for n in common]), np.array([ms[n] for n in common])
                ),
                "best_books": min(common, key=mb.get),
                "best_stacks": min(common, key=ms.get),
            }
    result["by_encoding"] = _b_encoding_table(records)
    return result


def _b_encoding_table(records: list[dict]) -> dict:
    """encoding/strategy -> length -> text -> mean over seeds of the loss (all positions and
    beyond 128), with the seed spread."""
    acc: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        key = f"{r['encoding']} / {r['strategy']}"
        acc[key][r["length"]][r["text"]].append(
            (r["loss_all"], r["loss_beyond_trained"], r["loss_last_quarter"])
        )
    out: dict = {}
    for key, by_len in acc.items():
        out[key] = {}
        for length, by_text in by_len.items():
            out[key][str(length)] = {
                t: {
                    "seeds": len(v),
                    "loss_all": float(np.mean([x[0] for x in v])),
                    "loss_beyond_128": float(np.mean([x[1] for x in v])),
                    "loss_last_quarter": float(np.mean([x[2] for x in v])),
                    "seed_range_all": float(np.ptp([x[0] for x in v])),
                }
                for t, v in by_text.items()
            }
    return out


def analyze_training(out: Path) -> dict:
    """Item 4: each trained model's stress against the corpus lag geometry vs its loss (in-domain
    War and Peace tail), over models (encoding x seed) as the bootstrap units."""
    path = out / "training_stress.json"
    if not path.exists():
        return {}
    rows = json.loads(path.read_text())["rows"]
    result: dict[str, Any] = {}
    for length in (128, 1024):
        key = f"war_and_peace_tail L={length}"
        losses = {
            f"{r['encoding']} s{r['seed']}": [r["loss"][key]] for r in rows if key in r["loss"]
        }
        result[f"loss at L={length}"] = {
            label: rank_agreement({f"{r['encoding']} s{r['seed']}": -r[k] for r in rows}, losses)
            for label, k in (("scale-optimal stress", "scale_optimal"), ("paper stress", "paper"))
        }
    return result
