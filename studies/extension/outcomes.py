"""Every predictor against every outcome on the held-out split (issue 23, item 4).

The record (:mod:`studies.extension.record`) judges the predictors by one outcome, the mean loss
past L0. This module scores each of them against every long-context outcome measured on the
split held out for issue 23 (``docs/extension/heldout.jsonl``, SmolLM2-135M at 12,288 tokens):

- ``loss past L0``: mean next-token loss at positions 8,192-12,287;
- ``in-window loss``: mean loss at positions 1-2,047 of the same forward (what a strategy costs
  inside the trained window);
- ``key-token loss (LongPPL)``: mean loss over LongPPL's key tokens (short-context loss minus
  long-context loss > 2 nats and long-context loss < 2 nats; long-context loss: the per-token
  median over the measured strategies, :func:`posgeom.extension.outcomes.consensus_key_mask`),
  on windows with at least :data:`MIN_KEY_TOKENS` key tokens;
- ``key-token loss (LSD > 0.5)``: the same with the long-short difference threshold at 0.5 nats,
  a sensitivity variant (LongPPL's threshold leaves 0 and 11 of 4,096 tokens on this split);
- ``passkey log-prob``: mean log-probability of the key's digits on each passkey prompt (one
  window per prompt; keys 9,800-11,600 tokens before the question);
- ``passkey retrieved``: the fraction of the prompts whose every digit is the argmax (strategies
  measured on every prompt).

A cell is the mean over the outcome's windows of Spearman's rho between the predictor and the
outcome (both oriented "larger = better"), its 95% interval (bootstrap over the strategies, each
window's draws averaged), and the worst measured place of the predictor's pick under that
outcome over the windows (1 = best; a tie in the predictor counts its worse-measured strategy).
The forward-free predictors do not depend on the window; the in-window loss (a predictor that
needs forwards) is the window's own, averaged over the two text windows for the passkeys.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from studies._common import read_jsonl
from studies.extension import record as R
from studies.extension.common import N_BOOT, SEED, spearman_rows

MIN_KEY_TOKENS = 10
SPLIT = "held-out (split)"
KEY_TOKEN_THRESHOLDS = (("key-token loss (LongPPL)", 2.0), ("key-token loss (LSD > 0.5)", 0.5))
Windows = dict[str, dict[str, float]]


def _loss_outcomes(rows: list[dict[str, Any]], res: dict[str, Windows]) -> None:
    for r in (r for r in rows if r["kind"] == "loss"):
        key = f"{r['text']}#{r['window']}"
        res["loss past L0"].setdefault(key, {})[r["strategy"]] = -r["loss_past_8k"]
        res["in-window loss"].setdefault(key, {})[r["strategy"]] = -r["loss_first_2k"]


def key_token_outcomes(rows: list[dict[str, Any]], res: dict[str, Windows]) -> dict[str, Any]:
    """The key-token outcomes into ``res``; returns the key tokens' counts per threshold and
    window."""
    from posgeom.extension.outcomes import key_token_loss, key_token_mask

    counts: dict[str, Any] = defaultdict(dict)
    for ref in (r for r in rows if r["kind"] == "short"):
        key = f"{ref['text']}#{ref['window']}"
        long = {
            r["strategy"]: np.asarray(r["losses_past_8k"], float)
            for r in rows
            if r["kind"] == "loss" and f"{r['text']}#{r['window']}" == key
        }
        short = np.asarray(ref["losses_past_8k"], float)
        median = np.median(np.asarray(list(long.values())), axis=0)
        for label, lsd in KEY_TOKEN_THRESHOLDS:
            mask = key_token_mask(median, short, lsd_min=lsd)
            counts[label][key] = [int(mask.sum()), int(mask.size)]
            if mask.sum() >= MIN_KEY_TOKENS:
                res[label][key] = {n: -key_token_loss(v, mask) for n, v in long.items()}
    return dict(counts)


def _passkey_outcomes(rows: list[dict[str, Any]], res: dict[str, Windows]) -> int:
    prompts: dict[int, dict[str, tuple[float, float]]] = defaultdict(dict)
    for r in (r for r in rows if r["kind"] == "passkey"):
        prompts[r.get("window", 0)][r["strategy"]] = (r["passkey_logprob"], r["passkey_retrieved"])
    for i, by in sorted(prompts.items()):
        res["passkey log-prob"][f"passkey#{i}"] = {n: v[0] for n, v in by.items()}
    everywhere = set.intersection(*(set(by) for by in prompts.values())) if prompts else set()
    if everywhere:
        res["passkey retrieved"]["all prompts"] = {
            n: float(np.mean([by[n][1] for by in prompts.values()])) for n in sorted(everywhere)
        }
    return len(prompts)


def outcome_windows(out: Path) -> tuple[dict[str, Windows], dict[str, Any]]:
    """``outcome -> window -> {strategy: value}`` (larger = better) and what defines them (key
    tokens per window, passkey prompts)."""
    rows = read_jsonl(out / "heldout.jsonl")
    res: dict[str, Windows] = defaultdict(dict)
    _loss_outcomes(rows, res)
    counts = key_token_outcomes(rows, res)
    prompts = _passkey_outcomes(rows, res)
    return dict(res), {"key_tokens": counts, "passkey_prompts": prompts}


def predictor_values(
    out: Path, window: str, wins: dict[str, dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """``predictor -> strategy -> value`` (larger = predicted better) for one outcome window;
    ``wins``: the split's measured windows (``record.windows(out)[SPLIT]``)."""
    first = sorted(wins)[0]
    key = window if window in wins else first
    values = R.window_predictors(SPLIT, key, wins[key], None, R.plane_weights(out, SPLIT, key))
    if window not in wins:  # a passkey prompt: the in-window loss of both text windows
        values[R.FORWARD] = {
            n: -float(np.mean([w[n]["first_2k"] for w in wins.values() if n in w]))
            for n in wins[first]
        }
    return values


def cell(pairs: list[tuple[dict[str, float], dict[str, float]]], rng: Any) -> dict[str, Any]:
    """One predictor against one outcome over its windows: ``pairs`` of (predictor values,
    outcome values) per window."""
    rhos, boots, places = [], [], []
    for values, outcome in pairs:
        names = [n for n in outcome if n in values and np.isfinite(values[n])]
        v = np.array([values[n] for n in names])
        o = np.array([outcome[n] for n in names])
        pick = max(names, key=lambda n: (values[n], -outcome[n]))
        places.append(1 + int(np.sum(o > outcome[pick])))
        if len(names) < 3 or np.ptp(v) == 0 or np.ptp(o) == 0:
            continue
        rhos.append(float(stats.spearmanr(v, o).statistic))
        idx = rng.integers(0, len(names), (N_BOOT, len(names)))
        boots.append(spearman_rows(v[idx], o[idx]))
    out: dict[str, Any] = {
        "windows": len(pairs),
        "strategies": max((len(o) for _, o in pairs), default=0),
        "pick_place": max(places) if places else None,
    }
    if rhos:
        with warnings.catch_warnings():  # a draw constant in every window has no rho
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_boot = np.nanmean(np.array(boots), axis=0)
        mean_boot = mean_boot[np.isfinite(mean_boot)]
        out["spearman"] = float(np.mean(rhos))
        out["ci95"] = [float(np.quantile(mean_boot, q)) for q in (0.025, 0.975)]
    return out


def matrix(out: Path) -> dict[str, Any]:
    """Every predictor (the record's, with the fallback's indicator kept for its pick only)
    against every outcome of the held-out split."""
    outcomes, defined = outcome_windows(out)
    wins = R.windows(out)[SPLIT]  # read once: every outcome window's predictors come from it
    names = {w for o in outcomes.values() for w in o}
    by_window = {w: predictor_values(out, w, wins) for w in sorted(names)}
    predictors = list(next(iter(by_window.values()))) if by_window else []
    rng = np.random.default_rng(SEED)
    table = {
        p: {
            o: cell([(by_window[w][p], vals) for w, vals in wins.items()], rng)
            for o, wins in outcomes.items()
        }
        for p in predictors
    }
    for c in table.get(R.FALLBACK, {}).values():  # an indicator: its pick, not its rho
        c.pop("spearman", None)
        c.pop("ci95", None)
    return {
        "set": SPLIT,
        "outcomes": {o: sorted(w) for o, w in outcomes.items()},
        **defined,
        "table": table,
    }


def _text(c: dict[str, Any]) -> str:
    place = "" if c.get("pick_place") is None else f"pick {c['pick_place']}."
    if "spearman" not in c:
        return place or "-"
    ci = f" [{c['ci95'][0]:+.2f}, {c['ci95'][1]:+.2f}]" if c.get("ci95") else ""
    return f"{c['spearman']:+.2f}{ci}, {place}"


def markdown(m: dict[str, Any]) -> list[str]:
    """The matrix as a table for ``docs/EXTENSION.md``."""
    outcomes = list(m["outcomes"])
    if not outcomes:
        return []
    counts = "; ".join(
        f"{label}: " + ", ".join(f"{w} {k[0]} of {k[1]}" for w, k in by.items())
        for label, by in m["key_tokens"].items()
    )
    lines = [
        "Every predictor against every outcome on the held-out split (SmolLM2, 8,192 -> 12,288; "
        "mean Spearman over the outcome's windows [95% bootstrap interval over strategies], and "
        "the worst measured place of the predictor's pick; `python -m studies.extension --track "
        "record`, :mod:`studies.extension.outcomes`). Windows: "
        + "; ".join(f"{o} {len(w)}" for o, w in m["outcomes"].items())
        + f". Key tokens: {counts}; passkey prompts: {m['passkey_prompts']}.",
        "",
        "| predictor | " + " | ".join(outcomes) + " |",
        "|---|" + "---:|" * len(outcomes),
    ]
    for p, row in m["table"].items():
        lines.append(f"| {p} | " + " | ".join(_text(row[o]) for o in outcomes) + " |")
    return [*lines, ""]
