"""Batches, losses and one epoch of optimisation or evaluation.

A batch is right-padded with ``PAD_ID`` (attention mask 1 on real tokens). Loss: cross-entropy
over the 2 classes (``sst2``, ``order``) or over the vocabulary at the masked positions
(``imdb-mlm``: a ``mlm_probability`` share of real tokens becomes ``[MASK]``, at least one per
batch). Loss and accuracy of an epoch are means over predictions (sentences or masked tokens).

Determinism: training epoch ``e`` shuffles with ``numpy.random.default_rng([seed, e])`` and seeds
torch (global and the masking generator) with ``seed * 1_000_003 + e``; evaluation masks come from
a generator seeded ``seed + 1_234_567`` (the same masks every epoch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.training.config import TrainConfig
from posgeom.training.data import MASK_ID, PAD_ID, Prepared

__all__ = ["epoch_seeds", "evaluate", "train_epoch"]


def _pad(seqs: list[list[int]], pad: int = PAD_ID) -> tuple[Any, Any]:
    import torch

    length = max(len(s) for s in seqs)
    tok = torch.full((len(seqs), length), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for k, s in enumerate(seqs):
        tok[k, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[k, : len(s)] = 1
    return tok, mask


def _mask_tokens(tok: Any, attn: Any, prob: float, gen: Any) -> tuple[Any, Any]:
    """Replace a ``prob`` share of real tokens by ``[MASK]``; labels ``-100`` elsewhere."""
    import torch

    chosen = (torch.rand(tok.shape, generator=gen) < prob) & attn.bool()
    if not bool(chosen.any()):  # at least one target per batch
        first = int(torch.nonzero(attn.bool())[0, 1])
        chosen[0, first] = True
    labels = torch.where(chosen, tok, torch.full_like(tok, -100))
    return tok.masked_fill(chosen, MASK_ID), labels


def _batch_loss(
    model: Any, cfg: TrainConfig, seqs: list[list[int]], labels: np.ndarray | None, gen: Any
) -> tuple[Any, int, int]:
    """``(mean loss, n correct, n predictions)`` of one batch."""
    import torch
    from torch import nn

    tok, attn = _pad(seqs)
    if cfg.task == "imdb-mlm":
        inp, tgt = _mask_tokens(tok, attn, cfg.mlm_probability, gen)
        sel = tgt != -100
        out, y = model(inp, attn, sel), tgt[sel]
    else:
        out = model(tok, attn)
        y = torch.as_tensor(labels, dtype=torch.long)
    loss = nn.functional.cross_entropy(out, y)
    correct = int((out.detach().argmax(-1) == y).sum())
    return loss, correct, int(y.numel())


class _Totals:
    """Running sums over batches: loss x predictions, correct predictions, predictions."""

    def __init__(self) -> None:
        self.loss = self.correct = self.n = 0.0

    def add(self, loss: Any, correct: int, n: int) -> None:
        self.loss += float(loss) * n
        self.correct += correct
        self.n += n

    def means(self) -> tuple[float, float]:
        """``(mean loss, accuracy)`` per prediction."""
        return self.loss / self.n, self.correct / self.n


def evaluate(
    model: Any, cfg: TrainConfig, ids: list[list[int]], labels: np.ndarray | None
) -> tuple[float, float]:
    """``(mean loss, accuracy)`` of ``model`` on ``ids`` (batches of ``max(batch_size, 64)``)."""
    import torch

    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + 1_234_567)  # same masks every epoch
    totals = _Totals()
    bs = max(cfg.batch_size, 64)
    with torch.no_grad():
        for s in range(0, len(ids), bs):
            lab = None if labels is None else labels[s : s + bs]
            totals.add(*_batch_loss(model, cfg, ids[s : s + bs], lab, gen))
    return totals.means()


def epoch_seeds(cfg: TrainConfig, epoch: int) -> tuple[np.random.Generator, int]:
    """The shuffling generator and the torch seed of training epoch ``epoch``."""
    return np.random.default_rng([cfg.seed, epoch]), cfg.seed * 1_000_003 + epoch


def train_epoch(
    model: Any,
    opt: Any,
    cfg: TrainConfig,
    prep: Prepared,
    epoch: int,
    steps: int,
    progress_bar: Any,
) -> tuple[float, float]:
    """``steps`` AdamW steps of epoch ``epoch``; ``(mean train loss, train accuracy)``."""
    import torch

    rng, tseed = epoch_seeds(cfg, epoch)
    torch.manual_seed(tseed)
    gen = torch.Generator().manual_seed(tseed)
    order = rng.permutation(len(prep.train_ids))
    model.train()
    totals = _Totals()
    bar = progress_bar(
        range(steps),
        desc=f"{cfg.task}/{cfg.encoding} s{cfg.seed} e{epoch}",
        disable=not cfg.progress,
        leave=False,
    )
    for b in bar:
        idx = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
        lab = None if prep.train_labels is None else prep.train_labels[idx]
        loss, c, m = _batch_loss(model, cfg, [prep.train_ids[i] for i in idx], lab, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        totals.add(loss.detach(), c, m)
        if cfg.progress and b % 20 == 0:
            bar.set_postfix(loss=f"{totals.loss / totals.n:.3f}")
    return totals.means()
