"""Issue 23's held-out measurement: SmolLM2-135M at 12,288 tokens on texts the study never used.

The held-out split (written into ``docs/EXTENSION.md`` before any predictor of issue 23 was
designed): window #0 of ``pride_and_prejudice.txt.gz`` (books) and of ``click_core.py.gz`` (Python
source), cut as Track A cuts them (:func:`studies.extension.track_a.window_tokens`: 3% into the text). For each
strategy and window one forward of 12,288 tokens gives every token's loss; the record keeps the
per-256 bin means, the summaries of Track A and the per-token losses past 8,192 (4 decimals), from
which the key-token loss (LongPPL) follows once the short-context losses (kind ``short``: the
unscaled model, context 4,096 + up to 1,023, one record per window) are in. Then three passkey
prompts of 12,288 tokens per strategy (kind ``passkey``, ``window`` the prompt's index in
:data:`PASSKEY_PROMPTS`: keys 9,800-11,600 tokens before the question). Every record is one JSON
line of ``docs/extension/heldout.jsonl``; finished ones are skipped when the job is started again. Progress: ``[done/total]`` lines on stdout.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python -m studies.extension --track heldout``
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from studies.extension import track_a as A

RESULTS = "heldout.jsonl"
WINDOWS = [("pride_and_prejudice", 0), ("click_core", 0)]
A.TEXTS.setdefault("click_core", ("code", "click_core.py.gz"))
SHORT_CONTEXT, SHORT_BLOCK = 4096, 1024
#: passkey prompts (depth of the key, seed of its digits): every key sits more than L0 = 8,192
#: tokens before the question (about 11,000, 9,800 and 11,600 tokens).
PASSKEY_PROMPTS = ((0.1, 0), (0.2, 1), (0.05, 2))
#: measuring order: the reference pair, the fallback and the old default first.
ORDER = (
    "none",
    "yarn x1.5",
    "posgeom fitted (moby_dick, top:30)",
    "linear x2",
    "dynamic ntk x1",
    "yarn x2",
    "ntk theta 204522 (x2)",
    "llama3 x2",
    "ntk theta 500000",
    "linear x1.5",
    "ntk theta 1000000",
    "yarn x4",
    "llama3 x4",
)


def strategies(results: Path) -> dict[str, dict[str, Any]]:
    """Track A's strategies plus YaRN x4 and llama3 x4 (1, 4), and any in ``extra_strategies_heldout.json``."""
    base = A.strategies(results.parent / "track_a.jsonl")
    base["yarn x4"] = {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": A.L0,
        "rope_theta": A.THETA,
    }
    base["llama3 x4"] = {**base["llama3 x2"], "factor": 4.0}
    out = {n: base[n] for n in ORDER}
    extra = results.parent / "extra_strategies_heldout.json"
    if extra.exists():
        out.update(json.loads(extra.read_text()))
    return out


def plan(names: list[str]) -> list[tuple]:
    """Losses strategy by strategy on both windows (short references after the first two), then
    the passkeys."""
    jobs: list[tuple] = []
    for i, name in enumerate(names):
        jobs += [("loss", name, t, w) for t, w in WINDOWS]
        if i == 1:
            jobs += [("short", "none", t, w) for t, w in WINDOWS]
    return jobs + [("passkey", n, "", i) for i in range(len(PASSKEY_PROMPTS)) for n in names]


def _done(results: Path) -> set[tuple]:
    return A.done_keys(
        results, key=lambda r: (r["kind"], r["strategy"], r.get("text", ""), r.get("window", 0))
    )


def _measure(job: tuple, params: dict, model, tok, cache: dict) -> dict[str, Any]:
    from posgeom.extension.outcomes import (
        passkey_ids,
        passkey_outcome,
        short_context_losses,
        token_losses,
    )

    kind, _name, text, index = job
    if kind == "passkey":
        depth, seed = PASSKEY_PROMPTS[index]
        ids, answer = passkey_ids(
            lambda t: tok(t, add_special_tokens=False)["input_ids"],
            A.WINDOW,
            depth=depth,
            seed=seed,
        )
        check = A.set_strategy(model, params, len(ids))
        rec = passkey_outcome(model, ids, answer)
        return {
            "window": index,
            "length": len(ids),
            "depth": depth,
            "seed": seed,
            **rec,
            "check": check,
        }
    if (text, index) not in cache:
        cache[(text, index)] = A.window_tokens(tok, text, index)
    ids, offset = cache[(text, index)]
    check = A.set_strategy(model, params, len(ids))
    base = {"text": text, "domain": A.TEXTS[text][0], "window": index, "offset": offset}
    if kind == "short":
        loss = short_context_losses(model, np.asarray(ids), A.L0, SHORT_CONTEXT, block=SHORT_BLOCK)
        return {
            **base,
            "context": SHORT_CONTEXT,
            "block": SHORT_BLOCK,
            "losses_past_8k": [round(float(v), 4) for v in loss],
        }
    nll = token_losses(model, np.asarray(ids))
    per_pos = np.concatenate([[np.nan], nll])
    bins = [float(np.nanmean(per_pos[b : b + A.BIN])) for b in range(0, len(ids), A.BIN)]
    return {
        **base,
        "tokens": len(ids),
        **A.summary(bins),
        "bin": A.BIN,
        "bin_loss": bins,
        "losses_past_8k": [round(float(v), 4) for v in per_pos[A.L0 :]],
        "check": check,
    }


def run(results: Path, *, threads: int = 1) -> None:
    import torch

    torch.set_num_threads(threads)
    t0 = time.time()
    tok, model = A.load_model()
    print(f"model loaded in {time.time() - t0:.0f} s", flush=True)
    cache: dict = {}
    while True:
        strats = strategies(results)
        done = _done(results)
        jobs = plan(list(strats))
        todo = [j for j in jobs if j not in done]
        if not todo:
            break
        job = todo[0]
        t = time.time()
        rec = _measure(job, strats[job[1]], model, tok, cache)
        rec = {
            "kind": job[0],
            "strategy": job[1],
            "rope_parameters": strats[job[1]],
            **rec,
            "seconds": round(time.time() - t, 1),
        }
        with results.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        main = {
            k: rec[k]
            for k in ("loss_past_8k", "loss_first_2k", "passkey_logprob", "passkey_retrieved")
            if k in rec
        }
        print(
            f"[{len(jobs) - len(todo) + 1}/{len(jobs)}] {job[0]} {job[2]}#{job[3]} {job[1]}: "
            f"{main} {rec['seconds']:.0f} s",
            flush=True,
        )
    print("held-out measurement complete", flush=True)


def merge_records(sources: list[Path], target: Path) -> int:
    """Records of several workers of this track (the same code, other result files) merged into
    ``target``, one per (kind, strategy, text, window), the first kept; returns their number."""
    seen: dict[tuple, str] = {}
    for path in sources:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                seen.setdefault(
                    (r["kind"], r["strategy"], r.get("text", ""), r.get("window", 0)), line
                )
    target.write_text("".join(f"{line}\n" for line in seen.values()))
    return len(seen)
