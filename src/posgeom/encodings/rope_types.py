"""RoPE inverse frequencies per rope type: one function and one validator per type.

:data:`ROPE_TYPES` is keyed by the ``rope_type`` names of Hugging Face transformers
(``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS`` plus ``"default"``), and computes what
those functions compute, in float64 (transformers computes in float32). Every function takes the
per-head width ``head_dim``, the base ``theta`` (``rope_theta``), the rope parameter dict as
transformers spells it, the current ``seq_len`` and the model's ``max_position_embeddings``
(``context``), and returns ``(inv_freq, attention_factor)``: ``(dim/2,)`` inverse frequencies
(``dim = int(head_dim * partial_rotary_factor)``) and the factor cos and sin are multiplied by.

- ``default``: ``w_k = theta^(-2k/dim)``.
- ``linear`` (position interpolation): ``w_k / factor``.
- ``dynamic`` (dynamic NTK): ``theta' = theta (factor L / L0 - (factor - 1))^(dim/(dim-2))`` with
  ``L = max(seq_len, L0)``, ``L0 = context``: no change while ``seq_len <= L0``.
- ``ntk`` (posgeom only, static NTK-aware scaling, bloc97): ``theta' = theta factor^(dim/(dim-2))``
  at every length. Not a transformers type; ``"dynamic"`` is the NTK variant transformers has.
- ``yarn``: the ramp between interpolated and extrapolated frequencies (``beta_fast``,
  ``beta_slow``, ``truncate``), attention factor ``0.1 ln(factor) + 1`` (or from ``mscale``).
- ``longrope``: ``w_k = 1 / (ext_k theta^(2k/dim))`` with ``ext = long_factor`` when
  ``seq_len > original_max_position_embeddings``, else ``short_factor``; attention factor
  ``sqrt(1 + ln(factor) / ln(original))``.
- ``llama3``: wavelengths ``2 pi / w_k`` above ``original / low_freq_factor`` divided by
  ``factor``, below ``original / high_freq_factor`` kept, smoothly interpolated in between.
- ``proportional``: the first ``int(partial_rotary_factor head_dim / 2)`` planes rotate with
  ``theta^(-2k/head_dim)``, the others not at all (zero frequency), divided by ``factor``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import check_base, check_even
from posgeom.encodings._hf import config_get
from posgeom.encodings._hf import head_dim as head_dim_of

__all__ = [
    "LAYOUTS",
    "ROPE_TYPES",
    "RopeType",
    "config_rope_parameters",
    "config_rotary_fraction",
    "ntk_base",
    "rope_frequencies",
    "rope_inverse_frequencies",
    "rope_type_of",
    "rotary_vectors",
    "yarn_mscale",
]

Params = Mapping[str, Any]


@dataclass(frozen=True)
class RopeType:
    """One rope type: ``validate(params, head_dim)`` raises, ``frequencies(...)`` computes."""

    frequencies: Callable[..., tuple[np.ndarray, float]]
    validate: Callable[[Params, int], None]


def _dim(head_dim: int, p: Params) -> int:
    return int(head_dim * float(p.get("partial_rotary_factor") or 1.0))


def _exponents(dim: int, over: int | None = None) -> np.ndarray:
    return np.arange(0, dim, 2, dtype=np.float64) / (over or dim)


def _factor(p: Params, rope_type: str) -> None:
    value = p.get("factor")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise PosgeomError(
            f"RoPE scaling {rope_type!r} needs a numeric factor, got {value!r}"
        ) from None
    if not np.isfinite(f) or f <= 0.0:
        raise PosgeomError(f"RoPE scaling {rope_type!r} needs factor > 0, got {value!r}")


def _require(p: Params, rope_type: str, *keys: str) -> None:
    missing = [k for k in keys if p.get(k) is None]
    if missing:
        raise PosgeomError(
            f"RoPE scaling {rope_type!r} needs {', '.join(missing)} "
            f"(for example {missing[0]}=<value> as in the model's rope_parameters)"
        )


# ------------------------------------------------------------------------------ types
def _default(head_dim: int, base: float, p: Params, **_: Any) -> tuple[np.ndarray, float]:
    return base ** -_exponents(_dim(head_dim, p)), 1.0


def _linear(head_dim: int, base: float, p: Params, **_: Any) -> tuple[np.ndarray, float]:
    return base ** -_exponents(_dim(head_dim, p)) / float(p["factor"]), 1.0


def ntk_base(base: float, ratio: float, dim: int) -> float:
    """The NTK-aware base ``theta ratio^(d / (d - 2))`` (``d``: the rotary width): static NTK at
    ``ratio = s``, dynamic NTK at ``ratio = s n / L0 - (s - 1)``."""
    return base * ratio ** (dim / (dim - 2))


def _dynamic(
    head_dim: int, base: float, p: Params, *, seq_len: Any = None, context: Any = None
) -> tuple[np.ndarray, float]:
    dim, factor = _dim(head_dim, p), float(p["factor"])
    l0 = context or seq_len
    if l0 is None:
        raise PosgeomError(
            "RoPE scaling 'dynamic' needs the model context (max_position_embeddings)"
        )
    length = max(seq_len or l0, l0)
    new_base = ntk_base(base, factor * length / l0 - (factor - 1), dim)
    return new_base ** -_exponents(dim), 1.0


def _ntk(head_dim: int, base: float, p: Params, **_: Any) -> tuple[np.ndarray, float]:
    dim = _dim(head_dim, p)
    return ntk_base(base, float(p["factor"]), dim) ** -_exponents(dim), 1.0


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention factor ``0.1 mscale ln s + 1`` (1 for ``s <= 1``; ``mscale`` 1: the
    default ``0.1 ln s + 1``), as transformers, vLLM and llama.cpp compute it."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn_attention(p: Params, factor: float) -> float:
    if p.get("attention_factor") is not None:
        return float(p["attention_factor"])
    mscale, mscale_all = p.get("mscale"), p.get("mscale_all_dim")
    if mscale and mscale_all:
        return yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all)
    return yarn_mscale(factor)


def _yarn(
    head_dim: int, base: float, p: Params, *, context: Any = None, **_: Any
) -> tuple[np.ndarray, float]:
    dim, l0 = _dim(head_dim, p), float(p["original_max_position_embeddings"])
    factor = float(p["factor"]) if p.get("factor") is not None else float(context) / l0

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(l0 / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = correction_dim(float(p.get("beta_fast") or 32))
    high = correction_dim(float(p.get("beta_slow") or 1))
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation = 1.0 - ramp  # weight of the unscaled frequencies
    pos_freqs = base ** _exponents(dim)
    theta = (1.0 / (factor * pos_freqs)) * ramp + (1.0 / pos_freqs) * extrapolation
    return theta, _yarn_attention(p, factor)


def _longrope(
    head_dim: int, base: float, p: Params, *, seq_len: Any = None, context: Any = None
) -> tuple[np.ndarray, float]:
    dim, l0 = _dim(head_dim, p), float(p["original_max_position_embeddings"])
    factor = p.get("factor")
    factor = float(context) / l0 if factor is None and context else float(factor or 1.0)
    att = p.get("attention_factor")
    if att is None:
        att = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(l0))
    ext = p["long_factor"] if seq_len and seq_len > l0 else p["short_factor"]
    return 1.0 / (np.asarray(ext, dtype=np.float64) * base ** _exponents(dim)), float(att)


def _llama3(head_dim: int, base: float, p: Params, **_: Any) -> tuple[np.ndarray, float]:
    inv = base ** -_exponents(_dim(head_dim, p))
    factor, old = float(p["factor"]), float(p["original_max_position_embeddings"])
    low, high = float(p["low_freq_factor"]), float(p["high_freq_factor"])
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return np.where(medium, smoothed, scaled), 1.0


def _proportional(head_dim: int, base: float, p: Params, **_: Any) -> tuple[np.ndarray, float]:
    angles = int(float(p.get("partial_rotary_factor") or 1.0) * head_dim // 2)
    inv = np.zeros(head_dim // 2)
    inv[:angles] = base ** -_exponents(2 * angles, over=head_dim)
    return inv / float(p.get("factor") or 1.0), 1.0


# ------------------------------------------------------------------------------ validators
def _check_none(p: Params, head_dim: int) -> None:
    return None


def _check_factor(rope_type: str) -> Callable[[Params, int], None]:
    def check(p: Params, head_dim: int) -> None:
        _factor(p, rope_type)
        if rope_type in ("dynamic", "ntk") and _dim(head_dim, p) <= 2:
            raise PosgeomError(f"RoPE scaling {rope_type!r} needs a rotary width > 2")

    return check


def _check_yarn(p: Params, head_dim: int) -> None:
    _require(p, "yarn", "original_max_position_embeddings")
    if p.get("factor") is not None:
        _factor(p, "yarn")


def _check_longrope(p: Params, head_dim: int) -> None:
    _require(p, "longrope", "short_factor", "long_factor", "original_max_position_embeddings")
    half = _dim(head_dim, p) // 2
    for key in ("short_factor", "long_factor"):
        if len(p[key]) != half:
            raise PosgeomError(
                f"RoPE scaling 'longrope': {key} has {len(p[key])} values, expected {half} "
                "(one per rotary plane)"
            )


def _check_llama3(p: Params, head_dim: int) -> None:
    _require(p, "llama3", "factor", "low_freq_factor", "high_freq_factor")
    _require(p, "llama3", "original_max_position_embeddings")
    _factor(p, "llama3")
    if not float(p["low_freq_factor"]) < float(p["high_freq_factor"]):
        raise PosgeomError("RoPE scaling 'llama3' needs low_freq_factor < high_freq_factor")


#: rope type -> (inverse frequencies, validator), keyed as transformers' ``rope_type``.
ROPE_TYPES: dict[str, RopeType] = {
    "default": RopeType(_default, _check_none),
    "linear": RopeType(_linear, _check_factor("linear")),
    "dynamic": RopeType(_dynamic, _check_factor("dynamic")),
    "yarn": RopeType(_yarn, _check_yarn),
    "longrope": RopeType(_longrope, _check_longrope),
    "llama3": RopeType(_llama3, _check_llama3),
    "proportional": RopeType(_proportional, _check_none),
    "ntk": RopeType(_ntk, _check_factor("ntk")),
}


def rope_frequencies(
    rope_type: str | None,
    head_dim: int,
    base: float = 10000.0,
    params: Params | None = None,
    *,
    seq_len: int | None = None,
    context: int | None = None,
) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_factor)`` of ``rope_type`` (``None``: ``"default"``), float64.

    ``params``: the rope parameters as transformers spells them (``factor``,
    ``original_max_position_embeddings``, ``beta_fast``, ``low_freq_factor``, ...); ``seq_len``:
    the current length (dynamic, longrope); ``context``: the model's ``max_position_embeddings``.
    """
    kind = "default" if rope_type is None else rope_type
    if kind not in ROPE_TYPES:
        raise PosgeomError(
            f"unknown RoPE scaling {rope_type!r}; use one of None, {', '.join(map(repr, ROPE_TYPES))}"
        )
    check_even(head_dim, "RoPE head_dim")
    base = check_base(base)
    p = dict(params or {})
    ROPE_TYPES[kind].validate(p, int(head_dim))
    theta, att = ROPE_TYPES[kind].frequencies(
        int(head_dim), base, p, seq_len=seq_len, context=context
    )
    return np.asarray(theta, dtype=np.float64), float(att)


def rope_inverse_frequencies(
    head_dim: int = 64,
    base: float = 10000.0,
    *,
    scaling: str | None = None,
    factor: float = 1.0,
    seq_len: int | None = None,
    original_max_position_embeddings: int | None = None,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    attention_factor: float | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    rope_parameters: Mapping[str, Any] | None = None,
) -> tuple[np.ndarray, float]:
    """``(theta, attention_factor)``: ``(head_dim/2,)`` float64 inverse frequencies of the rope
    type ``scaling`` (:data:`~posgeom.encodings.rope_types.ROPE_TYPES`) and the cos/sin scale.

    ``seq_len``: the current length (dynamic NTK, LongRoPE); ``original_max_position_embeddings``:
    the pre-training context (dynamic NTK: default ``seq_len``, no effect; YaRN, LongRoPE, Llama 3:
    required). ``rope_parameters``: further keys as transformers spells them
    (``low_freq_factor``, ``short_factor``, ``partial_rotary_factor``, ...).
    """
    params: dict[str, Any] = {
        "factor": factor,
        "original_max_position_embeddings": original_max_position_embeddings,
        "beta_fast": beta_fast,
        "beta_slow": beta_slow,
        "truncate": truncate,
        "attention_factor": attention_factor,
        "mscale": mscale,
        "mscale_all_dim": mscale_all_dim,
        **dict(rope_parameters or {}),
    }
    context = original_max_position_embeddings if scaling == "dynamic" else None
    return rope_frequencies(scaling, head_dim, base, params, seq_len=seq_len, context=context)


# ------------------------------------------------------------------------------ configurations
def config_rope_parameters(config: Any, layer_type: str | None) -> dict[str, Any] | None:
    """The rope parameters of a transformers configuration (``rope_parameters`` in transformers
    5, else ``rope_scaling`` + ``rope_theta`` / ``rotary_emb_base``), per layer type if asked."""
    params = getattr(config, "rope_parameters", None)
    if isinstance(params, Mapping) and layer_type and isinstance(params.get(layer_type), Mapping):
        params = params[layer_type]
    if isinstance(params, Mapping) and ("rope_theta" in params or "rope_type" in params):
        return dict(params)
    scaling = getattr(config, "rope_scaling", None)
    if isinstance(scaling, Mapping) and layer_type and isinstance(scaling.get(layer_type), Mapping):
        scaling = scaling[layer_type]
    out: dict[str, Any] = dict(scaling) if isinstance(scaling, Mapping) else {}
    theta = config_get(config, "rope_theta", "rotary_emb_base", "rotary_base")
    if theta is not None:
        out.setdefault("rope_theta", theta)
    return out or None


def config_rotary_fraction(config: Any, params: Mapping[str, Any] | None) -> float | None:
    """``rotary_dim / head_dim`` of a configuration (``partial_rotary_factor``, ``rotary_pct``)."""
    if params and params.get("partial_rotary_factor") is not None:
        return float(params["partial_rotary_factor"])
    value = config_get(config, "partial_rotary_factor", "rotary_pct")
    if value is not None:
        return float(value)
    rotary_dim, head_dim = getattr(config, "rotary_dim", None), head_dim_of(config)
    return float(rotary_dim) / head_dim if rotary_dim and head_dim else None


def rope_type_of(params: Mapping[str, Any] | None) -> str:
    """``rope_type`` (or the older ``type``) of a parameter dict, default ``"default"``."""
    return str((params or {}).get("rope_type", (params or {}).get("type", "default")))


LAYOUTS = ("half", "interleaved")


def rotary_vectors(
    inv_freq: np.ndarray, positions: np.ndarray, *, layout: str = "half"
) -> np.ndarray:
    """``(m, 2K)`` float64 rotary position vectors: plane ``k`` holds ``(cos p w_k, sin p w_k)``,
    the unit vector ``(1, 0)`` rotated by ``p w_k``; ``"half"`` puts the cosines in the first half
    (Hugging Face ``rotate_half``), ``"interleaved"`` alternates them (RoFormer)."""
    if layout not in LAYOUTS:
        raise PosgeomError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    ang = np.asarray(positions, dtype=np.float64)[:, None] * np.asarray(inv_freq)[None, :]
    if layout == "half":
        return np.concatenate([np.cos(ang), np.sin(ang)], axis=1)
    out = np.empty((ang.shape[0], 2 * ang.shape[1]))
    out[:, 0::2], out[:, 1::2] = np.cos(ang), np.sin(ang)
    return out
