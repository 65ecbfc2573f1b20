"""``python -m studies.engines``: run SmolLM2-135M in transformers and in llama.cpp
(llama-cpp-python, the optional extra ``posgeom[engines]``) with the settings ``extend --emit``
writes for each strategy, on the same tokens, and compare per-token log-probabilities.

Strategies: those of ``extend`` at ``L0 = 8192 -> L = 12288`` (SmolLM2's trained length, the
target of docs/EXTENSION.md) that llama.cpp can run: ``none``, ``linear x1.5``, ``dynamic x1.5``
(llama.cpp: the static base dynamic NTK reaches at ``L``, a stated difference), ``yarn x1.5
b32/1`` with and without its attention factor, and ``llama3 x1.5 1/4`` (llama.cpp reads llama3
from the GGUF tensor ``rope_freqs`` only: the study writes a copy of the GGUF carrying it, as
``convert_hf_to_gguf.py`` would). transformers gets the ``transformers5`` keys, llama.cpp the
``llama-cpp-python`` keywords, both from one :class:`~posgeom.extension.engines.EngineTarget`
(:mod:`studies.engines.forward`).

Both read the same Q4_1 weights (transformers dequantises them to float32; llama.cpp computes
with them quantised, an fp16 KV cache and its own kernels). The floor is ``none``'s mean
``|log p_hf - log p_llama|`` over the tokens before ``L0`` (the short-context difference: by
causality the same as a run on the first ``L0`` tokens). Reported per strategy: the mean
absolute difference before and past ``L0`` (tokens at positions ``>= L0``), each engine's
perplexity (all tokens and past ``L0``), and each engine's seconds for the forward.

``--cache DIR`` keeps each engine's log-probabilities per strategy (``.npy``) and its seconds
(``.json``): a killed run resumes where it stopped. ``--vllm DIR`` adds vLLM's rows from the
files ``studies.engines.vllm_run`` wrote (run in vLLM's own environment). Writes ``--out`` (JSON) and prints the
markdown table of docs/ENGINES.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

L0, L = 8192, 12288
STRATEGIES = (
    "none",
    "yarn x1.5 b32/1",
    "yarn x1.5 b32/1 no-attn",
    "linear x1.5",
    "dynamic x1.5",
    "llama3 x1.5 1/4",
)
TEXT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "long" / "moby_dick.txt.gz"


def targets(names: tuple[str, ...], trained: int = L0, target: int = L) -> dict[str, Any]:
    """The :class:`EngineTarget` of each named strategy (in ``names``' order), extending a
    trained length ``trained`` to ``target`` (SmolLM2's 8,192 -> 12,288 unless told; a shorter
    pair is the reduced-``L0`` check of vLLM: the same config read past a declared ``L0``
    without a 12,288-token forward)."""
    from posgeom.extension.engines import EngineTarget
    from posgeom.extension.model import parse_family_spec
    from posgeom.extension.strategies import enumerate_strategies

    spec = f"rope:theta=100000,head_dim=64,max_position_embeddings={trained}"
    found = {
        s.name: EngineTarget(
            s.name, dict(s.rope_parameters), 64, trained, target, kind=s.kind, model_theta=1e5
        )
        for s in enumerate_strategies(parse_family_spec(spec), trained, target)
    }
    unknown = [n for n in names if n not in found]
    if unknown:
        raise SystemExit(f"unknown strategies {unknown}; use some of {sorted(found)}")
    return {n: found[n] for n in names}


def text_ids(tokens: int) -> np.ndarray:
    """The first ``tokens`` token ids of Moby-Dick in SmolLM2's tokenizer (no special tokens)."""
    from transformers import AutoTokenizer

    from studies.extension.track_a import model_files

    folder, name = model_files()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    text = gzip.open(TEXT, "rt", encoding="utf-8").read()
    return np.asarray(tok(text[: tokens * 8], add_special_tokens=False)["input_ids"][:tokens])


def compare(hf: np.ndarray, lc: np.ndarray) -> dict[str, Any]:
    """The gap and perplexities; ``hf[j-1]`` is the log-probability of the token at position
    ``j``, so "past L0" is ``[L0 - 1:]``."""
    gap = np.abs(hf - lc)
    cut = L0 - 1
    past = hf.size > cut

    def ppl(x: np.ndarray) -> float:
        return float(np.exp(-x.mean()))

    return {
        "tokens": int(hf.size + 1),
        "mean_abs_diff": float(gap.mean()),
        "mean_abs_diff_before_L0": float(gap[:cut].mean()),
        "mean_abs_diff_past_L0": float(gap[cut:].mean()) if past else None,
        "ppl_transformers": ppl(hf),
        "ppl_llamacpp": ppl(lc),
        "ppl_transformers_past_L0": ppl(hf[cut:]) if past else None,
        "ppl_llamacpp_past_L0": ppl(lc[cut:]) if past else None,
    }


def matched_floor(floor_hf: np.ndarray, floor_gap: np.ndarray, hf: np.ndarray) -> float:
    """The floor at the same difficulty: the mean, over ``hf``'s tokens, of ``none``'s mean gap
    before ``L0`` among tokens of the same transformers surprisal (20 quantile bins of
    ``-floor_hf``). The engines' kernel and rounding differences move a less certain prediction
    more: a strategy whose text is harder has a larger gap at the same reading of the config."""
    edges = np.quantile(-floor_hf, np.linspace(0, 1, 21)[1:-1])
    per_bin = np.array([floor_gap[np.digitize(-floor_hf, edges) == b].mean() for b in range(20)])
    return float(per_bin[np.digitize(-hf, edges)].mean())


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


class Runner:
    """One engine's forward per strategy, cached under ``cache`` (or not cached)."""

    def __init__(self, ids: np.ndarray, threads: int, cache: Path | None) -> None:
        from studies.extension.track_a import model_files

        self.ids, self.threads, self.cache = ids, threads, cache
        folder, name = model_files()
        self.gguf = folder / name
        self._model: Any = None

    def _hf(self, target: Any) -> np.ndarray:
        from studies.engines.forward import transformers_log_probs

        if self._model is None:
            import torch

            from studies.extension.track_a import load_model

            torch.set_num_threads(self.threads)
            self._model = load_model()[1]
        return transformers_log_probs(self._model, target, self.ids)

    def _llama(self, target: Any) -> np.ndarray:
        from studies.engines.forward import llama_log_probs, rope_freqs_gguf

        gguf = self.gguf
        if target.rope_type == "llama3":
            folder = self.cache or Path(os.environ.get("TMPDIR", "/tmp"))
            gguf = rope_freqs_gguf(gguf, target, folder / f"smollm2-{_slug(target.strategy)}.gguf")
        return llama_log_probs(gguf, target, self.ids, self.threads)

    def run(self, engine: str, target: Any) -> tuple[np.ndarray, float]:
        """``(log_probs, seconds)`` of ``engine`` ("transformers" or "llamacpp")."""
        stem = None
        if self.cache is not None:
            stem = self.cache / f"{self.ids.size}" / engine / _slug(target.strategy)
            if target.trained_length != L0:
                stem = stem.with_name(f"{stem.name}_L0_{target.trained_length}")
            if stem.with_suffix(".json").exists():
                seconds = json.loads(stem.with_suffix(".json").read_text())["seconds"]
                return np.load(stem.with_suffix(".npy"), allow_pickle=False), seconds
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        lp = self._hf(target) if engine == "transformers" else self._llama(target)
        seconds = time.perf_counter() - t0
        print(
            f"{time.strftime('%H:%M:%S')} {target.strategy} {engine}: {seconds:.0f} s "
            f"(load {load:.1f} -> {os.getloadavg()[0]:.1f})",
            flush=True,
        )
        if stem is not None:
            from posgeom.io._atomic import atomic_path, atomic_write_text

            with atomic_path(stem.with_suffix(".npy")) as tmp, open(tmp, "wb") as fh:
                np.save(fh, lp, allow_pickle=False)
            meta = {"seconds": seconds, "load_before": load, "load_after": os.getloadavg()[0]}
            atomic_write_text(stem.with_suffix(".json"), json.dumps(meta) + "\n")
        return lp, seconds


def table(rows: dict[str, Any]) -> str:
    """The markdown table of docs/ENGINES.md."""
    floor = rows.get("none", {}).get("mean_abs_diff_before_L0")

    def num(x: float | None, fmt: str) -> str:
        return "n/a" if x is None else format(x, fmt)

    lines = [
        "| strategy | gap before L0 | gap past L0 | past L0 minus floor | floor at the same "
        "surprisal, past L0 | ppl transformers (past L0) | ppl llama.cpp (past L0) | "
        "seconds transformers / llama.cpp |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        past = r["mean_abs_diff_past_L0"]
        over = None if past is None or floor is None else past - floor
        lines.append(
            f"| {name} | {r['mean_abs_diff_before_L0']:.4f} | {num(past, '.4f')} | "
            f"{num(over, '+.4f')} | {num(r.get('matched_floor_past_L0'), '.4f')} | "
            f"{r['ppl_transformers']:.3f} ({num(r['ppl_transformers_past_L0'], '.3f')}) | "
            f"{r['ppl_llamacpp']:.3f} ({num(r['ppl_llamacpp_past_L0'], '.3f')}) | "
            f"{r['seconds_transformers']:.0f} / {r['seconds_llamacpp']:.0f} |"
        )
    return "\n".join(lines)


def vllm_rows(folder: Path, runner: Runner, names: tuple[str, ...]) -> dict[str, Any]:
    """vLLM's log-probabilities (``studies.engines.vllm_run``'s files in ``folder``, float32
    weights) against transformers' on the same first tokens, at the trained and target lengths
    the files were run at (causal: the first ``n`` entries of this run's forward; for dynamic NTK
    that is the base transformers reaches at this run's length, the static base ``vllm.sh``
    writes). Past ``L0``: the tokens at positions ``>= L0`` when the run reached them."""
    out = {}
    for name in names:
        npy = folder / f"{_slug(name)}.npy"
        if not npy.exists():
            continue
        lv = np.load(npy, allow_pickle=False)
        meta = json.loads(npy.with_suffix(".json").read_text())
        trained, length = meta.get("L0", L0), meta.get("L", L)
        target = targets((name,), trained, length)[name]
        if length < runner.ids.size:  # dynamic NTK reads the forward length: run at L, as vllm.sh
            runner = Runner(runner.ids[:length], runner.threads, runner.cache)
        hf = runner.run("transformers", target)[0][: lv.size]
        gap, cut = np.abs(hf - lv), trained - 1
        out[name] = {
            "strategy": name,
            "tokens": int(lv.size + 1),
            "L0": trained,
            "L": length,
            "vllm": meta["vllm"],
            "mean_abs_diff": float(gap.mean()),
            "max_abs_diff": float(gap.max()),
            "mean_abs_diff_past_L0": float(gap[cut:].mean()) if lv.size > cut else None,
            "ppl_transformers": float(np.exp(-hf.mean())),
            "ppl_vllm": float(np.exp(-lv.mean())),
            "seconds_vllm": meta["seconds"],
        }
    return out


def vllm_table(rows: dict[str, Any]) -> str:
    """vLLM's table of docs/ENGINES.md."""
    lines = [
        "| strategy | L0 -> L | tokens | mean abs diff (max) | past L0 | ppl transformers | "
        "ppl vLLM | seconds vLLM |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        past = r.get("mean_abs_diff_past_L0")
        lines.append(
            f"| {r.get('strategy', name)} | {r.get('L0', L0)} -> {r.get('L', L)} | {r['tokens']} | "
            f"{r['mean_abs_diff']:.2e} ({r['max_abs_diff']:.1e}) | "
            f"{'-' if past is None else f'{past:.2e}'} | "
            f"{r['ppl_transformers']:.4f} | {r['ppl_vllm']:.4f} | {r['seconds_vllm']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m studies.engines", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--tokens", type=int, default=L)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", default=None, help="folder keeping each forward (resumes)")
    ap.add_argument(
        "--vllm", default=None, help="folders (comma-separated) of studies.engines.vllm_run's files"
    )
    ap.add_argument("--out", default="docs/engines/parity.json")
    args = ap.parse_args(argv)
    ids = text_ids(args.tokens)
    runner = Runner(ids, args.threads, Path(args.cache) if args.cache else None)
    rows: dict[str, Any] = {}
    floor = None
    for sname, target in targets(tuple(args.strategies.split(","))).items():
        hf, t_hf = runner.run("transformers", target)
        lc, t_lc = runner.run("llamacpp", target)
        rows[sname] = {**compare(hf, lc), "seconds_transformers": t_hf, "seconds_llamacpp": t_lc}
        if sname == "none":
            floor = (hf[: L0 - 1], np.abs(hf - lc)[: L0 - 1])
        if floor is not None:
            rows[sname]["matched_floor_before_L0"] = matched_floor(*floor, hf[: L0 - 1])
            if hf.size > L0 - 1:
                rows[sname]["matched_floor_past_L0"] = matched_floor(*floor, hf[L0 - 1 :])
    print(table(rows))
    body = {"tokens": int(ids.size), "L0": L0, "L": L, "threads": args.threads, "rows": rows}
    if args.vllm:
        chosen = tuple(args.strategies.split(","))
        body["vllm"] = {}
        for folder in args.vllm.split(","):
            rows_v = vllm_rows(Path(folder), runner, chosen)
            body["vllm"].update({f"{n} ({r['L0']} -> {r['L']})": r for n, r in rows_v.items()})
        print(vllm_table(body["vllm"]))
    from posgeom.io._atomic import atomic_write_text

    atomic_write_text(Path(args.out), json.dumps(body, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
