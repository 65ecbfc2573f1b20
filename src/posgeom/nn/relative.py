"""T5 relative-position bias (Raffel et al., 2020) as a torch module.

``bias[h, i, j] = b[bucket(j - i), h]`` with a learned table ``b`` of shape ``(num_buckets, H)``
(``relative_attention_bias`` in transformers' ``T5Attention``) and the bucket of the relative
position ``key - query`` from :func:`posgeom.encodings.t5_mechanism.t5_relative_position_bucket` (the one
implementation of the formula: exact buckets below ``num_buckets / 4`` (bidirectional),
logarithmic up to ``max_distance``). Reference: ``T5Attention.compute_bias``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from posgeom._validation import check_int
from posgeom.encodings.t5_mechanism import t5_relative_position_bucket
from posgeom.nn.alibi import AttentionBias

__all__ = ["T5RelativeBias"]


class T5RelativeBias(AttentionBias):
    """Learned T5 bucket bias ``(H, L, L)``; init ``N(0, 0.02^2)`` unless ``generator`` says.

    Args:
        n_heads: heads ``H``; num_buckets, max_distance, bidirectional: T5's bucket parameters
            (encoder: 32, 128, bidirectional).
    """

    def __init__(
        self,
        n_heads: int,
        *,
        num_buckets: int = 32,
        max_distance: int = 128,
        bidirectional: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_int(n_heads, "n_heads", 1)
        self.n_heads = n_heads
        self.num_buckets = int(num_buckets)
        self.max_distance = int(max_distance)
        self.bidirectional = bool(bidirectional)
        self.bias = nn.Embedding(self.num_buckets, n_heads)
        with torch.no_grad():
            self.bias.weight.normal_(0.0, 0.02, generator=generator)

    def buckets(self, pos: Tensor) -> Tensor:
        """``(L, L)`` bucket index of ``pos[j] - pos[i]`` (long, on ``pos``'s device)."""
        rel = (pos[None, :] - pos[:, None]).cpu().numpy()
        index = t5_relative_position_bucket(
            rel,
            bidirectional=self.bidirectional,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )
        return torch.from_numpy(np.ascontiguousarray(index)).to(pos.device)

    def forward(self, positions: int | Tensor) -> Tensor:
        pos = self._positions(positions, self.bias.weight.device)
        return self.bias(self.buckets(pos)).permute(2, 0, 1)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )
