"""ALiBi attention bias (Press, Smith & Lewis 2022, "Train short, test long").

Reference slopes: ``get_slopes`` in github.com/ofirpress/attention_with_linear_biases
(fairseq/models/transformer.py), identical to Hugging Face BLOOM's ``build_alibi_tensor``:
for ``H`` a power of two, ``m_h = 2^{-8 h / H}``, ``h = 1 … H``; otherwise the slopes of the
closest power of two ``H'`` followed by every other slope of ``2 H'`` (``[0::2][: H - H']``).

Bias, shape ``(H, L, L)``, added to the attention logits ``q_i · k_j / sqrt(h)``:

- symmetric (encoders, ``causal=False``): ``bias[h, i, j] = -m_h |i - j|``;
- causal (``causal=True``): ``-m_h (i - j)`` for ``j <= i`` and ``-inf`` for ``j > i`` (the causal
  mask is part of the bias).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom.encodings.alibi import alibi_slopes as _numpy_alibi_slopes

__all__ = ["ALiBiBias", "AttentionBias", "alibi_slopes"]


def alibi_slopes(n_heads: int) -> list[float]:
    """Per-head slopes ``m_h`` of the ALiBi reference code, as Python floats.

    One implementation serves numpy and torch: :func:`posgeom.encodings.alibi.alibi_slopes`.
    """
    return [float(m) for m in _numpy_alibi_slopes(n_heads)]


class AttentionBias(nn.Module):
    """Base of the modules that add a bias ``(H, L, L)`` to the attention logits of ``n_heads``
    heads: ``forward(seq_len | positions (L,)) -> (H, L, L)`` (ALiBi, T5 relative buckets)."""

    n_heads: int

    def _positions(self, positions: int | Tensor, device: torch.device) -> Tensor:
        if isinstance(positions, int):
            return torch.arange(positions, device=device)
        if positions.ndim != 1 or positions.is_floating_point():
            raise PosgeomError("positions must be an int or a 1-D integer tensor (L,)")
        return positions


class ALiBiBias(AttentionBias):
    """Additive ALiBi bias ``(H, L, L)``.

    Args:
        n_heads: number of heads ``H``.
        causal: ``False`` for the symmetric encoder bias ``-m |i-j|``; ``True`` for the causal
            bias with ``-inf`` above the diagonal.

    ``forward(seq_len)`` or ``forward(position_ids (L,))`` returns the bias in float32.
    """

    def __init__(self, n_heads: int, *, causal: bool = False) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.causal = bool(causal)
        self.register_buffer(
            "slopes", torch.tensor(alibi_slopes(n_heads), dtype=torch.float32), persistent=False
        )

    def forward(self, positions: int | Tensor) -> Tensor:
        pos = self._positions(positions, self.slopes.device)
        diff = (pos[:, None] - pos[None, :]).to(torch.float32)  # i - j
        if self.causal:
            bias = -self.slopes[:, None, None] * diff
            return bias.masked_fill((diff < 0).unsqueeze(0), float("-inf"))
        return -self.slopes[:, None, None] * diff.abs()

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, causal={self.causal}"
