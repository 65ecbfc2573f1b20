"""Find the positional mechanism(s) of a pretrained Hugging Face model and turn them into geometry.

:func:`find_positional_mechanism` inspects a model generically: its named modules, parameters and
buffers, and a handful of configuration fields. Nothing is keyed on the model's name. What is
looked for, in this order:

``learned``
    an ``nn.Embedding`` (or a parameter) whose last name component is one of
    :data:`LEARNED_NAMES` (``position_embeddings`` for BERT/RoBERTa/MPNet, ``wpe`` for GPT-2,
    ``embed_positions`` for OPT/BART, ...). The table is returned from the first row a real token
    uses: ``offset`` is the module's ``offset`` attribute when it has one (OPT: 2), otherwise
    ``padding_idx + 1`` when the embedding has a padding index (RoBERTa/MPNet: pad id 1, so 2),
    otherwise 0 (BERT, GPT-2).
``rotary``
    buffers named ``*inv_freq`` (the rotary module of Llama, Mistral, Qwen, GPT-NeoX, Phi, ...),
    completed by the configuration (``rope_parameters`` in transformers 5, ``rope_theta`` /
    ``rope_scaling`` / ``rotary_emb_base`` / ``partial_rotary_factor`` / ``rotary_pct`` /
    ``rotary_dim`` / ``head_dim`` in older releases). When no buffer exists but the configuration
    names a rotary base, the default inverse frequencies ``theta^(-2k/dim)`` are computed from it.
``alibi``
    ``config.alibi`` (Falcon), ``config.attn_config.alibi`` (MPT),
    ``config.position_embedding_type == "alibi"``, or a module with a ``build_alibi_tensor`` (BLOOM)
    or ``build_mpt_alibi_tensor`` (MPT) method. Slopes follow the code of the model family
    (:func:`alibi_slopes`).
``relative_buckets``
    an ``nn.Embedding`` named ``relative_attention_bias`` (T5 encoder and decoder, MPNet), of shape
    ``(num_buckets, num_heads)``. Bucket count, maximum distance and direction are read from the
    owning module (``relative_attention_num_buckets``, ``relative_attention_max_distance``,
    ``is_decoder``), then from the signature defaults of its bucket functions (MPNet hard-codes 32
    buckets and distance 128 there), then from the configuration.

A model may carry several mechanisms (MPNet: learned absolute + relative buckets; T5: encoder and
decoder buckets). :func:`find_positional_mechanisms` returns all of them;
:func:`find_positional_mechanism` returns the first (learned absolute first, then rotary, ALiBi,
relative buckets) with the others in its ``others`` field.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from posgeom._errors import PosgeomError

__all__ = [
    "LEARNED_NAMES",
    "MECHANISM_KINDS",
    "RELATIVE_BIAS_NAMES",
    "PositionalMechanism",
    "alibi_slopes",
    "find_positional_mechanism",
    "find_positional_mechanisms",
    "mechanism_encodings",
    "model_position_limit",
    "relative_position_bucket",
    "to_encoding",
]

MECHANISM_KINDS = ("learned", "rotary", "alibi", "relative_buckets", "none")

#: Last name components of learned absolute position tables.
LEARNED_NAMES = (
    "position_embeddings",
    "position_embedding",
    "wpe",
    "embed_positions",
    "pos_embed",
    "pos_embeddings",
    "positional_embedding",
)
#: Last name components of relative-position bias tables (T5-style buckets).
RELATIVE_BIAS_NAMES = ("relative_attention_bias",)
_BUCKET_METHODS = (
    "compute_position_bias",
    "compute_bias",
    "relative_position_bucket",
    "_relative_position_bucket",
)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return _readonly(tensor.detach().to(device="cpu", dtype=torch.float64).numpy().copy())


@dataclass(frozen=True, eq=False)
class PositionalMechanism:
    """One positional mechanism of a model, with its parameters as float64 numpy arrays.

    Attributes (``None`` where they do not apply to ``kind``):
        kind: one of ``"learned"``, ``"rotary"``, ``"alibi"``, ``"relative_buckets"``, ``"none"``.
        source: where it was found (a parameter/buffer name or ``config.<field>``).
        table: learned absolute table, shape ``(n_positions, d)``, rows from ``offset`` on, so row
            ``i`` is the vector added at position ``i`` of a sequence.
        offset: rows skipped at the top of the stored table (OPT, RoBERTa, MPNet: 2).
        theta: rotary base (``rope_theta``).
        inv_freq: rotary inverse frequencies ``w_k``, shape ``(rotary_dim // 2,)``; position
            ``i`` rotates plane ``k`` by angle ``i * w_k``. Scaled variants (linear, llama3,
            yarn, ...) are already applied, exactly as the model's own buffer holds them.
        rope_type: ``"default"``, ``"linear"``, ``"dynamic"``, ``"yarn"``, ``"llama3"``, ...
        rope_scaling: the model's rope parameter dict (read-only), or ``None``.
        rotary_fraction: ``rotary_dim / head_dim`` (``partial_rotary_factor``).
        head_dim, rotary_dim: per-head width and the number of rotated channels.
        attention_scaling: factor the model multiplies cos/sin by (1.0 except yarn/longrope).
        layer_type: for models with several rotary set-ups (e.g. ``"sliding_attention"``).
        slopes: ALiBi slopes per head, shape ``(num_heads,)``; the bias is ``-m_h |i - j|``.
        alibi_style: ``"bloom"`` (Press et al.'s reference, also Falcon) or ``"mpt"``.
        num_heads: number of heads (ALiBi, relative buckets).
        num_buckets, max_distance, bidirectional: T5 bucket parameters.
        bias_table: relative bias per bucket and head, shape ``(num_buckets_in_table, num_heads)``.
        others: the model's other mechanisms (a composite), in detection order.
    """

    kind: str
    source: str
    table: np.ndarray | None = None
    offset: int = 0
    theta: float | None = None
    inv_freq: np.ndarray | None = None
    rope_type: str | None = None
    rope_scaling: Mapping[str, Any] | None = None
    rotary_fraction: float | None = None
    head_dim: int | None = None
    rotary_dim: int | None = None
    attention_scaling: float | None = None
    layer_type: str | None = None
    slopes: np.ndarray | None = None
    alibi_style: str | None = None
    num_heads: int | None = None
    num_buckets: int | None = None
    max_distance: int | None = None
    bidirectional: bool | None = None
    bias_table: np.ndarray | None = None
    others: tuple[PositionalMechanism, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in MECHANISM_KINDS:
            raise PosgeomError(
                f"unknown mechanism kind {self.kind!r}; use one of {', '.join(MECHANISM_KINDS)}"
            )

    @property
    def all(self) -> tuple[PositionalMechanism, ...]:
        """This mechanism followed by ``others``."""
        return (self, *self.others)

    @property
    def representation(self) -> str:
        """What :func:`to_encoding` returns: ``"vectors"`` (n, d) or ``"distances"`` (n, n)."""
        return "distances" if self.kind in ("alibi", "relative_buckets") else "vectors"

    @property
    def n_positions(self) -> int | None:
        """Number of positions a learned table covers (``None`` for the other kinds)."""
        return None if self.table is None else int(self.table.shape[0])

    def summary(self) -> str:
        """One line describing the mechanism."""
        if self.kind == "learned":
            assert self.table is not None
            text = f"learned absolute {self.table.shape[0]}x{self.table.shape[1]}"
            text += f" (offset {self.offset})"
        elif self.kind == "rotary":
            text = (
                f"rotary theta={self.theta} type={self.rope_type} rotary_dim={self.rotary_dim}"
                f" head_dim={self.head_dim}"
            )
        elif self.kind == "alibi":
            text = f"ALiBi ({self.alibi_style}) {self.num_heads} heads"
        elif self.kind == "relative_buckets":
            direction = "bidirectional" if self.bidirectional else "unidirectional"
            text = (
                f"relative buckets {self.num_buckets} buckets, max distance {self.max_distance},"
                f" {direction}, {self.num_heads} heads"
            )
        else:
            text = "no positional mechanism"
        return f"{text} [{self.source}]"


# --------------------------------------------------------------------------------------- formulas


def alibi_slopes(
    num_heads: int, *, style: str = "bloom", alibi_bias_max: float = 8.0
) -> np.ndarray:
    """ALiBi slopes ``m_h`` (float64, shape ``(num_heads,)``), as the model family computes them.

    ``style="bloom"`` (Press et al.'s reference code, BLOOM, Falcon): with ``P = 2^floor(log2 H)``,
    ``m_h = 2^(-8h/P)`` for ``h = 1..P``; when ``H`` is not a power of two the remaining heads take
    the odd powers ``2^(-4k/P)``, ``k = 1, 3, 5, ...``. (Falcon multiplies these in bfloat16.)

    ``style="mpt"``: with ``P = 2^ceil(log2 H)``, ``m_h = 2^(-h * alibi_bias_max / P)`` for
    ``h = 1..P``; when ``P != H`` the odd-indexed then the even-indexed slopes are kept, the
    first ``H`` of them.
    """
    if int(num_heads) != num_heads or num_heads < 1:
        raise PosgeomError(f"num_heads must be a positive integer, got {num_heads!r}")
    h = int(num_heads)
    if style == "bloom":
        closest = 2 ** math.floor(math.log2(h))
        base = 2.0 ** (-8.0 / closest)
        slopes = base ** np.arange(1, closest + 1, dtype=np.float64)
        if closest != h:
            extra_base = 2.0 ** (-4.0 / closest)
            remaining = min(closest, h - closest)
            extra = extra_base ** np.arange(1, 2 * remaining, 2, dtype=np.float64)
            slopes = np.concatenate([slopes, extra])
        return slopes
    if style == "mpt":
        p = 2 ** math.ceil(math.log2(h))
        base = np.arange(1, p + 1, dtype=np.float64) * (float(alibi_bias_max) / p)
        slopes = 1.0 / np.power(2.0, base)
        if p != h:
            slopes = np.concatenate([slopes[1::2], slopes[::2]])[:h]
        return slopes
    raise PosgeomError(f"unknown ALiBi style {style!r}; use 'bloom' or 'mpt'")


def relative_position_bucket(
    relative_position: np.ndarray | torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> np.ndarray:
    """T5's bucket of each relative position ``r = key_position - query_position`` (int64 array).

    Bidirectional: half the buckets for ``r > 0``. Within a half, ``|r| < max_exact = B/2`` gets its
    own bucket; larger ``|r|`` fall into ``max_exact + floor(log(|r|/max_exact) /
    log(max_distance/max_exact) * (B - max_exact))``, capped at ``B - 1``. Unidirectional: only
    ``r <= 0`` are distinguished (``r > 0`` share bucket 0). Computed with torch float32 exactly as
    transformers does (MPNet's bucket function is the bidirectional case), so boundaries agree.
    """
    rel = torch.as_tensor(np.asarray(relative_position), dtype=torch.long)
    buckets = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (rel > 0).to(torch.long) * num_buckets
        rel = torch.abs(rel)
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    if_large = max_exact + (
        torch.log(rel.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
    buckets = buckets + torch.where(is_small, rel, if_large)
    return buckets.numpy().astype(np.int64)


# -------------------------------------------------------------------------------------- detection


def _config_get(config: Any, *names: str) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return None


def _num_heads(config: Any) -> int | None:
    value = _config_get(config, "num_attention_heads", "n_head", "n_heads", "num_heads")
    return None if value is None else int(value)


def _head_dim(config: Any) -> int | None:
    value = getattr(config, "head_dim", None)
    if isinstance(value, int) and value > 0:
        return value
    hidden = _config_get(config, "hidden_size", "n_embd", "d_model")
    heads = _num_heads(config)
    if hidden and heads:
        return int(hidden) // heads
    return None


def _parent(model: torch.nn.Module, name: str) -> torch.nn.Module:
    if "." not in name:
        return model
    return model.get_submodule(name.rsplit(".", 1)[0])


def _learned(model: torch.nn.Module, offset: int | None) -> list[PositionalMechanism]:
    found: list[PositionalMechanism] = []
    seen: set[int] = set()
    for name, module in model.named_modules():
        last = name.rsplit(".", 1)[-1]
        if last not in LEARNED_NAMES or not isinstance(module, torch.nn.Embedding):
            continue
        weight = module.weight
        if id(weight) in seen:
            continue
        seen.add(id(weight))
        if offset is not None:
            off = int(offset)
        elif isinstance(getattr(module, "offset", None), int):
            off = int(module.offset)
        elif module.padding_idx is not None:
            off = int(module.padding_idx) + 1
        else:
            off = 0
        if off >= weight.shape[0]:
            raise PosgeomError(
                f"offset {off} leaves no rows in {name}.weight ({weight.shape[0]} rows); "
                "pass a smaller learned_offset"
            )
        found.append(
            PositionalMechanism(
                kind="learned",
                source=f"{name}.weight",
                table=_to_numpy(weight[off:]),
                offset=off,
            )
        )
    for name, param in model.named_parameters():
        last = name.rsplit(".", 1)[-1]
        if last not in LEARNED_NAMES or id(param) in seen:
            continue
        tensor = param.detach()
        while tensor.ndim > 2 and tensor.shape[0] == 1:
            tensor = tensor[0]
        if tensor.ndim != 2:
            continue
        seen.add(id(param))
        off = int(offset or 0)
        found.append(
            PositionalMechanism(
                kind="learned", source=name, table=_to_numpy(tensor[off:]), offset=off
            )
        )
    return found


def _rope_parameters(config: Any, layer_type: str | None) -> dict[str, Any] | None:
    params = getattr(config, "rope_parameters", None)
    if isinstance(params, Mapping) and layer_type and isinstance(params.get(layer_type), Mapping):
        params = params[layer_type]
    if isinstance(params, Mapping) and ("rope_theta" in params or "rope_type" in params):
        return dict(params)
    scaling = getattr(config, "rope_scaling", None)
    if isinstance(scaling, Mapping) and layer_type and isinstance(scaling.get(layer_type), Mapping):
        scaling = scaling[layer_type]
    out: dict[str, Any] = dict(scaling) if isinstance(scaling, Mapping) else {}
    theta = _config_get(config, "rope_theta", "rotary_emb_base", "rotary_base")
    if theta is not None:
        out.setdefault("rope_theta", theta)
    return out or None


def _rotary_fraction_from_config(config: Any, params: Mapping[str, Any] | None) -> float | None:
    if params and params.get("partial_rotary_factor") is not None:
        return float(params["partial_rotary_factor"])
    value = _config_get(config, "partial_rotary_factor", "rotary_pct")
    if value is not None:
        return float(value)
    rotary_dim = getattr(config, "rotary_dim", None)
    head_dim = _head_dim(config)
    if rotary_dim and head_dim:
        return float(rotary_dim) / head_dim
    return None


def _rotary(model: torch.nn.Module, config: Any) -> list[PositionalMechanism]:
    if getattr(config, "rotary", True) is False:  # e.g. Falcon with alibi=True
        return []
    found: list[PositionalMechanism] = []
    seen: list[tuple[str | None, np.ndarray]] = []
    head_dim = _head_dim(config)
    for name, buffer in model.named_buffers():
        last = name.rsplit(".", 1)[-1]
        if not last.endswith("inv_freq") or last.endswith(("original_inv_freq", "long_inv_freq")):
            continue
        prefix = last[: -len("inv_freq")].rstrip("_")
        layer_type = prefix or None
        inv_freq = _to_numpy(buffer)
        if any(lt == layer_type and np.array_equal(v, inv_freq) for lt, v in seen):
            continue
        seen.append((layer_type, inv_freq))
        owner = _parent(model, name)
        scaling_attr = f"{layer_type}_attention_scaling" if layer_type else "attention_scaling"
        attention_scaling = getattr(owner, scaling_attr, getattr(owner, "attention_scaling", 1.0))
        params = _rope_parameters(config, layer_type)
        rotary_dim = 2 * int(inv_freq.shape[0])
        theta = None if not params or params.get("rope_theta") is None else params["rope_theta"]
        rope_type = (params or {}).get("rope_type", (params or {}).get("type", "default"))
        found.append(
            PositionalMechanism(
                kind="rotary",
                source=name,
                theta=None if theta is None else float(theta),
                inv_freq=inv_freq,
                rope_type=str(rope_type),
                rope_scaling=None if params is None else MappingProxyType(params),
                rotary_fraction=(
                    rotary_dim / head_dim
                    if head_dim
                    else _rotary_fraction_from_config(config, params)
                ),
                head_dim=head_dim,
                rotary_dim=rotary_dim,
                attention_scaling=float(attention_scaling)
                if isinstance(attention_scaling, (int, float))
                else 1.0,
                layer_type=layer_type,
            )
        )
    if found:
        return found
    # No buffer: fall back on the configuration (default, unscaled frequencies).
    params = _rope_parameters(config, None)
    says_rotary = getattr(config, "position_embedding_type", None) in ("rotary", "rope")
    if not params or params.get("rope_theta") is None:
        if not says_rotary:
            return []
        params = dict(params or {})
        params.setdefault("rope_theta", 10000.0)
    fraction = _rotary_fraction_from_config(config, params)
    if head_dim is None:
        raise PosgeomError(
            "the configuration names a rotary encoding but neither head_dim nor "
            "hidden_size/num_attention_heads, so the rotary width is unknown"
        )
    rotary_dim = int(getattr(config, "rotary_dim", None) or int(head_dim * (fraction or 1.0)))
    theta = float(params["rope_theta"])
    inv_freq = 1.0 / theta ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    return [
        PositionalMechanism(
            kind="rotary",
            source="config.rope_parameters (default frequencies computed from rope_theta)",
            theta=theta,
            inv_freq=_readonly(inv_freq),
            rope_type=str(params.get("rope_type", params.get("type", "default"))),
            rope_scaling=MappingProxyType(params),
            rotary_fraction=rotary_dim / head_dim,
            head_dim=head_dim,
            rotary_dim=rotary_dim,
            attention_scaling=1.0,
        )
    ]


def _alibi(model: torch.nn.Module, config: Any) -> list[PositionalMechanism]:
    style: str | None = None
    source = ""
    bias_max = 8.0
    attn_config = getattr(config, "attn_config", None)
    attn_alibi = (
        attn_config.get("alibi")
        if isinstance(attn_config, Mapping)
        else getattr(attn_config, "alibi", None)
    )
    if attn_alibi:
        style, source = "mpt", "config.attn_config.alibi"
        value = (
            attn_config.get("alibi_bias_max")
            if isinstance(attn_config, Mapping)
            else getattr(attn_config, "alibi_bias_max", None)
        )
        bias_max = float(value) if value is not None else 8.0
    elif getattr(config, "alibi", None) is True:
        style, source = "bloom", "config.alibi"
    elif getattr(config, "position_embedding_type", None) == "alibi":
        style, source = "bloom", "config.position_embedding_type"
    else:
        for name, module in model.named_modules():
            if callable(getattr(type(module), "build_mpt_alibi_tensor", None)):
                style, source = "mpt", f"{name or type(module).__name__}.build_mpt_alibi_tensor"
                break
            if callable(getattr(type(module), "build_alibi_tensor", None)):
                style, source = "bloom", f"{name or type(module).__name__}.build_alibi_tensor"
                break
    if style is None:
        return []
    heads = _num_heads(config)
    if heads is None:
        raise PosgeomError(
            "the model uses ALiBi but its configuration has no head count "
            "(num_attention_heads / n_head / n_heads)"
        )
    return [
        PositionalMechanism(
            kind="alibi",
            source=source,
            slopes=_readonly(alibi_slopes(heads, style=style, alibi_bias_max=bias_max)),
            alibi_style=style,
            num_heads=heads,
        )
    ]


def _signature_default(owner: torch.nn.Module, parameter: str) -> Any:
    for method in _BUCKET_METHODS:
        function = getattr(owner, method, None)
        if function is None:
            continue
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # pragma: no cover - builtins
            continue
        param = signature.parameters.get(parameter)
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
    return None


def _relative(model: torch.nn.Module, config: Any) -> list[PositionalMechanism]:
    found: list[PositionalMechanism] = []
    for name, module in model.named_modules():
        last = name.rsplit(".", 1)[-1]
        if last not in RELATIVE_BIAS_NAMES or not isinstance(module, torch.nn.Embedding):
            continue
        owner = _parent(model, name)
        rows, heads = module.weight.shape
        num_buckets = (
            getattr(owner, "relative_attention_num_buckets", None)
            or _signature_default(owner, "num_buckets")
            or getattr(config, "relative_attention_num_buckets", None)
            or rows
        )
        max_distance = (
            getattr(owner, "relative_attention_max_distance", None)
            or _signature_default(owner, "max_distance")
            or getattr(config, "relative_attention_max_distance", None)
            or 128
        )
        is_decoder = getattr(owner, "is_decoder", None)
        bidirectional = True if is_decoder is None else not bool(is_decoder)
        if int(num_buckets) > rows:
            raise PosgeomError(
                f"{name} has {rows} rows but the model uses {num_buckets} buckets; "
                "the checkpoint and its configuration disagree"
            )
        found.append(
            PositionalMechanism(
                kind="relative_buckets",
                source=f"{name}.weight",
                num_buckets=int(num_buckets),
                max_distance=int(max_distance),
                bidirectional=bidirectional,
                bias_table=_to_numpy(module.weight),
                num_heads=int(heads),
            )
        )
    return found


_LOOKED_FOR = (
    "learned tables (nn.Embedding or parameters named "
    + ", ".join(LEARNED_NAMES)
    + "); rotary buffers named *inv_freq or config fields rope_parameters / rope_theta / "
    "rope_scaling / rotary_emb_base / position_embedding_type='rotary'; ALiBi via config.alibi, "
    "config.attn_config.alibi, position_embedding_type='alibi' or a build_alibi_tensor / "
    "build_mpt_alibi_tensor method; relative buckets as nn.Embedding named "
    + ", ".join(RELATIVE_BIAS_NAMES)
)


def _resolve_model(model_or_name_or_path: Any, **load_kwargs: Any) -> torch.nn.Module:
    if isinstance(model_or_name_or_path, (str, os.PathLike)):
        from posgeom.models.loading import load_model

        return load_model(model_or_name_or_path, **load_kwargs)
    if not isinstance(model_or_name_or_path, torch.nn.Module):
        raise PosgeomError(
            "expected a torch model, a Hugging Face model name or a local folder path, got "
            f"{type(model_or_name_or_path).__name__}"
        )
    return model_or_name_or_path


def find_positional_mechanisms(
    model_or_name_or_path: Any,
    *,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> tuple[PositionalMechanism, ...]:
    """Every positional mechanism of a model, in detection order (see the module docstring).

    ``model_or_name_or_path``: a loaded ``torch.nn.Module`` (any Hugging Face model, with or
    without a head), a hub name present in the local cache, or a local folder (loaded offline with
    :func:`posgeom.models.loading.load_model`; ``load_kwargs`` go there). ``learned_offset``
    overrides the detected offset of learned tables. ``on_missing="none"`` returns a single
    ``kind="none"`` mechanism instead of raising when nothing is found.
    """
    if on_missing not in ("raise", "none"):
        raise PosgeomError(f"on_missing must be 'raise' or 'none', got {on_missing!r}")
    model = _resolve_model(model_or_name_or_path, **load_kwargs)
    config = getattr(model, "config", None)
    alibi = _alibi(model, config)
    found = [
        *_learned(model, learned_offset),
        *([] if alibi else _rotary(model, config)),
        *alibi,
        *_relative(model, config),
    ]
    if not found:
        if on_missing == "none":
            return (PositionalMechanism(kind="none", source="nothing found"),)
        raise PosgeomError(
            f"no positional mechanism found in {type(model).__name__} "
            f"(model_type={getattr(config, 'model_type', None)!r}). Looked for: {_LOOKED_FOR}. "
            "If the model has no positional encoding (NoPE), pass on_missing='none'; otherwise "
            "extract the table yourself and build a PositionalMechanism"
        )
    return tuple(found)


def find_positional_mechanism(
    model_or_name_or_path: Any,
    *,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> PositionalMechanism:
    """The model's primary positional mechanism, with any further ones in ``.others``.

    Primary is the first found: learned absolute, then rotary, ALiBi, relative buckets. MPNet
    gives ``kind="learned"`` (514-row table from row 2, so 512 x 768) with the relative buckets in
    ``others``; T5 gives the encoder's bidirectional buckets with the decoder's in ``others``.
    See :func:`find_positional_mechanisms` for the arguments.
    """
    found = find_positional_mechanisms(
        model_or_name_or_path, learned_offset=learned_offset, on_missing=on_missing, **load_kwargs
    )
    first = found[0]
    if len(found) == 1:
        return first
    return dataclasses.replace(first, others=tuple(found[1:]))


def model_position_limit(model: torch.nn.Module) -> int | None:
    """How many positions the model can take: learned-table rows after the offset, else
    ``max_position_embeddings`` / ``n_positions`` / ``max_seq_len`` from the config, else None."""
    for name, module in model.named_modules():
        last = name.rsplit(".", 1)[-1]
        if last in LEARNED_NAMES and isinstance(module, torch.nn.Embedding):
            if isinstance(getattr(module, "offset", None), int):
                off = int(module.offset)
            elif module.padding_idx is not None:
                off = int(module.padding_idx) + 1
            else:
                off = 0
            return int(module.num_embeddings) - off
    config = getattr(model, "config", None)
    value = _config_get(config, "max_position_embeddings", "n_positions", "max_seq_len")
    return None if value is None else int(value)


# -------------------------------------------------------------------------------------- geometry


def _head_select(stack: np.ndarray, head: int | None, num_heads: int) -> np.ndarray:
    if head is None:
        return stack
    if not -num_heads <= int(head) < num_heads:
        raise PosgeomError(f"head {head} is out of range for {num_heads} heads")
    return np.ascontiguousarray(stack[int(head)])


def to_encoding(mechanism: PositionalMechanism, n: int, *, head: int | None = None) -> np.ndarray:
    """The geometry of the first ``n`` positions of ``mechanism`` as a float64 numpy array.

    - ``learned``: vectors ``(n, d)``, the rows ``0..n-1`` after the offset.
    - ``rotary``: vectors ``(n, rotary_dim)``: each 2-D plane's unit vector ``(1, 0)`` rotated by
      ``i * w_k``, i.e. columns ``(cos i w_0, sin i w_0, cos i w_1, sin i w_1, ...)``; Euclidean
      distance ``||p_i - p_j||^2 = sum_k 2 - 2 cos((i - j) w_k)``. ``attention_scaling`` is not
      applied (unit planes, norm ``sqrt(rotary_dim / 2)``).
    - ``alibi``: distances ``D_ij = m_h |i - j|`` (the rank-1 geometry of the bias ``-m_h |i-j|``).
    - ``relative_buckets``: distances from bias differences,
      ``D_ij = (|b_h(r_ij) - b_h(0)| + |b_h(r_ji) - b_h(0)|) / 2`` with ``r_ij = j - i`` and
      ``b_h(r)`` the bias of ``r``'s bucket for head ``h`` (how much the bias a query at ``i`` gives
      key ``j`` differs from the bias it gives itself, symmetrised). For ALiBi this reduces to
      ``m_h |i - j|``.
    - ``none``: vectors ``(n, 1)`` of zeros (every position at the same point).

    For the per-head kinds, ``head=None`` returns all heads stacked, shape ``(num_heads, n, n)``;
    ``head=h`` returns the ``(n, n)`` matrix of head ``h``. Only ``mechanism`` itself is
    converted, not ``mechanism.others``.
    """
    if int(n) != n or n < 1:
        raise PosgeomError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    kind = mechanism.kind
    if kind == "learned":
        assert mechanism.table is not None
        rows = mechanism.table.shape[0]
        if n > rows:
            raise PosgeomError(
                f"the learned table ({mechanism.source}) has {rows} positions, fewer than n={n}; "
                f"use n <= {rows}"
            )
        return np.array(mechanism.table[:n], dtype=np.float64)
    if kind == "rotary":
        assert mechanism.inv_freq is not None
        angles = np.arange(n, dtype=np.float64)[:, None] * mechanism.inv_freq[None, :]
        out = np.empty((n, 2 * angles.shape[1]), dtype=np.float64)
        out[:, 0::2] = np.cos(angles)
        out[:, 1::2] = np.sin(angles)
        return out
    if kind == "alibi":
        assert mechanism.slopes is not None
        gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(np.float64)
        stack = mechanism.slopes[:, None, None] * gap[None]
        return _head_select(stack, head, stack.shape[0])
    if kind == "relative_buckets":
        assert mechanism.bias_table is not None
        positions = np.arange(n)
        rel = positions[None, :] - positions[:, None]  # r_ij = j - i (key minus query)
        kwargs = {
            "bidirectional": bool(mechanism.bidirectional),
            "num_buckets": int(mechanism.num_buckets or mechanism.bias_table.shape[0]),
            "max_distance": int(mechanism.max_distance or 128),
        }
        bias = mechanism.bias_table[relative_position_bucket(rel, **kwargs)]  # (n, n, H)
        zero = mechanism.bias_table[relative_position_bucket(np.zeros(1, np.int64), **kwargs)[0]]
        diff = np.abs(bias - zero[None, None, :])
        dist = 0.5 * (diff + diff.transpose(1, 0, 2))
        stack = np.ascontiguousarray(dist.transpose(2, 0, 1))
        return _head_select(stack, head, stack.shape[0])
    return np.zeros((n, 1), dtype=np.float64)


# -------------------------------------------------------------------- posgeom encodings (registry)


def _encoding_key(kind: str, repeat: int, layer_type: str | None) -> str:
    name = {"rotary": "rope", "none": "nope"}.get(kind, kind)
    if layer_type:
        name += f"_{layer_type}"
    return name if repeat == 1 else f"{name}_{repeat}"


def mechanism_encodings(
    model_or_mechanisms: Any,
    n: int,
    *,
    start: int = 0,
    learned_offset: int | None = None,
    on_missing: str = "raise",
    **load_kwargs: Any,
) -> dict[str, Any]:
    """A model's positional mechanisms as :class:`posgeom.encodings.PositionEncoding` objects.

    ``model_or_mechanisms``: a model, a name or local folder (loaded offline, ``load_kwargs`` go to
    :func:`~posgeom.models.loading.load_model`), a :class:`PositionalMechanism` (it and its
    ``others``), or a sequence of them. Every encoding covers ``n`` positions; ``start`` shifts
    the first position (row ``start`` of a learned table is position 0 of the encoding; use 1 to
    line the table up with a corpus counted without a leading ``[CLS]``; relative kinds depend on
    ``i - j`` only, so ``start`` does not change their distances).

    Keys and values (all float64; geometry as in :func:`to_encoding`):

    - ``"learned"``: vectors ``(n, d)`` = table rows ``offset + start .. offset + start + n - 1``
      (exactly the model's rows); ``params`` name the source, offset and start.
    - ``"rope"`` (``"rope_<layer_type>"`` for per-layer-type set-ups): a
      :class:`~posgeom.encodings.RoPEEncoding`, vectors ``(n, rotary_dim)``
      ``[cos(i w_0), sin(i w_0), cos(i w_1), ...]`` (interleaved layout, unit planes) with the
      model's own inverse frequencies ``w_k`` (scaling variants already applied).
    - ``"alibi"``: all heads as columns, vectors ``(n, H)`` with column ``h`` = ``m_h i``
      (Euclidean distance ``||m|| |i - j|``, as :func:`posgeom.encodings.alibi` with ``head=None``);
      plus ``"alibi_h<h>"``: one head, vectors ``(n, 1)`` = ``m_h i``.
    - ``"relative_buckets_h<h>"``: one bucket head, a distance matrix only (``vectors=None``).
    - ``"nope"``: zero vectors ``(n, 1)`` (``on_missing="none"`` and nothing found).

    A kind found twice (T5 encoder and decoder buckets) gets ``_2``, ``_3`` ... after the kind.
    """
    from posgeom.encodings import PositionEncoding, RoPEEncoding

    if isinstance(model_or_mechanisms, PositionalMechanism):
        mechanisms: tuple[PositionalMechanism, ...] = model_or_mechanisms.all
    elif isinstance(model_or_mechanisms, (list, tuple)) and all(
        isinstance(m, PositionalMechanism) for m in model_or_mechanisms
    ):
        mechanisms = tuple(m for mech in model_or_mechanisms for m in mech.all)
    else:
        mechanisms = find_positional_mechanisms(
            model_or_mechanisms,
            learned_offset=learned_offset,
            on_missing=on_missing,
            **load_kwargs,
        )
    if int(n) != n or n < 1:
        raise PosgeomError(f"n must be a positive integer, got {n!r}")
    if int(start) != start or start < 0:
        raise PosgeomError(f"start must be a non-negative integer, got {start!r}")
    n, start = int(n), int(start)
    out: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for mech in mechanisms:
        base = _encoding_key(mech.kind, 1, mech.layer_type)
        seen[base] = seen.get(base, 0) + 1
        key = _encoding_key(mech.kind, seen[base], mech.layer_type)
        params: dict[str, Any] = {"kind": mech.kind, "source": mech.source, "start": start}
        if mech.kind == "learned":
            table = to_encoding(mech, n + start)[start:]
            params.update(offset=mech.offset, table_rows=mech.n_positions)
            out[key] = PositionEncoding("learned", table, params)
        elif mech.kind == "rotary":
            assert mech.inv_freq is not None
            angles = np.arange(start, start + n, dtype=np.float64)[:, None] * mech.inv_freq
            vectors = np.empty((n, 2 * angles.shape[1]), dtype=np.float64)
            vectors[:, 0::2] = np.cos(angles)
            vectors[:, 1::2] = np.sin(angles)
            params.update(
                theta=mech.theta,
                rope_type=mech.rope_type,
                rotary_dim=mech.rotary_dim,
                head_dim=mech.head_dim,
                layout="interleaved",
                normalize="plane",
            )
            out[key] = RoPEEncoding(
                "rope",
                vectors,
                params,
                inv_freq=mech.inv_freq,
                attention_factor=float(mech.attention_scaling or 1.0),
                layout="interleaved",
            )
        elif mech.kind == "alibi":
            assert mech.slopes is not None
            column = np.arange(start, start + n, dtype=np.float64)[:, None]
            params.update(alibi_style=mech.alibi_style, n_heads=mech.num_heads, head=None)
            out[key] = PositionEncoding("alibi", column * mech.slopes[None, :], params)
            for h, slope in enumerate(mech.slopes):
                out[f"{key}_h{h}"] = PositionEncoding(
                    "alibi", column * float(slope), {**params, "head": h, "slope": float(slope)}
                )
        elif mech.kind == "relative_buckets":
            stack = to_encoding(mech, n)
            params.update(
                num_buckets=mech.num_buckets,
                max_distance=mech.max_distance,
                bidirectional=mech.bidirectional,
                n_heads=mech.num_heads,
            )
            for h in range(stack.shape[0]):
                out[f"{key}_h{h}"] = PositionEncoding(
                    "relative_buckets", None, {**params, "head": h}, distance_matrix=stack[h]
                )
        else:
            out[key] = PositionEncoding("nope", np.zeros((n, 1)), params)
    return out
