"""Track B of the context-extension study: byte-level decoders trained from scratch at length 128.

Model: :class:`posgeom.nn.decoder.CausalDecoder`: 2 pre-LN blocks of
:class:`posgeom.nn.encoder.EncoderLayer` (d = 64, 2 heads of 32, FFN 256, no dropout) under a
causal mask, byte vocabulary (256), tied nothing, one linear head; saved as
``<encoding>_seed<seed>.safetensors`` (:func:`posgeom.nn.decoder.save_decoder`, tokenizer
``"bytes"``), which ``posgeom extend`` reads (older ``.pt`` state dicts are converted on load).
Position modules: every registered family with a decoder module (:func:`encodings`), today sinusoidal, learned (N(0, 0.02^2)), RoPE (base 10,000),
ALiBi (causal), T5 buckets (unidirectional, 32 buckets, max distance 128) and NoPE. Trained on the
first 90% of War and Peace (UTF-8 bytes), batch 8 x 128, AdamW lr 2e-3 (50 warm-up steps),
``STEPS`` (300) steps, seeds 0 and 1, one thread.

Tested at 128, 256, 512 and 1,024 (1x ... 8x) on 8 windows of 1,024 bytes from each of the last
10% of War and Peace (in-domain), Moby-Dick (another book) and the Stacks algebra chapter
(LaTeX); a window of length L is the first L bytes of each. Test-time strategies:
learned tables clamped (every position >= 128 reads row 127), linearly interpolated
(:class:`~posgeom.nn.position.LearnedPositionEmbedding` ``beyond="interpolate"``), or
Gower-extended (:func:`posgeom.extension.extend_table` ``"gower-table"``: the table's own MDS, the
new rows' squared distances taken from the table's mean squared distance at each lag, the 16
largest trained lags for lags >= 128); sinusoidal computed or interpolated; RoPE none, linear, static NTK,
YaRN (with and without its attention factor), llama3 and a LongRoPE ramp, each at factor L / 128,
and posgeom's fitted per-plane factors at L (``scores_b.json``, ``--track scores``; skipped until
scored, a second ``--track b`` run fills them in); every other family as it is (:func:`strategies`).
One JSONL record per (encoding, strategy, seed, text, L) with the mean loss per 64-position bin.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from studies._common import DATA as SHARED_DATA
from studies._common import DOCS
from studies.extension.common import bin_mean

L0, D, HEADS, LAYERS, BATCH, LR = 128, 64, 2, 2, 8, 2e-3
STEPS = int(os.environ.get("B_STEPS", 300))
LENGTHS, N_WINDOWS, BIN = (128, 256, 512, 1024), 8, 64
SEEDS = (0, 1)
DATA = SHARED_DATA / "long"
TEXTS = {
    "war_and_peace_tail": "war_and_peace.txt.gz",
    "moby_dick": "moby_dick.txt.gz",
    "stacks_algebra": "stacks_algebra.tex.gz",
}


def encodings() -> tuple[str, ...]:
    """The position families trained and measured: every registered family with a posgeom decoder
    position module (:func:`posgeom.nn.decoder.decoder_positions`, the registry read when called),
    so a family file dropped into :mod:`posgeom.encodings` is trained here with no change."""
    from posgeom.nn.decoder import decoder_positions

    return tuple(decoder_positions())


def text_bytes(name: str) -> np.ndarray:
    raw = gzip.open(DATA / name, "rb").read()
    return np.frombuffer(raw, dtype=np.uint8)


def split_train() -> tuple[np.ndarray, np.ndarray]:
    data = text_bytes("war_and_peace.txt.gz")
    cut = int(0.9 * len(data))
    return data[:cut], data[cut:]


def eval_windows(name: str) -> np.ndarray:
    """``(N_WINDOWS, 1024)`` bytes at evenly spaced offsets after the first 3% of the text."""
    data = split_train()[1] if name == "war_and_peace_tail" else text_bytes(TEXTS[name])
    start, n = int(0.03 * len(data)), max(LENGTHS)
    offsets = np.linspace(start, len(data) - n - 1, N_WINDOWS).astype(int)
    return np.stack([data[o : o + n] for o in offsets]).astype(np.int64)


# ------------------------------------------------------------------------------ model
SCORES = DOCS / "extension" / "scores_b.json"


def fitted_scaling(length: int) -> dict[str, Any] | None:
    """posgeom's fitted factors at ``length`` (``--track scores``) as a ``RotaryEmbedding``
    scaling, or ``None`` when they are not scored yet."""
    if not SCORES.exists():
        return None
    entry = json.loads(SCORES.read_text()).get(f"war_and_peace L={length}")
    if entry is None:
        return None
    p = dict(entry["fitted_rope_parameters"])
    p.pop("rope_theta")
    return _long_only({"type": p.pop("rope_type"), **p})


def _long_only(scaling: dict[str, Any]) -> dict[str, Any]:
    """A LongRoPE scaling whose short factors are its long ones: ``RotaryEmbedding`` has no
    sequence length, so it would always pick ``short_factor``; the models only run it past L0."""
    return {**scaling, "short_factor": list(scaling["long_factor"])}


def rope_strategies(factor: float) -> dict[str, dict[str, Any] | None]:
    """posgeom ``RotaryEmbedding`` scalings at ``factor = L / L0`` (``None``: plain RoPE)."""
    if factor <= 1:
        return {name: None for name in _ROPE_NAMES}
    orig = {"original_max_position_embeddings": L0}
    half = D // HEADS // 2
    return {
        "posgeom fitted": fitted_scaling(round(factor * L0)),
        "none": None,
        "linear": {"type": "linear", "factor": factor},
        "ntk": {"type": "ntk", "factor": factor},
        "yarn": {"type": "yarn", "factor": factor, **orig},
        "yarn no attn": {"type": "yarn", "factor": factor, "attention_factor": 1.0, **orig},
        "llama3": {
            "type": "llama3",
            "factor": factor,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            **orig,
        },
        "longrope ramp": _long_only(
            {
                "type": "longrope",
                "factor": factor,
                "long_factor": [float(factor ** (k / (half - 1))) for k in range(half)],
                **orig,
            }
        ),
    }


_ROPE_NAMES = (
    "none",
    "linear",
    "ntk",
    "yarn",
    "yarn no attn",
    "llama3",
    "longrope ramp",
    "posgeom fitted",
)
#: every family the study has no strategies of runs as it is
AS_IS = ("as is",)


def strategies(encoding: str) -> tuple[str, ...]:
    """The test-time strategies of ``encoding``: the study's own for the families it is about
    (:data:`STUDIED`: RoPE, the learned table, the sinusoidal table), ``("as is",)`` for any
    other family (ALiBi, T5, NoPE, a new one)."""
    return STUDIED[encoding][0] if encoding in STUDIED else AS_IS


def config(encoding: str) -> Any:
    from posgeom.nn.decoder import DecoderConfig

    return DecoderConfig(
        position=encoding,
        vocab_size=256,
        d_model=D,
        n_heads=HEADS,
        n_layers=LAYERS,
        d_ff=4 * D,
        trained_length=L0,
        tokenizer="bytes",
    )


def build(encoding: str, seed: int):
    from posgeom.nn.decoder import CausalDecoder

    return CausalDecoder(config(encoding), seed=seed)


def _info(encoding: str, seed: int) -> dict[str, Any]:
    return {
        "study": "issue 17 Track B (studies/extension/track_b.py)",
        "encoding": encoding,
        "seed": seed,
        "steps": STEPS,
        "batch": f"{BATCH} x {L0}",
        "optimizer": f"AdamW lr {LR}, weight decay 0.01, 50 warm-up steps",
        "data": "first 90% of war_and_peace.txt.gz, raw UTF-8 bytes",
    }


def load(encoding: str, seed: int, ckpt_dir: Path) -> Any:
    """The trained model from ``ckpt_dir`` (a ``.safetensors`` file, else a legacy ``.pt``
    state dict read with ``weights_only=True`` and written as ``.safetensors``), or None."""
    import torch

    from posgeom.nn.decoder import load_decoder, save_decoder

    path = ckpt_dir / f"{encoding}_seed{seed}.safetensors"
    if path.exists():
        return load_decoder(path)[0]
    legacy = path.with_suffix(".pt")
    if not legacy.exists():
        return None
    model = build(encoding, seed)
    model.load_state_dict(torch.load(legacy, weights_only=True))
    save_decoder(model, path, info=_info(encoding, seed))
    return model.eval()


def convert(ckpt_dir: Path, out_dir: Path) -> list[Path]:
    """Every legacy ``ckpt_dir/*.pt`` as ``out_dir/<name>.safetensors`` (the ``.pt`` kept)."""
    import torch

    from posgeom.nn.decoder import save_decoder

    written = []
    for seed in SEEDS:
        for enc in encodings():
            legacy = ckpt_dir / f"{enc}_seed{seed}.pt"
            if legacy.exists():
                model = build(enc, seed)
                model.load_state_dict(torch.load(legacy, weights_only=True))
                out = out_dir / f"{enc}_seed{seed}.safetensors"
                written.append(save_decoder(model, out, info=_info(enc, seed)))
    return written


def train(encoding: str, seed: int, ckpt_dir: Path, log) -> Any:
    import torch

    from posgeom.nn.decoder import save_decoder

    model = load(encoding, seed, ckpt_dir)
    if model is not None:
        return model
    model = build(encoding, seed)
    data = torch.from_numpy(split_train()[0].astype(np.int64))
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    t, running = time.time(), []
    for step in range(STEPS):
        starts = torch.from_numpy(rng.integers(0, len(data) - L0 - 1, BATCH))
        batch = torch.stack([data[s : s + L0 + 1] for s in starts])
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        running.append(float(loss.detach()))
        if (step + 1) % 100 == 0:
            log(
                f"  {encoding} seed {seed} step {step + 1}/{STEPS} loss {np.mean(running):.3f} "
                f"({time.time() - t:.0f} s)"
            )
            running = []
    save_decoder(model, ckpt_dir / f"{encoding}_seed{seed}.safetensors", info=_info(encoding, seed))
    return model


def train_one(encoding: str, seed: int, ckpt_dir: Path, *, threads: int = 1) -> Path:
    """Train (or find) the model of ``encoding`` and ``seed`` under ``ckpt_dir``; its path."""
    import torch

    torch.set_num_threads(threads)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    train(encoding, seed, ckpt_dir, lambda msg: print(msg, flush=True))
    return ckpt_dir / f"{encoding}_seed{seed}.safetensors"


def _rope_module(model, strategy: str, length: int):
    from posgeom.nn import RotaryEmbedding

    return RotaryEmbedding(D // HEADS, 10000.0, rope_strategies(length / L0)[strategy])


def _sinusoidal_module(model, strategy: str, length: int):
    from posgeom.nn.position import SinusoidalPositionEmbedding

    beyond = "compute" if strategy == "compute" else "interpolate"
    return SinusoidalPositionEmbedding(L0, D, beyond=beyond)


def _learned_module(model, strategy: str, length: int):
    import torch

    from posgeom.encodings.learned_extension import extend_table
    from posgeom.nn.position import LearnedPositionEmbedding
    from posgeom.nn.tables import AbsolutePositionEmbedding

    weight = model.trained_table
    if strategy == "interpolate":  # positions 0 .. L-2 mapped onto the table (records' way)
        mod = LearnedPositionEmbedding(L0, D, beyond="interpolate")
        mod.embedding.weight.data.copy_(weight)
        return mod
    rows = weight.double().numpy()
    if length > L0:
        rows = extend_table(rows, length, "gower-table" if strategy == "gower" else "clamp")
    return AbsolutePositionEmbedding(torch.from_numpy(rows).float())


#: the families this study is about: family -> (its test-time strategies, the position module
#: that runs one at a length). RoPE: none, linear, static NTK, YaRN (with and without its
#: attention factor), llama3, a LongRoPE ramp and posgeom's fitted factors; the learned table
#: clamped, interpolated or Gower-extended (``gower-table``); the sinusoidal table computed or
#: interpolated.
STUDIED = {
    "rope": (_ROPE_NAMES, _rope_module),
    "learned": (("clamp", "interpolate", "gower"), _learned_module),
    "sinusoidal": (("compute", "interpolate"), _sinusoidal_module),
}


def with_strategy(model, encoding: str, strategy: str, length: int):
    """Swap the model's position module for ``strategy`` at ``length`` (returns the model); a
    family not in :data:`STUDIED` keeps its trained module ("as is")."""
    if encoding in STUDIED:
        model.position = STUDIED[encoding][1](model, strategy, length)
    return model


def evaluate(model, windows: np.ndarray, length: int) -> list[float]:
    """Mean next-token loss per ``BIN`` positions (predicted token's position) over the windows."""
    import torch

    with torch.inference_mode():
        x = torch.from_numpy(windows[:, :length])
        logits = model(x[:, :-1]).double()
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, 256), x[:, 1:].reshape(-1), reduction="none"
        ).reshape(len(windows), -1)
    per_pos = np.concatenate([np.full(len(windows), np.nan)[:, None], nll.numpy()], 1).mean(0)
    return [float(np.nanmean(per_pos[b : b + BIN])) for b in range(0, length, BIN)]


def run(results: Path, ckpt_dir: Path, *, threads: int = 1) -> None:
    import torch

    torch.set_num_threads(threads)
    results.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            done.add((r["encoding"], r["strategy"], r["seed"], r["text"], r["length"]))
    windows = {name: eval_windows(name) for name in TEXTS}
    families = encodings()
    total = sum(len(strategies(e)) for e in families) * len(SEEDS) * len(TEXTS) * len(LENGTHS)

    def log(msg: str) -> None:
        print(msg, flush=True)

    for seed in SEEDS:
        for enc in families:
            keys = [
                (enc, s, seed, t, n)
                for s in strategies(enc)
                for t in TEXTS
                for n in LENGTHS
                if not (s == "posgeom fitted" and n > L0 and fitted_scaling(n) is None)
            ]
            if all(k in done for k in keys):
                continue
            t0 = time.time()
            model = train(enc, seed, ckpt_dir, log).eval()
            if enc == "learned":
                model.trained_table = model.position.embedding.weight.detach().clone()
            for key in keys:
                if key in done:
                    continue
                _, strategy, _, text, length = key
                bins = evaluate(with_strategy(model, enc, strategy, length), windows[text], length)
                rec = dict(
                    zip(("encoding", "strategy", "seed", "text", "length"), key, strict=True)
                )
                rec.update(steps=STEPS, bin=BIN, bin_loss=bins, **_summary(bins, length))
                with results.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                done.add(key)
            log(f"[{len(done)}/{total}] {enc} seed {seed} done in {time.time() - t0:.0f} s")
    log("track B complete")


def _summary(bins: list[float], length: int) -> dict[str, float]:

    return {
        "loss_all": bin_mean(bins, BIN, 0, length),
        "loss_last_quarter": bin_mean(bins, BIN, length * 3 // 4, length),
        "loss_beyond_trained": bin_mean(bins, BIN, L0, length) if length > L0 else math.nan,
    }
