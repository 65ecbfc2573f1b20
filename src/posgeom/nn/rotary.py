"""Rotary position embedding (RoPE, Su et al. 2021), rotate-half convention of Hugging Face Llama.

Reference: ``transformers.models.llama.modeling_llama.LlamaRotaryEmbedding`` and
``apply_rotary_pos_emb``. For head width ``h`` (even) and frequencies
``ω_k = base^{-2k/h}``, ``k = 0 … h/2-1``, the angle of position ``p`` is ``θ_{p,k} = p ω_k`` and

    cos = [cos θ, cos θ],   sin = [sin θ, sin θ]                    (..., L, h)
    rotate_half(x) = [-x[h/2:], x[:h/2]]
    x_rot = x * cos + rotate_half(x) * sin

i.e. dimension ``k`` is paired with ``k + h/2`` (not the interleaved pairs of the RoPE paper).

Scaling (``scaling=`` dict, ``None`` for plain RoPE): ``{"type": <rope type>, ...}`` with any type
of :data:`posgeom.encodings.rope_types.ROPE_TYPES` and its parameters as transformers spells them,
e.g. ``{"type": "linear", "factor": f}`` (``w_k / f``) or ``{"type": "ntk", "factor": f}`` (static
NTK-aware, ``base' = base f^{h/(h-2)}``; HF's ``"dynamic"`` needs ``"max_position_embeddings"``
in the dict). ``"dynamic"`` and ``"longrope"`` frequencies are recomputed for the current length
``L = max(position_ids) + 1``, as transformers' ``dynamic_rope_update``. The frequencies come from
:func:`posgeom.encodings.rope_types.rope_frequencies`; the attention factor (YaRN, LongRoPE)
multiplies cos and sin as in transformers.

Position math (angles, cos, sin, and the rotation itself) is done in float32 (float64 for float64
inputs) and the result is cast back to the input dtype.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.encodings.rope_types import rope_frequencies

__all__ = ["RotaryEmbedding", "rotate_half"]

LENGTH_DEPENDENT = ("dynamic", "longrope")  # rope types whose frequencies follow the length


def rotate_half(x: Tensor) -> Tensor:
    """``[-x2, x1]`` for ``x = [x1, x2]`` split in halves on the last axis."""
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class RotaryEmbedding(nn.Module):
    """RoPE for queries and keys.

    Args:
        head_dim: per-head width ``h`` (even).
        base: frequency base (Llama: 10000; Llama 3 / SmolLM2: other values).
        scaling: ``None`` or ``{"type": <rope type>, ...}`` (see the module docstring).

    Use ``q, k = rope.apply(q, k, position_ids)`` with ``q, k`` of shape ``(B, H, L, h)`` and
    ``position_ids`` of shape ``(B, L)`` or ``(L,)``; ``rope(position_ids)`` returns
    ``(cos, sin)`` of shape ``(*position_ids.shape, h)`` in float32.
    """

    def __init__(
        self, head_dim: int, base: float = 10000.0, scaling: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        if check_int(head_dim, "head_dim", 2) % 2:
            raise PosgeomError(f"head_dim must be a positive even int, got {head_dim!r}")
        if not base > 1:
            raise PosgeomError(f"base must be > 1, got {base}")
        self.head_dim = head_dim
        self.base = float(base)
        self.scaling = dict(scaling) if scaling else None
        params = dict(self.scaling or {})
        kind = params.pop("type", params.pop("rope_type", None))
        context = params.pop("max_position_embeddings", None)
        try:
            inv, attention = rope_frequencies(kind, head_dim, self.base, params, context=context)
        except PosgeomError as exc:
            raise PosgeomError(f"scaling={scaling!r} is not supported: {exc}") from None
        self.attention_scaling = float(attention)
        self.register_buffer("inv_freq", torch.from_numpy(inv).to(torch.float32), persistent=False)
        self._length_args = (kind, params, context) if kind in LENGTH_DEPENDENT else None

    def frequencies(self, seq_len: int) -> tuple[Tensor, float]:
        """``(inv_freq, attention_scaling)`` at the current length ``seq_len`` (the same for every
        length but for the length-dependent types, :data:`LENGTH_DEPENDENT`)."""
        if self._length_args is None:
            return self.inv_freq, self.attention_scaling
        kind, params, context = self._length_args
        inv, attention = rope_frequencies(
            kind, self.head_dim, self.base, params, seq_len=seq_len, context=context
        )
        return torch.from_numpy(inv).to(self.inv_freq), float(attention)

    def forward(
        self, position_ids: Tensor, dtype: torch.dtype = torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(cos, sin)``, each ``(*position_ids.shape, head_dim)`` in ``dtype`` (float32+)."""
        if position_ids.is_floating_point():
            raise PosgeomError("position_ids must be an integer tensor (torch.long)")
        seq_len = int(position_ids.max()) + 1 if position_ids.numel() else 0
        inv_freq, attention = self.frequencies(seq_len)
        freqs = position_ids.to(dtype).unsqueeze(-1) * inv_freq.to(dtype)
        emb = torch.cat((freqs, freqs), dim=-1)
        if attention != 1.0:
            return emb.cos() * attention, emb.sin() * attention
        return emb.cos(), emb.sin()

    def apply(
        self, q: Tensor, k: Tensor, position_ids: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Rotate queries and keys.

        Args:
            q, k: ``(..., H, L, h)`` (typically ``(B, H, L, h)``); ``h`` must equal ``head_dim``.
            position_ids: ``(B, L)`` (broadcast over heads) or ``(L,)``; default ``0 … L-1``.

        Returns:
            ``(q_rot, k_rot)`` with the input shapes and dtypes.
        """
        for name, x in (("q", q), ("k", k)):
            if x.shape[-1] != self.head_dim:
                raise PosgeomError(
                    f"{name} has last dimension {x.shape[-1]}, expected head_dim={self.head_dim}; "
                    "pass tensors shaped (batch, heads, seq_len, head_dim)"
                )
        if position_ids is None:
            position_ids = torch.arange(q.shape[-2], device=q.device)
        work = torch.float64 if q.dtype == torch.float64 else torch.float32
        cos, sin = self(position_ids, dtype=work)
        if position_ids.ndim >= 2:  # (B, L, h) -> (B, 1, L, h), broadcast over heads
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
        qf, kf = q.to(work), k.to(work)
        q_rot = qf * cos + rotate_half(qf) * sin
        k_rot = kf * cos + rotate_half(kf) * sin
        return q_rot.to(q.dtype), k_rot.to(k.dtype)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}, scaling={self.scaling}"
