"""posgeom's scores of the measured strategies (:func:`posgeom.extension.score_strategies`).

Track A: the corpus is the whole text a window comes from, tokenised with SmolLM2's tokenizer
(cached as ``.npy`` under ``--work``), model ``rope:theta=100000,head_dim=64`` trained at 8,192,
target 12,288; token classes ``top:30`` (the tool's default) and ``embedding:64`` (k-means of
SmolLM2's dequantised input embeddings, which keep rarer, topical tokens apart). One call with
``strategies=None`` gives the lag geometry and posgeom's ``fitted`` per-plane factors; a second
call on that same geometry scores the measured strategies and the fitted one. Track B: the same
for the tiny RoPE decoder (``rope:theta=10000,head_dim=32``, 128 -> 256/512/1024) on the
training text's bytes. Writes ``scores_a.json`` / ``scores_b.json`` beside the results.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

KEYS = ("scale_optimal", "paper", "violation_rate")
A_TEXTS = ("moby_dick", "stacks_algebra")
A_SPEC = "rope:theta=100000,head_dim=64,max_position_embeddings=8192"


def token_ids(text: str, work: Path) -> np.ndarray:
    from studies.extension import track_a as A

    cache = work / f"tokens_{text}.npy"
    if cache.exists():
        return np.load(cache)
    from transformers import AutoTokenizer

    folder, name = A.model_files()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    raw = gzip.open(A.DATA / A.TEXTS[text][1], "rt", encoding="utf-8").read()
    ids = np.asarray(tok(raw)["input_ids"], dtype=np.int64)
    work.mkdir(parents=True, exist_ok=True)
    np.save(cache, ids)
    return ids


def smollm2_embeddings() -> np.ndarray:
    """SmolLM2's input embeddings ``(V, 576)``, dequantised from the GGUF file, float64."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    from studies.extension import track_a as A

    folder, name = A.model_files()
    for t in GGUFReader(folder / name).tensors:
        if t.name == "token_embd.weight":
            return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
    raise SystemExit("token_embd.weight not in the GGUF file")


def _rows(result: Any) -> dict[str, dict[str, float]]:
    out = {}
    for row in result.rows:
        s = {k: float(row.scores[k]) for k in KEYS if k in row.scores}
        for k in KEYS:
            if f"{k}_ci" in row.scores:
                s[f"{k}_ci"] = [float(x) for x in row.scores[f"{k}_ci"]]
        s.update({k: float(v) for k, v in row.extras.items() if isinstance(v, (int, float))})
        out[row.name] = s
    return out


def score_set(
    spec: str, corpus: Any, l0: int, target: int, strategies: dict, *, label: str, **kw: Any
) -> dict[str, Any]:
    """Scores of ``strategies`` plus posgeom's fitted one (named ``posgeom fitted (label)``)."""
    from posgeom.extension import score_strategies

    full = score_strategies(spec, corpus, l0, target, **kw)
    fitted = full.strategy("fitted").strategy.rope_parameters
    mine = {**strategies, f"posgeom fitted ({label})": fitted}
    kw.pop("classes", None), kw.pop("embeddings", None)
    res = score_strategies(spec, full.lag_geometry, l0, target, strategies=mine, **kw)
    dep = full.lag_geometry.dependence
    return {
        "fitted_rope_parameters": fitted,
        "tool_ranking": [r.name for r in full.rows],
        "longest_signal_lag": int(dep.longest_signal_lag) if dep.longest_signal_lag else None,
        "scores": _rows(res),
    }


def score_text(
    text: str, work: Path, strategies: dict, *, classes: str, **kw: Any
) -> dict[str, Any]:
    """:func:`score_set` of SmolLM2 (Track A's spec, 8k -> 12k) on one whole text."""
    from studies.extension import track_a as A

    label = f"{text}, {classes}"
    ids = [token_ids(text, work)]
    return score_set(A_SPEC, ids, A.L0, A.WINDOW, strategies, label=label, classes=classes, **kw)


def run_a(out: Path, work: Path, *, replicates: int = 10) -> None:
    from studies.extension import track_a as A

    path = out / "scores_a.json"
    done = json.loads(path.read_text()) if path.exists() else {}
    strategies = A.base_strategies()
    emb = None
    for text in A_TEXTS:
        for classes in ("top:30", "embedding:64"):
            key = f"{text} {classes}"
            if key in done:
                continue
            if classes.startswith("embedding") and emb is None:
                emb = smollm2_embeddings()
            done[key] = score_text(
                text,
                work,
                strategies,
                classes=classes,
                embeddings=emb if classes.startswith("embedding") else None,
                replicates=replicates,
            )
            path.write_text(json.dumps(done, indent=1) + "\n")
            print(f"scored {key}: tool's best {done[key]['tool_ranking'][:3]}", flush=True)


#: every text Track A measures windows of: scored on its own lag geometry (``top:30``), with the
#: measured fitted strategy (fitted to Moby-Dick) among the strategies, so that each window can be
#: scored by its own text's geometry (``scores_a_texts.json``)
A_WINDOW_TEXTS = ("moby_dick", "war_and_peace", "stacks_algebra", "stacks_morphisms")
MEASURED_FIT = "posgeom fitted (moby_dick, top:30)"


def run_a_texts(out: Path, work: Path, *, replicates: int = 10) -> None:
    """``scores_a_texts.json``: text -> the same entry as :func:`score_set`'s, for the measured
    strategies (:func:`studies.extension.track_a.base_strategies` and the measured fit) on that text."""
    from studies.extension import track_a as A

    fit = json.loads((out / "scores_a.json").read_text())["moby_dick top:30"]
    strategies = {**A.base_strategies(), MEASURED_FIT: fit["fitted_rope_parameters"]}
    path = out / "scores_a_texts.json"
    done = json.loads(path.read_text()) if path.exists() else {}
    for text in A_WINDOW_TEXTS:
        if text in done:
            continue
        done[text] = score_text(text, work, strategies, classes="top:30", replicates=replicates)
        path.write_text(json.dumps(done, indent=1) + "\n")
        print(f"scored {text} top:30 (own geometry): {done[text]['tool_ranking'][:3]}", flush=True)


def run_b(out: Path, *, replicates: int = 10) -> None:
    from studies.extension import track_b as B

    path = out / "scores_b.json"
    done = json.loads(path.read_text()) if path.exists() else {}
    ids = [B.split_train()[0].astype(np.int64)]
    spec = f"rope:theta=10000,head_dim={B.D // B.HEADS},max_position_embeddings={B.L0}"
    for length in B.LENGTHS[1:]:
        key = f"war_and_peace L={length}"
        if key in done:
            continue
        strategies = {
            n: {"rope_type": "default", **(p or {}), "rope_theta": 10000.0}
            for n, p in B.rope_strategies(length / B.L0).items()
            if n != "posgeom fitted"  # added by score_set, from this very call
        }
        for p in strategies.values():
            if "type" in p:
                p["rope_type"] = p.pop("type")
        done[key] = score_set(
            spec, ids, B.L0, length, strategies, label=f"L={length}", replicates=replicates
        )
        path.write_text(json.dumps(done, indent=1) + "\n")
        print(f"scored {key}: tool's best {done[key]['tool_ranking'][:3]}", flush=True)
