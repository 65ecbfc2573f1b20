"""``python -m studies.engines``: run SmolLM2-135M in transformers and in llama.cpp
(llama-cpp-python, the optional extra ``posgeom[engines]``) with the settings ``extend --emit``
writes for each strategy, on the same tokens, and compare per-token log-probabilities.

Strategies: those of ``extend`` at ``L0 = 8192 -> L = 12288`` (SmolLM2's trained length, the
target of docs/EXTENSION.md) that llama.cpp can express: ``none``, ``linear x1.5``, ``dynamic x1.5``
(llama.cpp: the static base dynamic NTK reaches at ``L``, a stated difference), ``yarn x1.5 b32/1``
with and without its attention factor. transformers gets the ``transformers5`` keys
(:func:`posgeom.extension.engines.transformers.transformers5`), llama.cpp the
``llama-cpp-python`` keywords (:func:`posgeom.extension.engines.llamacpp.llamacpp_python`), both
from the same :class:`~posgeom.extension.engines.EngineTarget`.

Both read the same Q4_1 weights (transformers dequantises them to float32; llama.cpp computes
with them quantised, an fp16 KV cache and its own kernels): ``none`` gives the floor, the gap the
engines show with no scaling at all. Reported per strategy: mean ``|log p_hf - log p_llama|`` over
the scored tokens (and past ``L0`` when the text reaches it), each engine's perplexity, and the
difference to the floor. ``--tokens`` shortens the text (default 4,096: a 12,288-token forward per
strategy and engine does not fit the CPU time of one session; below ``L0`` the tokens past ``L0``
are not scored, say so when quoting).

Writes ``--out`` (JSON) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

L0, L = 8192, 12288
STRATEGIES = ("none", "linear x1.5", "dynamic x1.5", "yarn x1.5 b32/1", "yarn x1.5 b32/1 no-attn")
TEXT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "long" / "moby_dick.txt.gz"


def targets(names: tuple[str, ...]) -> dict[str, Any]:
    from posgeom.extension.engines import EngineTarget
    from posgeom.extension.model import parse_family_spec
    from posgeom.extension.strategies import enumerate_strategies

    model = parse_family_spec(f"rope:theta=100000,head_dim=64,max_position_embeddings={L0}")
    out = {}
    for s in enumerate_strategies(model, L0, L):
        if s.name in names:
            out[s.name] = EngineTarget(
                s.name, dict(s.rope_parameters), 64, L0, L, kind=s.kind, model_theta=100000.0
            )
    return out


def log_probs(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``(n-1,)`` float64 ``log p(ids[t+1] | ids[:t+1])`` from ``(n, V)`` logits."""
    z = logits[:-1].astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return z[np.arange(z.shape[0]), ids[1:]] - lse


def transformers_log_probs(model: Any, target: Any, ids: np.ndarray) -> np.ndarray:
    import torch

    from posgeom.encodings.rope_extension import rebuild_rotary
    from posgeom.extension.engines.transformers import transformers5

    body = transformers5(target).settings
    model.config.rope_parameters = dict(body["rope_parameters"])
    model.config.max_position_embeddings = body["max_position_embeddings"]
    rebuild_rotary(model, target.strategy)
    with torch.no_grad():
        logits = model(torch.as_tensor(ids[None, :])).logits[0].float().numpy()
    return log_probs(logits, ids)


def llama_log_probs(gguf: Path, target: Any, ids: np.ndarray, threads: int) -> np.ndarray:
    from llama_cpp import Llama

    from posgeom.extension.engines.llamacpp import llamacpp_python

    emitted = llamacpp_python(target)
    if emitted.refused:
        raise SystemExit(f"{target.strategy}: {emitted.refused}")
    kwargs = dict(emitted.settings)
    overrides = kwargs.pop("kv_overrides", None)
    kwargs["kv_overrides"] = {
        k.replace("ARCH.", "llama."): v for k, v in (overrides or {}).items()
    } or None
    llm = Llama(
        model_path=str(gguf),
        logits_all=True,
        n_batch=512,
        n_threads=threads,
        verbose=False,
        **kwargs,
    )
    llm.eval([int(t) for t in ids])
    logits = np.asarray(llm.scores[: ids.size], dtype=np.float32)
    llm.close()
    return log_probs(logits, ids)


def compare(hf: np.ndarray, lc: np.ndarray) -> dict[str, Any]:
    gap = np.abs(hf - lc)
    past = gap[L0:] if gap.size > L0 else None
    return {
        "tokens": int(hf.size + 1),
        "mean_abs_diff": float(gap.mean()),
        "mean_abs_diff_past_L0": None if past is None else float(past.mean()),
        "ppl_transformers": float(np.exp(-hf.mean())),
        "ppl_llamacpp": float(np.exp(-lc.mean())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m studies.engines", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="docs/engines/parity.json")
    args = ap.parse_args(argv)
    import torch

    from studies.extension.track_a import load_model, model_files

    folder, name = model_files()
    tok, model = load_model()
    text = gzip.open(TEXT, "rt", encoding="utf-8").read()
    ids = np.asarray(
        tok(text[: args.tokens * 8], add_special_tokens=False)["input_ids"][: args.tokens]
    )
    torch.set_num_threads(args.threads)
    rows = {}
    for sname, target in targets(tuple(args.strategies.split(","))).items():
        t0 = time.perf_counter()
        hf = transformers_log_probs(model, target, ids)
        t1 = time.perf_counter()
        lc = llama_log_probs(folder / name, target, ids, args.threads)
        t2 = time.perf_counter()
        rows[sname] = {
            **compare(hf, lc),
            "seconds_transformers": t1 - t0,
            "seconds_llamacpp": t2 - t1,
        }
        print(sname, json.dumps(rows[sname]), flush=True)
    floor = rows.get("none", {}).get("mean_abs_diff")
    print(
        "| strategy | mean abs diff (nats) | minus floor | ppl transformers | ppl llama.cpp | s hf / llama |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for sname, r in rows.items():
        over = "" if floor is None else f"{r['mean_abs_diff'] - floor:+.4f}"
        print(
            f"| {sname} | {r['mean_abs_diff']:.4f} | {over} | {r['ppl_transformers']:.3f} | "
            f"{r['ppl_llamacpp']:.3f} | {r['seconds_transformers']:.0f} / {r['seconds_llamacpp']:.0f} |"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from posgeom.io.artifacts import atomic_write_text

    atomic_write_text(
        out, json.dumps({"tokens": int(ids.size), "L0": L0, "L": L, "rows": rows}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
