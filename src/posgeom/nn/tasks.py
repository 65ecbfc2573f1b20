"""Synthetic order-only tasks (Theorem 1) and a small training loop.

:func:`order_task`: every sequence holds the marker tokens ``a`` and ``b`` once each, at random
positions, and fillers elsewhere; the label is 1 when ``a`` comes before ``b``. Samples come in
pairs that differ only by swapping ``a`` and ``b`` (same bag of tokens, opposite labels), so a
model that sees only the bag of tokens is at exactly 50% on every pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError

__all__ = ["OrderTask", "accuracy", "fit_classifier", "lr_factor", "order_task"]

TOKEN_A = 1
TOKEN_B = 2
FIRST_FILLER = 3


@dataclass(frozen=True)
class OrderTask:
    """``tokens`` (N, L) long, ``labels`` (N,) long (1 iff ``a`` precedes ``b``)."""

    tokens: Tensor
    labels: Tensor
    token_a: int = TOKEN_A
    token_b: int = TOKEN_B


def order_task(n_samples: int, seq_len: int, vocab_size: int, *, seed: int = 0) -> OrderTask:
    """Generate ``n_samples`` (even) sequences for the "does a come before b" task.

    Token ids: 0 is reserved (padding, unused here), 1 is ``a``, 2 is ``b``, fillers are drawn
    uniformly from ``3 … vocab_size-1``. Samples ``2k`` and ``2k+1`` are the same sequence with
    ``a`` and ``b`` swapped; the pair order is then shuffled.
    """
    if n_samples < 2 or n_samples % 2:
        raise PosgeomError(f"n_samples must be an even number >= 2, got {n_samples}")
    if seq_len < 2:
        raise PosgeomError(f"seq_len must be >= 2 (room for a and b), got {seq_len}")
    if vocab_size < FIRST_FILLER + 1:
        raise PosgeomError(f"vocab_size must be >= {FIRST_FILLER + 1}, got {vocab_size}")
    rng = np.random.default_rng(seed)
    half = n_samples // 2
    tok = rng.integers(FIRST_FILLER, vocab_size, size=(half, seq_len))
    pos = np.argsort(rng.random((half, seq_len)), axis=1)[:, :2]  # two distinct positions
    rows = np.arange(half)
    tok[rows, pos[:, 0]] = TOKEN_A
    tok[rows, pos[:, 1]] = TOKEN_B
    swapped = tok.copy()
    swapped[rows, pos[:, 0]] = TOKEN_B
    swapped[rows, pos[:, 1]] = TOKEN_A
    lab = (pos[:, 0] < pos[:, 1]).astype(np.int64)
    tokens = np.stack([tok, swapped], axis=1).reshape(n_samples, seq_len)
    labels = np.stack([lab, 1 - lab], axis=1).reshape(n_samples)
    perm = rng.permutation(n_samples)
    return OrderTask(
        torch.from_numpy(tokens[perm].astype(np.int64)),
        torch.from_numpy(labels[perm].astype(np.int64)),
    )


def lr_factor(step: int, steps: int, *, warmup: int = 0, schedule: str = "constant") -> float:
    """Multiplier of the base learning rate at ``step`` (0-based) of ``steps``.

    Linear warmup ``(step + 1) / warmup`` over the first ``warmup`` steps, then ``1``
    (``schedule="constant"``) or the cosine decay ``(1 + cos(pi t)) / 2`` with
    ``t = (step - warmup) / (steps - warmup)`` going from 0 to 1 (``schedule="cosine"``).
    """
    if schedule not in ("constant", "cosine"):
        raise PosgeomError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    if not 0 <= warmup < max(steps, 1):
        raise PosgeomError(f"warmup must be in [0, steps), got {warmup} with steps={steps}")
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / (steps - warmup)))


def fit_classifier(
    model: nn.Module,
    tokens: Tensor,
    labels: Tensor,
    *,
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    warmup: int = 0,
    schedule: str = "constant",
) -> list[float]:
    """AdamW on cross-entropy for ``steps`` minibatches (seeded sampling); returns the losses.

    The learning rate at step ``t`` is ``lr * lr_factor(t, steps, warmup=warmup,
    schedule=schedule)``; the defaults keep it constant.
    """
    lr_factor(0, steps, warmup=warmup, schedule=schedule)  # bad options fail before training
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * lr_factor(step, steps, warmup=warmup, schedule=schedule)
        idx = torch.randint(0, tokens.shape[0], (batch_size,), generator=gen)
        loss = nn.functional.cross_entropy(model(tokens[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, tokens: Tensor, labels: Tensor) -> float:
    """Fraction of argmax predictions equal to ``labels``."""
    model.eval()
    return float((model(tokens).argmax(dim=-1) == labels).double().mean())
