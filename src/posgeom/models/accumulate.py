"""Accumulation of the layer-wise signal: hidden states of a batch in, float64 totals out.

:class:`LayerTotals` keeps, for every layer ``l`` and position ``i < n``, the float64 running sum
of hidden states, the token count ``c_i``, and ``sum ||h - s||^2`` around a shift ``s`` (the first
batch's mean); :meth:`LayerTotals.finish` turns them into means and the variance share
explained by position (formulas in :mod:`posgeom.models.layerwise`).

Per batch, on the hidden states' device, in float32 (float64 for float64 models; half-precision
states are cast up first): with flat token slots ``slot`` (the position ``i < n`` of a counted
token, ``n`` for everything not counted), each layer's ``(B*T, d)`` hidden states are read twice
and never copied: one ``index_add_`` into an ``(L+1, n+1, d)`` buffer (row ``n`` dropped) gives
the per-position sums, and one fused ``||h - s||`` per token the distances to the shift, of which
the counted ones are squared and summed in float64. A batch adds at most ``batch_size`` tokens per
position (~1e-7 relative round-off); the batch sums are added into float64 totals on the host.
A model spread over devices returns each layer's states on that layer's device: each is moved to
the first layer's device before it is summed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from posgeom._errors import PosgeomError

__all__ = ["LayerMoments", "LayerTotals", "check_every_position"]


def check_every_position(counts: np.ndarray, *, why: str, fix: str) -> None:
    """Refuse a position that received no tokens (``counts[p] == 0``, the first such ``p``):
    ``"position p received no tokens{why}; use {fix} <= p"`` (each caller says why and names its
    own option)."""
    empty = np.flatnonzero(np.asarray(counts) == 0)
    if empty.size:
        first = int(empty[0])
        raise PosgeomError(f"position {first} received no tokens{why}; use {fix} <= {first}")


@dataclass(frozen=True, eq=False)
class LayerMoments:
    """What the totals give (float64): ``means`` ``(L+1, n, d)``, ``counts`` ``(n,)`` int64,
    ``variance_explained`` and ``total_sum_squares`` ``(L+1,)``."""

    means: np.ndarray
    counts: np.ndarray
    variance_explained: np.ndarray
    total_sum_squares: np.ndarray


class LayerTotals:
    """Float64 running totals of the hidden states of every layer, batch by batch."""

    def __init__(self, n: int, acc_device: torch.device):
        self.n = n
        self.acc_device = acc_device  # where the float64 totals live (the host)
        self.counts = np.zeros(n, dtype=np.int64)
        self.work_shift: torch.Tensor | None = None  # (L+1, d) in the work dtype
        self._sums: torch.Tensor | None = None  # per-batch buffers, reused
        self._norms: torch.Tensor | None = None
        self.sums: torch.Tensor | None = None  # (L+1, n, d) float64 sums of h
        self.shift: torch.Tensor | None = None  # (L+1, d) float64 (exactly the work-dtype shift)
        self.sumsq: torch.Tensor | None = None  # (L+1,) float64 sums of ||h - shift||^2

    def add(self, hidden: Sequence[torch.Tensor], pos: np.ndarray) -> None:
        """Add one batch: ``hidden`` the ``L+1`` tensors ``(B, T, d)``, ``pos`` ``(B, T)``
        positions (``-1``: not counted)."""
        if len(hidden) == 0:  # a config with num_hidden_layers = 0 (transformers returns ())
            raise PosgeomError(
                "the model returned no hidden states (its config.json has num_hidden_layers = 0?); "
                "a layer-wise analysis needs a model with at least one layer"
            )
        flat_pos = pos.reshape(-1)
        take = np.flatnonzero(flat_pos >= 0)  # flat (row-major) indices of counted tokens
        if take.size == 0:
            return
        if self.sums is not None and len(hidden) != self.sums.shape[0]:
            raise PosgeomError("the model returned a varying number of hidden states")
        self.counts += np.bincount(flat_pos[take], minlength=self.n)
        device = hidden[0].device
        slot = torch.from_numpy(np.where(flat_pos >= 0, flat_pos, self.n)).to(device)
        take_t = torch.from_numpy(take).to(device)
        if self.sums is None:
            self.shift = self._first_shift(hidden, take_t).to(self.acc_device).double()
            layers, width = self.shift.shape
            self.sums = torch.zeros(
                layers, self.n, width, dtype=torch.float64, device=self.acc_device
            )
            self.sumsq = torch.zeros(layers, dtype=torch.float64, device=self.acc_device)
        assert self.sumsq is not None
        batch_sums, batch_sumsq = self._batch_sums(hidden, slot, take_t)
        self.sums.add_(batch_sums.to(self.acc_device))
        self.sumsq.add_(batch_sumsq.to(self.acc_device))

    def _first_shift(self, hidden: Sequence[torch.Tensor], take: torch.Tensor) -> torch.Tensor:
        """The first batch's mean of the counted tokens, ``(L+1, d)`` in the work dtype."""
        first = hidden[0]
        dtype = torch.float64 if first.dtype == torch.float64 else torch.float32
        width = int(first.shape[-1])
        self.work_shift = torch.stack(
            [
                h.reshape(-1, width).to(take.device).index_select(0, take).to(dtype).mean(0)
                for h in hidden
            ]
        )
        return self.work_shift

    def _batch_sums(
        self, hidden: Sequence[torch.Tensor], slot: torch.Tensor, take: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-position sums ``(L+1, n, d)`` (work dtype) and float64 ``sum ||h - s||^2``."""
        shift = self.work_shift
        assert shift is not None
        layers, size, width = len(hidden), int(slot.shape[0]), int(shift.shape[1])
        if self._sums is None:
            self._sums = torch.empty(
                layers, self.n + 1, width, dtype=shift.dtype, device=shift.device
            )
        if self._norms is None or self._norms.shape[1] < size:
            self._norms = torch.empty(layers, size, dtype=shift.dtype, device=shift.device)
        sums, norms = self._sums, self._norms[:, :size]
        sums.zero_()
        for layer, h in enumerate(hidden):  # two reads of each layer, no copy of the batch
            rows = h.reshape(-1, width).to(shift.device, shift.dtype)
            sums[layer].index_add_(0, slot, rows)
            torch.linalg.vector_norm(rows - shift[layer], dim=1, out=norms[layer])
        counted = norms.index_select(1, take).to(self.acc_device).double()  # cast on the host
        return sums[:, : self.n], counted.square().sum(dim=1)

    def finish(self) -> LayerMoments:
        """Means and ``R^2 = sum_i c_i ||m(i) - m||^2 / sum_t ||h(t) - m||^2`` per layer."""
        if self.sums is None or self.sumsq is None or self.shift is None:
            raise PosgeomError("no tokens were counted: the corpus is empty")
        sums = self.sums.cpu().numpy()
        shift = self.shift.cpu().numpy()
        c = self.counts.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):  # empty positions: refused later
            means = sums / c[None, :, None]  # (L+1, n, d)
        total_tokens = c.sum()
        grand = sums.sum(axis=1) / total_tokens - shift  # (L+1, d), grand mean minus shift
        total_ss = self.sumsq.cpu().numpy() - total_tokens * np.einsum("ld,ld->l", grand, grand)
        shifted = means - shift[:, None, :]
        between = np.einsum("i,lid->l", c, (shifted - grand[:, None, :]) ** 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            positive = total_ss > 0
            ratio = np.where(positive, between / np.where(positive, total_ss, 1), np.nan)
        return LayerMoments(
            means=means,
            counts=self.counts.copy(),
            variance_explained=ratio,
            total_sum_squares=total_ss,
        )
