"""Issue 23: the validation record of every extension predictor, the data ``posgeom extend`` reads.

Windows (SmolLM2-135M-Instruct, 8,192 -> 12,288, loss past 8,192):

- ``study``: Track A's five windows (``track_a.jsonl``), on which the model-aware score's few
  choices were made;
- ``held-out (issue)``: the two windows of issue 23's table (``issue23_table.json``: a novel and
  a LaTeX chapter outside ``../shared``; perplexities read as ``ln``);
- ``held-out (split)``: the split written down before the predictor (``heldout.jsonl``: Pride and
  Prejudice #0, click's core.py #0), each window with the strategies measured so far.

Predictors: :func:`posgeom.extension.predictors.predictor_values` (model-aware with SmolLM2's plane
use from its q/k weights, ``plane_use_smollm2.json``; the rules of thumb), the corpus lag stress
(``scores_a_texts.json``, study windows only: the other texts were not scored) and its rank-sum
with the model-aware score, and the in-window loss (first 2,047 tokens: needs forwards). Per
window: Spearman of the value with minus the loss (95% bootstrap interval, 2,000 resamples of the
strategies), the pick, its measured place and its loss against ``none``. Per set: the mean rho
(interval from resampling every window's strategies), top-2 hits, picks worse than ``none``.

A predictor is **validated** when it needs no forward and its pick was in the measured top 2 and
below ``none`` on every window of every set; ``posgeom extend`` ranks by the validated predictor
with the highest held-out mean rho, and otherwise recommends the fallback (YaRN with factor
``L / L0``: the mildest YaRN that covers the target), whose record is kept the same way. Writes
``docs/extension/record.json`` and the package's copy ``src/posgeom/extension/record.json``.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
N_BOOT, SEED = 2000, 0
SPEC = "rope:theta=100000,head_dim=64,max_position_embeddings=8192"
TARGET = 12_288
FALLBACK = "fallback: yarn x L/L0"
FORWARD = "in-window loss (first 2k; forwards)"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def windows(out: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """set -> window -> {strategy: {params, loss, first_2k}}."""
    sets: dict[str, dict] = {"study": defaultdict(dict), "held-out (split)": defaultdict(dict)}
    for r in _jsonl(out / "track_a.jsonl"):
        key = f"{r['text']}#{r['window']}"
        sets["study"][key][r["strategy"]] = {
            "params": r["rope_parameters"], "loss": r["loss_past_8k"],
            "first_2k": r["loss_first_2k"],
        }  # fmt: skip
    for r in _jsonl(out / "heldout.jsonl"):
        if r["kind"] == "loss":
            sets["held-out (split)"][f"{r['text']}#{r['window']}"][r["strategy"]] = {
                "params": r["rope_parameters"], "loss": r["loss_past_8k"],
                "first_2k": r["loss_first_2k"],
            }  # fmt: skip
    table = json.loads((out / "issue23_table.json").read_text())
    sets["held-out (issue)"] = {
        w: {
            n: {"params": s["rope_parameters"], "loss": math.log(s["perplexity_past_8k"][w])}
            for n, s in table["strategies"].items()
        }
        for w in table["windows"]
    }
    return {k: dict(v) for k, v in sets.items()}


def plane_weights(out: Path) -> np.ndarray:
    return np.asarray(json.loads((out / "plane_use_smollm2.json").read_text())["weights"])


def window_predictors(
    measured: dict[str, dict], corpus: dict[str, float] | None, use: np.ndarray
) -> dict[str, dict[str, float]]:
    """predictor -> strategy -> value (larger = predicted better) on one window."""
    from posgeom.extension import parse_family_spec
    from posgeom.extension.predictors import predictor_values, with_corpus
    from posgeom.extension.scoring import strategy_from_parameters

    model = parse_family_spec(SPEC)
    strategies = [strategy_from_parameters(n, v["params"]) for n, v in measured.items()]
    values = predictor_values(model, strategies, TARGET, use)
    if corpus:
        have = [n for n in measured if n in corpus]
        part = {k: {n: v[n] for n in have} for k, v in values.items()}
        corpus_values = with_corpus(part, {n: corpus[n] for n in have})
        for key in ("lag stress (corpus)", "corpus + model"):
            values[key] = corpus_values[key]
    if all("first_2k" in v for v in measured.values()):
        values[FORWARD] = {n: -v["first_2k"] for n, v in measured.items()}
    s = TARGET / 8192
    values[FALLBACK] = {
        n: float(
            v["params"].get("rope_type") == "yarn"
            and abs(float(v["params"].get("factor", 0)) - s) < 1e-9
            and v["params"].get("attention_factor") is None
        )
        for n, v in measured.items()
    }
    return values


def agreement(
    pred: str, values: dict[str, float], measured: dict[str, dict], rng: Any
) -> dict[str, Any]:
    """rho, its interval, the pick, its place and its loss against none on one window."""
    names = [n for n in values if n in measured and np.isfinite(values[n])]
    v = np.array([values[n] for n in names])
    loss = np.array([measured[n]["loss"] for n in names])
    all_loss = np.array(sorted(x["loss"] for x in measured.values()))
    picks = [names[i] for i in np.flatnonzero(v == v.max())]
    places = [int(np.searchsorted(all_loss, measured[p]["loss"], side="right")) for p in picks]
    none = measured.get("none", {}).get("loss")
    worst = max(picks, key=lambda p: measured[p]["loss"])
    out: dict[str, Any] = {
        "strategies": len(names),
        "pick": picks,
        "pick_place": max(places),
        "pick_top2": max(places) <= 2,
        "pick_loss_minus_none": None if none is None else measured[worst]["loss"] - none,
        "spearman": None,
        "ci95": None,
    }
    if pred != FALLBACK and len(names) >= 3 and np.ptp(v) > 0 and np.ptp(loss) > 0:
        out["spearman"] = float(stats.spearmanr(v, -loss).statistic)
        from _extension_analysis import _spearman_rows

        idx = rng.integers(0, len(names), (N_BOOT, len(names)))
        boot = _spearman_rows(v[idx], -loss[idx])
        boot = boot[np.isfinite(boot)]
        out["ci95"] = [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]
        out["_boot"] = boot
    return out


def summarise(per: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Mean rho over the windows (interval: the per-window bootstrap draws averaged), top-2
    hits and picks worse than none."""
    rhos = [w["spearman"] for w in per.values() if w["spearman"] is not None]
    boots = [w.pop("_boot") for w in per.values() if "_boot" in w]
    n = min((b.size for b in boots), default=0)
    mean_boot = np.mean([b[:n] for b in boots], axis=0) if boots and n else np.array([])
    worse = [k for k, w in per.items() if (w["pick_loss_minus_none"] or 0.0) > 0]
    return {
        "windows": len(per),
        "mean_spearman": float(np.mean(rhos)) if rhos else None,
        "ci95": [float(np.quantile(mean_boot, q)) for q in (0.025, 0.975)]
        if mean_boot.size
        else None,
        "top2_hits": sum(w["pick_top2"] for w in per.values()),
        "worse_than_none": worse,
        "per_window": per,
    }


def build(out: Path) -> dict[str, Any]:
    """The record (module docstring)."""
    sets = windows(out)
    use = plane_weights(out)
    texts = json.loads((out / "scores_a_texts.json").read_text())
    rng = np.random.default_rng(SEED)
    record: dict[str, dict] = defaultdict(dict)
    for set_name, wins in sets.items():
        per_pred: dict[str, dict] = defaultdict(dict)
        for key, measured in wins.items():
            if len(measured) < 2 or "none" not in measured:
                continue
            text = key.split("#")[0]
            corpus = None
            if set_name == "study" and text in texts:
                corpus = {n: v["scale_optimal"] for n, v in texts[text]["scores"].items()}
            for pred, values in window_predictors(measured, corpus, use).items():
                per_pred[pred][key] = agreement(pred, values, measured, rng)
        for pred, per in per_pred.items():
            record[pred][set_name] = summarise(per)
    return finish(dict(record), sets)


def finish(record: dict[str, dict], sets: dict) -> dict[str, Any]:
    """Mark the validated predictors and choose the default."""
    predictors = {}
    for pred, by_set in record.items():
        hits = all(
            s["top2_hits"] == s["windows"] and not s["worse_than_none"] for s in by_set.values()
        )
        full = len(by_set) == len(sets)
        predictors[pred] = {
            "needs_forward": pred == FORWARD,
            "validated": bool(hits and full and pred != FORWARD),
            "sets": by_set,
        }
    ok = [p for p, v in predictors.items() if v["validated"] and p != FALLBACK]

    def held_rho(p: str) -> float:
        r = [predictors[p]["sets"].get(k, {}).get("mean_spearman") for k in sets if k != "study"]
        return float(np.mean([x for x in r if x is not None] or [-1.0]))

    default = max(ok, key=held_rho) if ok else None
    return {
        "kind": "posgeom_extension_record",
        "produced_by": "python benchmarks/bench_extension.py --track record",
        "families": {
            "rope": {
                "models": [
                    "SmolLM2-135M-Instruct (rope_theta 100,000, head_dim 64), 8,192 -> 12,288"
                ],
                "windows": {k: sorted(w) for k, w in sets.items()},
                "outcome": "mean next-token loss at positions 8,192-12,287",
                "criterion": "validated: needs no forward, pick in the measured top 2 and below "
                "none on every window of every set",
                "default_predictor": default,
                "fallback": FALLBACK,
                "fallback_validated": predictors.get(FALLBACK, {}).get("validated", False),
                "predictors": predictors,
            }
        },
    }


def run(out: Path) -> dict[str, Any]:
    record = build(out)
    text = json.dumps(record, indent=1) + "\n"
    (out / "record.json").write_text(text)
    (ROOT / "src" / "posgeom" / "extension" / "record.json").write_text(text)
    return record
