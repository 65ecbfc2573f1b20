"""One run of the pretraining study: train an arm's language model on a corpus, then measure it.

Training: ``steps`` AdamW steps (``lr``, weight decay 0.01, betas ``(0.9, 0.99)``, gradient norm
clipped at 1), the learning rate warmed up linearly over the first 10% of the steps, then decayed
by a cosine to 10% of ``lr``; each step a batch of ``batch`` windows drawn by
``numpy.random.default_rng([seed, 1])``, so every arm of a seed sees the same bytes in the same
order (and the same masks).

Objectives: ``causal``: windows of ``L + 1`` bytes, the mean cross-entropy (nats per byte) of byte
``i + 1`` given bytes ``0 .. i``; ``masked``: windows of ``L`` bytes, each byte replaced by the
mask id 256 with probability ``mask_prob`` (at least one per window), the mean cross-entropy at
the masked bytes.

Measures (:func:`evaluate`): on ``eval_windows`` fixed windows of the validation and the test
split (drawn by ``default_rng(0)``), the mean loss and the per-position loss ``(L,)``; for the
arms that run at any length the validation loss at ``2 L`` and ``4 L`` (all positions, and only
the positions ``>= L``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom.training.corpora import CorpusSplits, window_starts, windows

__all__ = ["RunSpec", "evaluate", "train_lm"]

MASK_ID = 256


@dataclass(frozen=True)
class RunSpec:
    """The training options shared by every run of a grid (module docstring)."""

    context: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    batch: int = 16
    steps: int = 300
    lr: float = 2e-3
    mask_prob: float = 0.15
    eval_windows: int = 256
    log_every: int = 10
    device: str = "cpu"


def _lr_at(step: int, spec: RunSpec) -> float:
    warm = max(1, spec.steps // 10)
    if step < warm:
        return spec.lr * (step + 1) / warm
    frac = (step - warm) / max(1, spec.steps - warm)
    return spec.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def _masked(x: np.ndarray, rng: np.random.Generator, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """``(inputs, selected)``: ``x`` with the selected bytes replaced by :data:`MASK_ID`."""
    sel = rng.random(x.shape) < prob
    none = ~sel.any(axis=1)
    sel[none, rng.integers(0, x.shape[1], size=int(none.sum()))] = True
    return np.where(sel, MASK_ID, x), sel


def _batch(x: np.ndarray, objective: str, rng: np.random.Generator, prob: float) -> tuple:
    """``(inputs, targets, weights)`` as numpy: weights 1 where the loss is taken."""
    if objective == "causal":
        return x[:, :-1], x[:, 1:], np.ones_like(x[:, 1:], dtype=np.float64)
    inputs, sel = _masked(x, rng, prob)
    return inputs, x, sel.astype(np.float64)


def _losses(model: Any, inputs: Any, targets: Any) -> Any:
    """``(B, L)`` cross-entropies of the model's predictions."""
    import torch.nn.functional as F

    logits = model(inputs)
    flat = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    )
    return flat.view(targets.shape)


def train_lm(
    model: Any, splits: CorpusSplits, objective: str, seed: int, spec: RunSpec
) -> dict[str, Any]:
    """Train ``model`` in place (module docstring); ``{"curve": [[step, mean train loss], ...],
    "seconds": ...}`` (the mean over each ``log_every`` steps)."""
    import torch

    extra = 1 if objective == "causal" else 0
    starts = window_starts(splits, "train", spec.context + extra)
    rng = np.random.default_rng([seed, 1])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=0.01, betas=(0.9, 0.99))
    model.train()
    curve, acc, t0 = [], [], time.perf_counter()
    for step in range(spec.steps):
        x = windows(splits.data["train"], rng.choice(starts, spec.batch), spec.context + extra)
        inputs, targets, w = (
            torch.as_tensor(a, device=spec.device)
            for a in _batch(x, objective, rng, spec.mask_prob)
        )
        w = w.float()
        loss = (_losses(model, inputs, targets) * w).sum() / w.sum()
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, spec)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        acc.append(float(loss.detach()))
        if len(acc) == spec.log_every or step == spec.steps - 1:
            curve.append([step + 1, float(np.mean(acc))])
            acc = []
    return {"curve": curve, "seconds": time.perf_counter() - t0}


def _eval_loss(
    model: Any, splits: CorpusSplits, split: str, objective: str, length: int, spec: RunSpec
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(sum of losses, count)`` per position, float64 ``(length,)`` each, or None without
    windows."""
    import torch

    extra = 1 if objective == "causal" else 0
    starts = window_starts(splits, split, length + extra)
    if starts.size == 0:
        return None
    rng = np.random.default_rng(0)
    chosen = np.sort(rng.choice(starts, min(spec.eval_windows, starts.size), replace=False))
    x = windows(splits.data[split], chosen, length + extra)
    inputs, targets, w = _batch(x, objective, rng, spec.mask_prob)
    total, count = np.zeros(length), np.zeros(length)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(x), 64):
            part = [torch.as_tensor(a[i : i + 64], device=spec.device) for a in (inputs, targets)]
            lo = _losses(model, *part).double().cpu().numpy()
            total += (lo * w[i : i + 64]).sum(axis=0)
            count += w[i : i + 64].sum(axis=0)
    return total, count


def evaluate(
    model: Any, splits: CorpusSplits, objective: str, spec: RunSpec, *, extendable: bool
) -> dict[str, Any]:
    """The measures of the module docstring, as one JSON-able dict."""
    out: dict[str, Any] = {}
    n = spec.context
    for split in ("validation", "test"):
        res = _eval_loss(model, splits, split, objective, n, spec)
        if res is None:
            continue
        total, count = res
        out[f"{split}_loss"] = float(total.sum() / count.sum())
        if split == "validation":
            out["per_position_loss"] = (total / np.maximum(count, 1)).tolist()
    for factor in (2, 4) if extendable else ():
        res = _eval_loss(model, splits, "validation", objective, factor * n, spec)
        if res is None:
            continue
        total, count = res
        out[f"loss_{factor}x"] = float(total.sum() / count.sum())
        out[f"loss_{factor}x_beyond"] = float(total[n:].sum() / count[n:].sum())
    return out
