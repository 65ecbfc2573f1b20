"""Rotary position embedding (RoPE, Su et al.) and its context-extension variants, as geometry.

RoPE rotates each 2-D plane ``k`` of a query/key head by the angle ``i * theta_k``; the position
vector of ``i`` is the rotation ``R_i`` applied to a fixed unit vector in every plane,
``[cos(i theta_k), sin(i theta_k)]`` (``||R_i u - R_j u|| = 2 |sin((i-j) theta_k / 2)| ||u||`` per
plane: the distances depend only on the frequencies). ``normalize="plane"`` (default): unit
planes, norm ``sqrt(head_dim/2)``, for the same width and base *identical* to the sinusoidal
geometry; ``"vector"`` divides by ``sqrt(head_dim/2)``.

Inverse frequencies: one function per rope type of transformers (``modeling_rope_utils``), in
float64, plus posgeom's static ``"ntk"`` (:mod:`posgeom.encodings.rope_types`; ``scaling=None``
is ``"default"``, ``theta_k = base^(-2k/h)``). YaRN's and LongRoPE's ``attention_factor`` is
applied to the vectors only with ``apply_attention_factor=True``. Layout ``"half"``
(transformers' ``rotate_half``: plane ``k`` = coordinates ``k, k + h/2``) or ``"interleaved"``
(RoFormer: ``2k, 2k+1``); distances do not depend on it.

:class:`RoPEFamily`: the comparison row is per-head RoPE (:func:`rope_heads`), the detector reads
``*inv_freq`` buffers (:class:`RotaryParams`), the torch module is ``posgeom.nn.RotaryEmbedding``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import (
    PositionEncoding,
    check_even,
    check_n,
    vector_lag_profile,
)
from posgeom.encodings._mechanism import Mechanism
from posgeom.encodings._registry import ComparisonContext, Family, TorchSpec, register
from posgeom.encodings.rope_extension import RoPEExtension
from posgeom.encodings.rope_mechanism import RoPEEncoding, RotaryParams, detect_rotary
from posgeom.encodings.rope_types import (
    LAYOUTS,
    rope_inverse_frequencies,
    rotary_vectors,
)


def rope(
    n_positions: int,
    head_dim: int = 64,
    base: float = 10000.0,
    *,
    scaling: str | None = None,
    normalize: str = "plane",
    layout: str = "half",
    apply_attention_factor: bool = False,
    **scaling_options: Any,
) -> RoPEEncoding:
    """RoPE position vectors ``(n, head_dim)``: ``[cos(i theta_k), sin(i theta_k)]`` per plane
    (module docstring); ``scaling_options``: the options of :func:`rope_inverse_frequencies`."""
    n = check_n(n_positions)
    if normalize not in ("plane", "vector"):
        raise PosgeomError(f"normalize must be 'plane' or 'vector', got {normalize!r}")
    if layout not in LAYOUTS:
        raise PosgeomError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    theta, att = rope_inverse_frequencies(
        head_dim, base, scaling=scaling, seq_len=n, **scaling_options
    )
    vec = rotary_vectors(theta, np.arange(n), layout=layout)
    if normalize == "vector":
        vec /= math.sqrt(theta.shape[0])
    if apply_attention_factor:
        vec *= att
    opt = scaling_options.get
    params = {
        "head_dim": int(head_dim),
        "base": float(base),
        "scaling": scaling or "default",
        "factor": float(opt("factor", 1.0)),
        "original_max_position_embeddings": opt("original_max_position_embeddings"),
        "normalize": normalize,
        "layout": layout,
        "apply_attention_factor": apply_attention_factor,
    }
    if scaling == "yarn":
        params.update(
            beta_fast=opt("beta_fast", 32.0),
            beta_slow=opt("beta_slow", 1.0),
            truncate=opt("truncate", True),
            attention_factor=att,
        )
    if opt("rope_parameters"):
        params["rope_parameters"] = dict(opt("rope_parameters"))
    return RoPEEncoding(
        "rope",
        vec,
        params,
        lag_profile=vector_lag_profile(vec),  # rotations: D_ij depends on i - j only
        inv_freq=theta,
        attention_factor=att,
        layout=layout,
    )


def default_rope_head_dim(model_dim: int, n_heads: int = 12) -> int:
    """``model_dim / n_heads`` when that is an even integer (BERT-base: 64), else 64 when it
    divides ``model_dim``, else ``model_dim`` (one head)."""
    if model_dim % n_heads == 0 and (model_dim // n_heads) % 2 == 0:
        return model_dim // n_heads
    return 64 if model_dim % 64 == 0 else model_dim


def check_rope_head_dim(head_dim: int, model_dim: int, *, name: str = "rope_head_dim") -> None:
    """Refuse a RoPE head width that does not fit the width: it must be even (one 2-D plane per
    frequency) and divide ``model_dim`` (``model_dim / head_dim`` whole heads); ``name``: the
    parameter's name in the message."""
    if head_dim < 2 or head_dim % 2 or model_dim % head_dim:
        raise PosgeomError(
            f"RoPE {name}={head_dim} does not fit model_dim={model_dim}: it must be even and "
            f"divide it; pass another {name} (or another model_dim)"
        )


def rope_heads(
    n_positions: int,
    model_dim: int = 768,
    head_dim: int = 64,
    *,
    base: float = 10000.0,
) -> PositionEncoding:
    """RoPE of ``model_dim / head_dim`` heads of width ``head_dim``, concatenated.

    Vectors ``(n, model_dim)``: every head holds the same RoPE vectors
    ``[cos(i theta_k), sin(i theta_k)]``, ``theta_k = base^(-2k/head_dim)`` (one unit vector per
    2-D plane, :func:`rope`), so with ``H = model_dim / head_dim``
    ``||p_i - p_j||^2 = H sum_k (2 - 2 cos((i-j) theta_k))``; every norm is ``sqrt(model_dim/2)``.
    ``head_dim = model_dim`` gives exactly the sinusoidal geometry.
    """
    check_rope_head_dim(head_dim, model_dim, name="head_dim")
    heads = model_dim // head_dim
    one = rope(n_positions, head_dim=head_dim, base=base)
    params = {
        "head_dim": int(head_dim),
        "n_heads": int(heads),
        "base": float(base),
        "normalize": "plane",
        "width": int(model_dim),
    }
    lag = np.sqrt(heads) * one.lag_profile  # every head adds the same squared distance
    return PositionEncoding("rope", np.tile(one.vectors, (1, heads)), params, lag_profile=lag)


# ------------------------------------------------------------------------------ family
@register
class RoPEFamily(Family):
    """Rotary position embedding: geometry, per-head comparison row, ``*inv_freq`` buffers;
    its extension side (``extend``, the decoder) is ``extension``, a :class:`RoPEExtension`."""

    name = "rope"
    order = 20
    summary = "rotary position embedding (Su et al.), every transformers rope type"
    mechanism_kind = "rotary"
    mechanism_params = RotaryParams
    looks_for = (
        "rotary buffers named *inv_freq, sin/cos tables (GPT-J), or config fields rope_parameters / rope_theta / "
        "rope_scaling / rotary_emb_base / position_embedding_type='rotary'"
    )
    detect_order = 20
    torch_class = "posgeom.nn.rotary:RotaryEmbedding"
    extension_type = RoPEExtension
    build = staticmethod(rope)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        """Per-head RoPE: ``model_dim / rope_head_dim`` heads concatenated (:func:`rope_heads`)."""
        return rope_heads(ctx.n_positions, ctx.model_dim, ctx.rope_head_dim, base=ctx.rope_base)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        p = encoding.params
        return (
            f"RoPE, {p['n_heads']} heads x head_dim {p['head_dim']} concatenated "
            f"(width {p['width']}), base {p['base']:g}, unit vector per plane"
        )

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        """Rotary set-ups read by :data:`~posgeom.encodings.rope_mechanism.ROTARY_READERS`."""
        return detect_rotary(model, config)

    def check_training(self, spec: TorchSpec) -> None:
        check_even(spec.d // spec.n_heads, "RoPE head width d_model / n_heads")

    def module_geometry(self, module: Any, spec: TorchSpec, target: Any = None) -> RoPEEncoding:
        """``rope(n, head_dim, base)`` of the module (its frequencies are not trained)."""
        return rope(spec.n, head_dim=module.head_dim, base=module.base)

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        return {"head_dim": spec.d // spec.n_heads}

    def torch_module(self, spec: TorchSpec) -> Any:
        self.check_training(spec)
        return self.torch_class_object()(spec.d // spec.n_heads)
