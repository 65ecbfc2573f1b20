"""The model being extended, as posgeom needs it: its positional family and trained length.

:class:`ExtensionModel` holds what the strategies act on: for RoPE ``head_dim``, ``rope_theta`` and
the model's own ``rope_parameters`` (transformers 5 spelling); for a learned table the ``(n, d)``
table; for ALiBi the slopes; for T5 the bucket set-up (and bias table). It comes from a bare
family spec (:func:`parse_family_spec`) or from a Hugging Face configuration / model
(:func:`model_from_config`, with the families' own detectors for weights).

Family specs: ``rope:theta=10000,head_dim=64[,max_position_embeddings=2048][,partial_rotary_factor=
0.5]``, ``sinusoidal:d=128[,base=10000]`` (the fixed table, any length), ``alibi:heads=12``, ``t5:num_buckets=32,max_distance=128``, ``nope``; every spec takes
``max_position_embeddings`` (the trained length, also given by ``trained_length=``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, check_int, check_param
from posgeom.encodings._base import MAX_HEADS

__all__ = [
    "FAMILIES",
    "SPEC_KEYS",
    "SPEC_RANGES",
    "ExtensionModel",
    "is_family_spec",
    "model_from_config",
    "parse_family_spec",
]

FAMILIES = ("rope", "learned", "sinusoidal", "alibi", "t5", "nope")


@dataclass(frozen=True, eq=False)
class ExtensionModel:
    """A positional family with its parameters and the length it was trained at (``None``:
    unknown, give ``trained_length``)."""

    family: str
    name: str
    trained_length: int | None = None
    head_dim: int | None = None
    rope_parameters: Mapping[str, Any] = field(default_factory=dict)
    table: np.ndarray | None = field(default=None, repr=False)
    slopes: np.ndarray | None = field(default=None, repr=False)
    t5: Mapping[str, Any] = field(default_factory=dict)  # T5 buckets, or sinusoidal d / base
    source: str = "transformers"  # or "posgeom decoder": which record scope applies

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise PosgeomError(f"unknown family {self.family!r}; use one of {', '.join(FAMILIES)}")
        if self.family == "rope":
            if not self.head_dim or self.head_dim % 2:
                raise PosgeomError(f"RoPE needs an even head_dim, got {self.head_dim!r}")
            params = dict(self.rope_parameters)
            params.setdefault("rope_type", "default")
            params.setdefault("rope_theta", 10000.0)
            object.__setattr__(self, "rope_parameters", params)

    @property
    def rope_theta(self) -> float:
        return float(self.rope_parameters["rope_theta"])

    def with_trained_length(self, length: int | None) -> ExtensionModel:
        if length is None:
            return self
        import dataclasses

        return dataclasses.replace(self, trained_length=check_int(length, "trained_length", 1))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "family": self.family,
            "name": self.name,
            "trained_length": self.trained_length,
        }
        if self.family == "rope":
            out.update(head_dim=self.head_dim, rope_parameters=dict(self.rope_parameters))
        if self.table is not None:
            out["table_shape"] = list(self.table.shape)
        if self.slopes is not None:
            out["slopes"] = [float(s) for s in self.slopes]
        if self.t5:
            out["t5"] = {k: v for k, v in self.t5.items() if k != "bias"}
        return out


# the families a spec can name, with the keys each takes (learned tables come from a model)
SPEC_KEYS: dict[str, frozenset[str]] = {
    "rope": frozenset({"theta", "head_dim", "partial_rotary_factor"}),
    "alibi": frozenset({"heads"}),
    "sinusoidal": frozenset({"d", "base"}),
    "t5": frozenset({"num_buckets", "max_distance"}),
    "nope": frozenset(),
}


_ABOVE_ONE = Interval(Real, 1, math.inf, closed="neither")  # a finite frequency base > 1
#: the range of every spec key (the integer rule for counts and widths: 64.7 is refused)
SPEC_RANGES: dict[str, Interval] = {
    "theta": _ABOVE_ONE,
    "base": _ABOVE_ONE,
    "head_dim": Interval(Integral, 2, None),
    "d": Interval(Integral, 2, None),
    "partial_rotary_factor": Interval(Real, 0, 1, closed="right"),
    "heads": Interval(Integral, 1, MAX_HEADS),
    "num_buckets": Interval(Integral, 2, None),
    "max_distance": Interval(Integral, 1, None),
    "max_position_embeddings": Interval(Integral, 1, None),
}


def is_family_spec(text: str) -> bool:
    """Whether ``text`` reads as a family spec (``family`` or ``family:key=value,...``) of
    :data:`SPEC_KEYS`."""
    return str(text).partition(":")[0] in SPEC_KEYS


def _number(key: str, value: str) -> float | int:
    try:
        return int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise PosgeomError(f"family spec: {key}={value!r} is not a number") from None


def parse_family_spec(spec: str) -> ExtensionModel:
    """An :class:`ExtensionModel` from ``family:key=value,...`` (module docstring)."""
    family, _, rest = str(spec).partition(":")
    opts: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise PosgeomError(f"family spec {spec!r}: {item!r} is not key=value")
        opts[key.strip()] = _number(key.strip(), value.strip())
    length = opts.pop("max_position_embeddings", None)
    allowed = SPEC_KEYS
    if family not in allowed:
        raise PosgeomError(
            f"unknown family spec {spec!r}; use rope:theta=10000,head_dim=64, alibi:heads=12, "
            "t5:num_buckets=32,max_distance=128 or nope (learned tables come from a model)"
        )
    extra = set(opts) - allowed[family]
    if extra:
        raise PosgeomError(
            f"family spec {spec!r}: unknown key(s) {', '.join(sorted(extra))}; {family} takes "
            f"{', '.join(sorted(allowed[family] | {'max_position_embeddings'})) or 'none'}"
        )
    for key, value in {**opts, "max_position_embeddings": length}.items():
        if value is not None:
            check_param(key, value, [SPEC_RANGES[key]], where=f"family spec {spec!r}")
    if family == "rope":
        params: dict[str, Any] = {
            "rope_type": "default",
            "rope_theta": float(opts.get("theta", 1e4)),
        }
        if "partial_rotary_factor" in opts:
            params["partial_rotary_factor"] = float(opts["partial_rotary_factor"])
        return ExtensionModel(
            "rope", spec, length, head_dim=int(opts.get("head_dim", 64)), rope_parameters=params
        )
    if family == "sinusoidal":
        sin = {"d": int(opts.get("d", 128)), "base": float(opts.get("base", 10000.0))}
        return ExtensionModel("sinusoidal", spec, length, t5=sin)
    if family == "alibi":
        from posgeom.encodings.alibi import alibi_slopes

        return ExtensionModel(
            "alibi", spec, length, slopes=alibi_slopes(int(opts.get("heads", 12)))
        )
    if family == "t5":
        from posgeom.encodings.t5 import t5 as t5_encoding

        t5 = {
            "num_buckets": int(opts.get("num_buckets", 32)),
            "max_distance": int(opts.get("max_distance", 128)),
        }
        t5_encoding(3, **t5)  # the family's own rule on the buckets (one home)
        return ExtensionModel("t5", spec, length, t5=t5)
    return ExtensionModel("nope", spec, length)


def model_from_config(config: Any, *, model: Any = None, name: str = "model") -> ExtensionModel:
    """The positional family of a transformers configuration (and, for learned tables, ALiBi
    slopes and T5 biases, of the ``model``'s weights, found by the families' detectors)."""
    from posgeom.encodings._hf import head_dim as head_dim_of
    from posgeom.encodings.rope_types import config_rope_parameters

    length = getattr(config, "max_position_embeddings", None)
    params = config_rope_parameters(config, None)
    rotary = bool(params and params.get("rope_theta") is not None)
    if rotary and (model is None or _has_rotary(model)):
        return ExtensionModel(
            "rope", name, length, head_dim=head_dim_of(config), rope_parameters=dict(params)
        )
    if model is None:
        raise PosgeomError(
            f"the configuration of {name} names no rotary parameters; pass the model itself "
            "(learned tables, ALiBi and T5 are read from its weights) or a family spec"
        )
    return _from_mechanisms(model, name, length)


def _has_rotary(model: Any) -> bool:
    return any(n.endswith("inv_freq") for n, _ in model.named_buffers())


def _from_mechanisms(model: Any, name: str, length: Any) -> ExtensionModel:
    from posgeom.models.mechanisms import find_positional_mechanisms

    for mech in find_positional_mechanisms(model, on_missing="none"):
        p = mech.params
        if mech.kind == "learned":
            table = np.asarray(p.table, dtype=np.float64)
            return ExtensionModel("learned", name, length or table.shape[0], table=table)
        if mech.kind == "alibi":
            return ExtensionModel("alibi", name, length, slopes=np.asarray(p.slopes))
        if mech.kind == "relative_buckets":
            t5 = {
                "num_buckets": p.num_buckets,
                "max_distance": p.max_distance,
                "bidirectional": p.bidirectional,
                "bias": np.asarray(p.bias_table, dtype=np.float64),
            }
            return ExtensionModel("t5", name, length, t5=t5)
    return ExtensionModel("nope", name, length)
