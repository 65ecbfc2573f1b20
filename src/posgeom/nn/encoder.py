"""A compact Transformer encoder for Theorem 1 (necessity of a positional signal).

Architecture (pre-LayerNorm, no causal mask, hand-written attention so that ALiBi biases and RoPE
can enter):

    h_0 = E[tokens] (+ P[positions] for an additive position module)          (B, L, d)
    h_l = h_{l-1} + MHA(LN(h_{l-1}));  h_l = h_l + FFN(LN(h_l))               l = 1 … n_layers
    MHA: softmax(q kᵀ / sqrt(h) + bias + mask) v per head, q, k rotated by RoPE if given
    pooled = mean over non-padding tokens of LN(h_L)                            (B, d)
    logits = W pooled + b                                                       (B, n_classes)

With ``position=None`` (NoPE) every operation is either per-token or a symmetric function of the
set of tokens, so the encoder is permutation-equivariant and the pooled output is permutation
invariant (Theorem 1 of Cirrincione 2026).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom.nn.alibi import AttentionBias
from posgeom.nn.position import PositionEmbedding
from posgeom.nn.rotary import RotaryEmbedding

__all__ = ["EncoderLayer", "MultiHeadAttention", "TinyEncoder", "run_layers"]


def run_layers(
    position: nn.Module | None,
    x: Tensor,
    layers: Iterable[nn.Module],
    *,
    causal: bool = False,
    key_mask: Tensor | None = None,
) -> Tensor:
    """The token embeddings ``x`` ``(B, L, d)`` through ``layers`` (:class:`EncoderLayer` s) with
    ``position`` applied: an additive table adds its rows ``0 .. L-1`` to ``x``, a rotary module
    rotates queries and keys, an attention bias ``(H, L, L)`` joins the logits, ``None`` changes
    nothing. ``causal``: ``-inf`` above the diagonal joins the bias; ``key_mask`` ``(B, L)``:
    True = attend."""
    length = x.shape[1]
    ids = torch.arange(length, device=x.device)
    kwargs: dict[str, Any] = {}
    if isinstance(position, PositionEmbedding):
        x = x + position(ids).to(x.dtype)
    elif isinstance(position, RotaryEmbedding):
        kwargs.update(rope=position, position_ids=ids)
    elif isinstance(position, AttentionBias):
        kwargs["bias"] = position(length)
    if causal:
        mask = torch.full((length, length), float("-inf"), device=x.device).triu(1)[None]
        kwargs["bias"] = mask if "bias" not in kwargs else mask + kwargs["bias"]
    if key_mask is not None:
        kwargs["key_mask"] = key_mask
    for layer in layers:
        x = layer(x, **kwargs)
    return x


PositionArg = PositionEmbedding | RotaryEmbedding | AttentionBias | str | None


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on ``(B, L, d)`` with optional additive bias and RoPE."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise PosgeomError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        *,
        bias: Tensor | None = None,
        rope: RotaryEmbedding | None = None,
        position_ids: Tensor | None = None,
        key_mask: Tensor | None = None,
    ) -> Tensor:
        """``x`` (B, L, d); ``bias`` (H, L, L) or (B, H, L, L); ``key_mask`` (B, L), True=keep."""
        b, length, d = x.shape
        q, k, v = (
            self.qkv(x).view(b, length, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        )  # each (B, H, L, h)
        if rope is not None:
            q, k = rope.apply(q, k, position_ids)
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # (B, H, L, L)
        if bias is not None:
            logits = logits + bias.to(logits.dtype)
        if key_mask is not None:
            logits = logits.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        att = self.dropout(torch.softmax(logits, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, length, d)
        return self.out(y)


class EncoderLayer(nn.Module):
    """Pre-LN block: ``x + MHA(LN x)``, then ``x + FFN(LN x)`` with GELU."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, **att_kwargs) -> Tensor:
        x = x + self.dropout(self.attn(self.ln1(x), **att_kwargs))
        return x + self.dropout(self.ff(self.ln2(x)))


class TinyEncoder(nn.Module):
    """Compact bidirectional Transformer encoder with mean pooling and a classification head.

    Args:
        vocab_size, d_model, n_heads, n_layers: sizes (``d_model % n_heads == 0``).
        max_len: the longest sequence (sizes the position module built from a string).
        position: ``None`` (NoPE), a :class:`PositionEmbedding` of width ``d_model`` (added to
            the token embeddings), a :class:`RotaryEmbedding` with ``head_dim = d_model/n_heads``,
            an attention bias (:class:`ALiBiBias`, :class:`T5RelativeBias`) with ``n_heads``
            heads, or the name of a registered family
            with a torch module (``"sinusoidal" | "learned" | "rope" | "alibi" | "nope" | ...``,
            built by ``posgeom.encodings.family(name).torch_module``).
        n_classes: output classes; ``d_ff``: FFN width (default ``4 d_model``); ``dropout``.

    ``forward(tokens (B, L), attention_mask (B, L) | None) -> logits (B, n_classes)``;
    ``encode`` returns the per-token outputs ``(B, L, d_model)``; ``pool`` the pooled ``(B, d)``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        max_len: int,
        position: PositionArg = None,
        *,
        n_classes: int = 2,
        d_ff: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise PosgeomError(
                f"d_model={d_model} must be divisible by n_heads={n_heads}; change one of them"
            )
        head_dim = d_model // n_heads
        if isinstance(position, str):
            from posgeom.encodings import family
            from posgeom.encodings._registry import TorchSpec

            spec = TorchSpec(n=max_len, d=d_model, n_heads=n_heads, seed=None)
            position = family(position).torch_module(spec)
        if isinstance(position, PositionEmbedding) and position.dim != d_model:
            raise PosgeomError(
                f"the position module has width {position.dim} but d_model={d_model}; build it "
                f"with d={d_model}"
            )
        if isinstance(position, RotaryEmbedding) and position.head_dim != head_dim:
            raise PosgeomError(
                f"RotaryEmbedding has head_dim={position.head_dim} but d_model/n_heads="
                f"{head_dim}; build it with RotaryEmbedding({head_dim})"
            )
        if isinstance(position, AttentionBias) and position.n_heads != n_heads:
            raise PosgeomError(
                f"{type(position).__name__} has {position.n_heads} heads but the encoder has "
                f"n_heads={n_heads}"
            )
        if position is not None and not isinstance(
            position, (PositionEmbedding, RotaryEmbedding, AttentionBias)
        ):
            raise PosgeomError(
                f"position must be None, a posgeom.nn position module or a name, got "
                f"{type(position).__name__}"
            )
        self.max_len = max_len
        self.d_model = d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position = position
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff or 4 * d_model, dropout) for _ in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def encode(self, tokens: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Per-token outputs ``(B, L, d_model)`` for ``tokens`` (B, L)."""
        if tokens.ndim != 2:
            raise PosgeomError(f"tokens must be (batch, seq_len), got shape {tuple(tokens.shape)}")
        key_mask = None if attention_mask is None else attention_mask.bool()
        x = run_layers(self.position, self.token_embedding(tokens), self.layers, key_mask=key_mask)
        return self.ln_f(x)

    def pool(self, tokens: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Mean of the per-token outputs over non-padding tokens, ``(B, d_model)``."""
        h = self.encode(tokens, attention_mask)
        if attention_mask is None:
            return h.mean(dim=1)
        m = attention_mask.to(h.dtype).unsqueeze(-1)
        return (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)

    def forward(self, tokens: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """Class logits ``(B, n_classes)``."""
        return self.head(self.pool(tokens, attention_mask))
