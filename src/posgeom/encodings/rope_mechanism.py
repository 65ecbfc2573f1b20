"""The rotary mechanism of a Hugging Face model: where its frequencies are read from, and
:class:`RoPEEncoding`, the geometry both the family and a model's mechanism build.

One reader per way a model stores its rotary set-up, in :data:`ROTARY_READERS` (the first
that finds something wins; a new storage is one more function there, like transformers'
``ROPE_INIT_FUNCTIONS``):

``inv_freq``
    buffers named ``*inv_freq`` (the rotary module of Llama, Mistral, Qwen, GPT-NeoX, Phi, Gemma
    3's ``sliding_attention_inv_freq`` / ``full_attention_inv_freq``, DeepSeek's MLA, ...), one
    mechanism per buffer (per-layer-type set-ups: the prefix is the layer type), completed by
    the configuration's ``rope_parameters`` of that layer type.
``sincos``
    a position table of sines and cosines (GPT-J, CodeGen: ``embed_positions``, rows
    ``[sin(p w_0) .. sin(p w_{K-1}), cos(p w_0) .. cos(p w_{K-1})]``): any 2-D floating buffer
    whose row 0 is ``(0 .. 0, 1 .. 1)`` or ``(1 .. 1, 0 .. 0)`` and whose rows are unit
    planes. The frequencies are the least-squares slopes of the unwrapped angles
    ``atan2(sin, cos)`` over all rows (through the origin); ``theta`` is reported when the
    frequencies follow ``theta^(-2k/rotary_dim)`` to 1e-6. A table wider than a head is an
    absolute (additive) table, not a rotation, and is left alone.
``config``
    no buffer at all: the default frequencies ``theta^(-2k/dim)`` from the configuration's rotary
    base (``rope_parameters`` / ``rope_theta`` / ``rotary_emb_base``, or
    ``position_embedding_type="rotary"`` with base 10,000).

``head_dim`` is the width of the query/key head the rotation acts in (MLA: ``qk_head_dim =
qk_nope_head_dim + qk_rope_head_dim``), ``rotary_dim`` the rotated part (``2 K``). ``pairs``:
how the model pairs coordinates into planes (:func:`rotation_pairs`; ``"half"``: ``k, k + K``,
Llama; ``"interleaved"``: ``2k, 2k+1``, GPT-J, GLM); distances do not depend on it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._records import field_record
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, readonly
from posgeom.encodings._hf import query_head_dim, text_config
from posgeom.encodings._mechanism import Mechanism, MechanismParams
from posgeom.encodings.rope_types import (
    config_rope_parameters,
    config_rotary_fraction,
    rope_frequencies,
    rope_type_of,
    rotary_vectors,
)
from posgeom.encodings.value_sinusoid import embeds_values

__all__ = [
    "ROTARY_READERS",
    "RoPEEncoding",
    "RotaryParams",
    "detect_rotary",
    "rotation_pairs",
]

#: rope parameter keys that are not the type's own parameters (reported as fields of their own)
_OWN_FIELDS = ("rope_type", "type", "rope_theta")


@dataclass(frozen=True, eq=False)
class RoPEEncoding(PositionEncoding):
    """RoPE as geometry; ``inv_freq`` ``(head_dim/2,)``, ``attention_factor`` and ``layout``."""

    inv_freq: np.ndarray | None = None
    attention_factor: float = 1.0
    layout: str = "half"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "inv_freq", readonly(self.inv_freq))

    def rotate(self, x: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """Apply ``R_i`` to ``x`` of shape ``(..., m, head_dim)`` at ``positions`` (default
        ``0 .. m-1``), in this encoding's layout; with ``"half"`` this equals Hugging Face's
        ``q * cos + rotate_half(q) * sin`` (without the attention factor)."""
        x = np.asarray(x, dtype=np.float64)
        h = 2 * self.inv_freq.shape[0]
        if x.ndim < 2 or x.shape[-1] != h:
            raise PosgeomError(f"rotate expects (..., positions, {h}), got shape {x.shape}")
        pos = np.arange(x.shape[-2]) if positions is None else np.asarray(positions)
        vec = rotary_vectors(self.inv_freq, pos, layout=self.layout)
        half = self.layout == "half"  # plane k: coordinates (k, k + h/2), else (2k, 2k + 1)
        first, second = (
            (slice(0, h // 2), slice(h // 2, h)) if half else (slice(0, h, 2), slice(1, h, 2))
        )
        cos, sin, a, b = vec[:, first], vec[:, second], x[..., first], x[..., second]
        out = np.empty_like(x)
        out[..., first], out[..., second] = a * cos - b * sin, b * cos + a * sin
        return out


@dataclass(frozen=True, eq=False)
class RotaryParams(MechanismParams):
    """A model's rotary set-up: ``inv_freq`` ``w_k`` ``(rotary_dim // 2,)`` exactly as the model
    holds them (scaling applied), ``theta`` (``rope_theta``), ``rope_type``, ``rope_scaling``
    (the parameter dict, read-only), ``rotary_fraction`` (``rotary_dim / head_dim``),
    ``head_dim`` (the query/key head width), ``rotary_dim``, ``attention_scaling`` (cos/sin
    factor), ``layer_type`` (models with several rotary set-ups) and ``pairs`` (``"half"`` or
    ``"interleaved"``, ``None`` when unknown)."""

    key = "rope"
    _arrays = ("inv_freq",)

    inv_freq: np.ndarray
    theta: float | None = None
    rope_type: str = "default"
    rope_scaling: Mapping[str, Any] | None = None
    rotary_fraction: float | None = None
    head_dim: int | None = None
    rotary_dim: int | None = None
    attention_scaling: float = 1.0
    layer_type: str | None = None
    pairs: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rope_scaling is not None:
            object.__setattr__(self, "rope_scaling", MappingProxyType(dict(self.rope_scaling)))

    def summary(self) -> str:
        kind = f" ({self.layer_type})" if self.layer_type else ""
        return (
            f"rotary{kind} theta={self.theta} type={self.rope_type} rotary_dim={self.rotary_dim}"
            f" head_dim={self.head_dim}"
        )

    def type_parameters(self) -> dict[str, Any]:
        """The rope type's own parameters under transformers' names (``factor``,
        ``original_max_position_embeddings``, ``beta_fast``, ...), JSON-ready."""
        return {
            str(k): _plain(v) for k, v in (self.rope_scaling or {}).items() if k not in _OWN_FIELDS
        }

    def as_dict(self) -> dict[str, Any]:
        """The set-up, then the type's own parameters, then where it applies and ``inv_freq``."""
        return {
            **field_record(self, ("theta", "rotary_dim", "head_dim", "rope_type")),
            **self.type_parameters(),
            **field_record(self, ("layer_type", "pairs", "attention_scaling", "inv_freq")),
        }

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Vectors ``(n, rotary_dim)``, interleaved ``(cos i w_0, sin i w_0, cos i w_1, ...)``:
        ``||p_i - p_j||^2 = sum_k 2 - 2 cos((i - j) w_k)``; ``attention_scaling`` not applied."""
        return rotary_vectors(self.inv_freq, np.arange(n), layout="interleaved")

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        vectors = rotary_vectors(self.inv_freq, np.arange(start, start + n), layout="interleaved")
        params = dict(
            params,
            theta=self.theta,
            rope_type=self.rope_type,
            rotary_dim=self.rotary_dim,
            head_dim=self.head_dim,
            layout="interleaved",
            normalize="plane",
        )
        enc = RoPEEncoding(
            "rope",
            vectors,
            params,
            inv_freq=self.inv_freq,
            attention_factor=float(self.attention_scaling or 1.0),
            layout="interleaved",
        )
        return {"": enc}


def _plain(value: Any) -> Any:
    """A configuration value as plain JSON data (tuples and arrays become lists)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


_PAIRS = {(-2.0, -3.0, 0.0, 1.0): "half", (-1.0, 0.0, -3.0, 2.0): "interleaved"}


def rotation_pairs(model: Any) -> str | None:
    """How the model pairs coordinates: its modeling module's ``rotate_half`` (or GPT-J's
    ``rotate_every_two``) applied to ``(0, 1, 2, 3)``: ``(-2, -3, 0, 1)`` is ``"half"``,
    ``(-1, 0, -3, 2)`` is ``"interleaved"``; ``None`` when the module has neither."""
    import torch

    module = sys.modules.get(type(model).__module__)
    for name in ("rotate_half", "rotate_every_two"):
        fn = getattr(module, name, None)
        if not callable(fn):
            continue
        try:
            out = fn(torch.arange(4, dtype=torch.float64).reshape(1, 1, 1, 4))
        except (RuntimeError, TypeError, ValueError):
            continue
        return _PAIRS.get(tuple(float(v) for v in out.reshape(-1)))
    return None


def _theta_of(inv_freq: np.ndarray, rotary_dim: int) -> float | None:
    """The base ``theta`` when ``inv_freq`` is ``theta^(-2k/rotary_dim)`` to 1e-6, else None."""
    k = np.arange(inv_freq.shape[0], dtype=np.float64)
    if inv_freq.shape[0] < 2 or np.any(inv_freq <= 0) or abs(inv_freq[0] - 1.0) > 1e-6:
        return None
    slope = float(np.dot(k, np.log(inv_freq)) / np.dot(k, k))  # log w_k = -(2k/dim) log theta
    theta = math.exp(-slope * rotary_dim / 2)
    expected = theta ** (-2 * k / rotary_dim)
    if np.max(np.abs(expected / inv_freq - 1)) > 1e-6:
        return None
    return float(f"{theta:.6g}")


# ------------------------------------------------------------------------------ readers
def _rotary(config: Any, source: str, inv_freq: np.ndarray, **fields: Any) -> Mechanism:
    """One rotary mechanism: ``fields`` (``theta``, ``rope_scaling``, ``layer_type``, ...)
    completed by the head width and the rotary fraction."""
    rotary_dim, head_dim = 2 * int(inv_freq.shape[0]), query_head_dim(config)
    fraction = rotary_dim / head_dim if head_dim else config_rotary_fraction(config, None)
    params = fields.pop("rope_scaling", None)
    return Mechanism(
        "rotary",
        source,
        RotaryParams(
            inv_freq=inv_freq,
            rope_type=rope_type_of(params),
            rope_scaling=params,
            rotary_fraction=fraction,
            head_dim=head_dim,
            rotary_dim=rotary_dim,
            **fields,
        ),
    )


def _inv_freq_buffers(model: Any, config: Any) -> list[Mechanism]:
    """Every ``*inv_freq`` buffer (not the ``original_`` / ``long_`` copies, nor one whose
    module embeds values: :func:`~posgeom.encodings.value_sinusoid.embeds_values`): one
    mechanism each; a learned log-scale ``alpha`` of the same shape beside it (LeRoPE, Mistral
    Large 4: the module rotates by ``w_k exp(alpha_k)``) is applied."""
    found = []
    for name, buffer in model.named_buffers():
        last = _hf.last_name(name)
        if not last.endswith("inv_freq") or last.endswith(("original_inv_freq", "long_inv_freq")):
            continue
        owner = _hf.parent(model, name)
        if embeds_values(owner):  # a sinusoid of a value (a box coordinate, a time): no rotary
            continue
        inv_freq = _hf.to_numpy(buffer)
        alpha = getattr(owner, "alpha", None)  # LeRoPE (Mistral Large 4): w_k exp(alpha_k)
        if getattr(alpha, "shape", None) == buffer.shape and alpha.requires_grad:
            inv_freq = inv_freq * np.exp(_hf.to_numpy(alpha))
        layer_type = last[: -len("inv_freq")].rstrip("_") or None
        attr = f"{layer_type}_attention_scaling" if layer_type else "attention_scaling"
        scaling = getattr(owner, attr, getattr(owner, "attention_scaling", 1.0))
        params = config_rope_parameters(config, layer_type)
        theta = None if not params or params.get("rope_theta") is None else params["rope_theta"]
        found.append(
            _rotary(
                config,
                name,
                inv_freq,
                theta=None if theta is None else float(theta),
                rope_scaling=params,
                attention_scaling=float(scaling) if isinstance(scaling, (int, float)) else 1.0,
                layer_type=layer_type,
            )
        )
    return found


def _table_frequencies(table: np.ndarray) -> np.ndarray | None:
    """``w_k`` of a ``(P, 2K)`` sin/cos table (sines first or cosines first), else ``None``."""
    if table.ndim != 2 or table.shape[0] < 3 or table.shape[1] < 2 or table.shape[1] % 2:
        return None
    half = table.shape[1] // 2
    zeros, ones = np.zeros(half), np.ones(half)
    if np.allclose(table[0], np.r_[zeros, ones], atol=1e-6):
        sin, cos = table[:, :half], table[:, half:]
    elif np.allclose(table[0], np.r_[ones, zeros], atol=1e-6):
        cos, sin = table[:, :half], table[:, half:]
    else:
        return None
    if not np.allclose(sin**2 + cos**2, 1.0, atol=1e-5):
        return None
    angles = np.unwrap(np.arctan2(sin, cos), axis=0)
    p = np.arange(table.shape[0], dtype=np.float64)
    return angles.T @ p / (p @ p)  # least squares through the origin, one slope per plane


def _sincos_tables(model: Any, config: Any) -> list[Mechanism]:
    """Buffers holding sin/cos tables (GPT-J, CodeGen): frequencies fitted from all rows."""
    import torch

    found = []
    for name, buffer in model.named_buffers():
        if not torch.is_floating_point(buffer) or buffer.ndim != 2:
            continue
        width, head_dim = int(buffer.shape[1]), query_head_dim(config)
        if head_dim is not None and width > head_dim:  # wider than a head: an absolute table
            continue
        inv_freq = _table_frequencies(_hf.to_numpy(buffer))
        if inv_freq is None:
            continue
        rotary_dim = 2 * inv_freq.shape[0]
        found.append(_rotary(config, name, inv_freq, theta=_theta_of(inv_freq, rotary_dim)))
    return found


def _from_config(model: Any, config: Any) -> list[Mechanism]:
    """No buffer: the default frequencies from the configuration's rotary base, if it names one."""
    params = config_rope_parameters(config, None)
    if not params or params.get("rope_theta") is None:
        if getattr(config, "position_embedding_type", None) not in ("rotary", "rope"):
            return []
        params = dict(params or {}, rope_theta=10000.0)
    head_dim = query_head_dim(config)
    if head_dim is None:
        raise PosgeomError(
            "the configuration names a rotary encoding but neither head_dim nor "
            "hidden_size/num_attention_heads, so the rotary width is unknown"
        )
    fraction = config_rotary_fraction(config, params) or 1.0
    rotary_dim = int(getattr(config, "rotary_dim", None) or int(head_dim * fraction))
    theta = float(params["rope_theta"])
    inv_freq, _ = rope_frequencies(None, rotary_dim, theta)
    source = "config.rope_parameters (default frequencies computed from rope_theta)"
    return [_rotary(config, source, inv_freq, theta=theta, rope_scaling=params)]


#: reader name -> ``(model, config) -> mechanisms``, tried in order until one finds something.
ROTARY_READERS: dict[str, Callable[[Any, Any], list[Mechanism]]] = {
    "inv_freq": _inv_freq_buffers,
    "sincos": _sincos_tables,
    "config": _from_config,
}


def detect_rotary(model: Any, config: Any) -> list[Mechanism]:
    """The model's rotary mechanisms from the first reader of :data:`ROTARY_READERS` that finds
    any, each with the model's coordinate pairing (:func:`rotation_pairs`)."""
    if getattr(config, "rotary", True) is False:  # e.g. Falcon with alibi=True
        return []
    config = text_config(config)
    for reader in ROTARY_READERS.values():
        found = reader(model, config)
        if found:
            pairs = rotation_pairs(model)
            return [
                Mechanism(m.kind, m.source, replace(m.params, pairs=pairs), m.others) for m in found
            ]
    return []
