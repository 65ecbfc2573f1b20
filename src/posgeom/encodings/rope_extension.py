"""RoPE's extension side: its ``extend`` spec, strategies
(:mod:`posgeom.encodings.rope_strategies`), lag kernel and how a strategy reaches a model
(:class:`RoPEExtension`, the ``extension_type`` of :class:`~posgeom.encodings.rope.RoPEFamily`).

Parameters: ``{"head_dim": h, "rope_parameters": {...}}`` (transformers 5 spelling, ``rope_type``
and ``rope_theta`` always present). Spec: ``rope:theta=10000,head_dim=64[,partial_rotary_factor=
0.5]``. A strategy's ``rope_parameters`` are pasted into ``config.json`` exactly as transformers
spells them; their frequencies come from the one implementation of every rope type,
:func:`posgeom.encodings.rope_types.rope_frequencies`, at the current length ``seq_len`` with
``context = L0``.

Lag kernel: ``v_k = a^2 (cos k w_f, sin k w_f)_f`` (:func:`rope_lag_vectors`): the rotation of each
frequency ``w_f`` at ``seq_len = L`` by ``k``, scaled by the logit scale ``a^2`` (``a`` the
attention factor multiplying cos and sin on queries and keys); ``<v_0, v_k> = a^4 sum_f cos(k w_f)``.

Applying: a transformers causal LM gets ``rope_parameters`` (and ``max_position_embeddings``,
:meth:`Strategy.config_changes`) in its config and every rotary module rebuilt from it, as
transformers builds them when it loads such a ``config.json``; a posgeom decoder gets a
:class:`~posgeom.nn.rotary.RotaryEmbedding` (base ``rope_theta``, ``scaling = {"type": rope_type,
...}``), the same frequencies at the window length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags
from posgeom.encodings.rope_layer_types import strategy_rope_parameters
from posgeom.encodings.rope_strategies import rope_strategies
from posgeom.encodings.rope_types import config_rope_parameters, rotary_vectors

__all__ = ["RoPEExtension", "rebuild_rotary", "rope_lag_vectors"]

_ABOVE_ONE = Interval(Real, 1, math.inf, closed="neither")  # a finite frequency base > 1


def rope_lag_vectors(inv_freq: Any, lags: Any, *, attention_factor: float = 1.0) -> np.ndarray:
    """``(m, 2F)``: ``attention_factor^2 (cos k w_f, sin k w_f)`` per lag (module docstring)."""
    w = np.asarray(inv_freq, dtype=np.float64)
    return float(attention_factor) ** 2 * rotary_vectors(w, check_lags(lags), layout="half")


def rebuild_rotary(model: Any, what: str) -> None:
    """Rebuild every rotary module of a transformers ``model`` from ``model.config`` (as loading
    would: a module with a ``rope_type`` and an ``inv_freq`` buffer, or one per layer type,
    ``<type>_inv_freq``, as Gemma 3's); one line when it has none."""
    found = 0
    for name, module in list(model.named_modules()):
        freqs = [b for n, b in module.named_buffers(recurse=False) if n.endswith("inv_freq")]
        if freqs and hasattr(module, "rope_type"):
            fresh = type(module)(config=model.config)
            fresh.to(freqs[0].device)
            parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
            setattr(parent, name.rpartition(".")[2], fresh)
            found += 1
    if not found:
        raise PosgeomError(
            f"{type(model).__name__} has no rotary module (with inv_freq and rope_type) to give "
            f"{what}; --measure supports transformers' rotary models"
        )


class RoPEExtension(Extension):
    """RoPE's extension protocol (module docstring)."""

    spec_keys = MappingProxyType(
        {
            "theta": _ABOVE_ONE,
            "head_dim": Interval(Integral, 2, None),
            "partial_rotary_factor": Interval(Real, 0, 1, closed="right"),
        }
    )
    spec_example = "rope:theta=10000,head_dim=64"
    rotary = True

    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        rope = {"rope_type": "default", "rope_theta": float(spec.get("theta", 1e4))}
        if "partial_rotary_factor" in spec:
            rope["partial_rotary_factor"] = float(spec["partial_rotary_factor"])
        return {"head_dim": int(spec.get("head_dim", 64)), "rope_parameters": rope}

    def check_extension_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        head_dim = params.get("head_dim")
        if not head_dim or head_dim % 2:
            raise PosgeomError(f"RoPE needs an even head_dim, got {head_dim!r}")
        rope = dict(params.get("rope_parameters") or {})
        rope.setdefault("rope_type", "default")
        rope.setdefault("rope_theta", 10000.0)
        return {**params, "head_dim": int(head_dim), "rope_parameters": rope}

    def extension_from_config(self, config: Any, model: Any = None) -> dict[str, Any] | None:
        """The configuration's rope parameters, when it has a ``rope_theta`` and ``model`` (if
        given) has rotary buffers."""
        from posgeom.encodings._hf import head_dim as head_dim_of

        rope = config_rope_parameters(config, None)
        if not (rope and rope.get("rope_theta") is not None):
            return None
        if model is not None and not any(n.endswith("inv_freq") for n, _ in model.named_buffers()):
            return None
        return {"head_dim": head_dim_of(config), "rope_parameters": dict(rope)}

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any] | None:
        """A detected rotary mechanism: its head width, rope parameters (the rotated fraction
        as ``partial_rotary_factor``) and the ``layers`` it rotates."""
        p = mechanism.params
        if p.theta is None or not p.head_dim:
            return None
        rope = {"rope_type": p.rope_type, **p.type_parameters(), "rope_theta": float(p.theta)}
        if p.rotary_dim and p.rotary_dim != p.head_dim:
            rope["partial_rotary_factor"] = p.rotary_dim / p.head_dim
        layers = None if mechanism.layers is None else list(mechanism.layers)
        out = {"head_dim": int(p.head_dim), "rope_parameters": rope, "layers": layers}
        if p.layer_type:  # one of several per-layer-type set-ups (Gemma 3's full_attention)
            out["layer_type"] = str(p.layer_type)
        return out

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        rope = {"rope_type": "default", "rope_theta": float(module.base)}
        return {"head_dim": int(module.head_dim), "rope_parameters": rope}

    def extension_summary(self, params: Mapping[str, Any]) -> dict[str, Any]:
        out = {"head_dim": params["head_dim"], "rope_parameters": dict(params["rope_parameters"])}
        if params.get("layers") is not None:  # the blocks that rotate (a model's per-layer map)
            out["layers"] = list(params["layers"])
        if params.get("layer_type"):  # the per-layer-type set-up a strategy replaces
            out["layer_type"] = str(params["layer_type"])
        return out

    def strategies(
        self, params: Mapping[str, Any], trained_length: int, target_length: int
    ) -> list[Strategy]:
        return rope_strategies(params, int(trained_length), int(target_length))

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        if strategy.kind == "none" and strategy.rope_parameters is None:  # the model's own
            strategy = Strategy(strategy.name, self.name, "none", params["rope_parameters"])
        w, att = strategy.frequencies(params, ctx.target_length, ctx.trained_length)
        return rope_lag_vectors(w, lags, attention_factor=att)

    def can_apply(self, strategy: Strategy, target: str) -> bool:
        return strategy.rope_parameters is not None or strategy.kind == "none"

    def apply_to_transformers(
        self, model: Any, strategy: Strategy, ctx: ExtensionContext
    ) -> Callable[[], None] | None:
        """The strategy's ``rope_parameters`` in ``model.config``, rotary modules rebuilt."""
        self.check_apply(strategy, "transformers")
        if strategy.rope_parameters is None:
            return None
        keys = ("rope_parameters", "max_position_embeddings")
        original = {k: getattr(model.config, k, None) for k in keys}
        model.config.rope_parameters = strategy_rope_parameters(
            original["rope_parameters"], strategy
        )
        for key, value in strategy.config_changes(ctx.trained_length, ctx.target_length).items():
            setattr(model.config, key, value)
        rebuild_rotary(model, f"the strategy {strategy.name!r}")

        def restore() -> None:
            for key, value in original.items():
                setattr(model.config, key, value)
            rebuild_rotary(model, "its own rope parameters back")

        return restore

    def decoder_strategy_module(
        self, params: Mapping[str, Any], strategy: Strategy, trained: Any, ctx: ExtensionContext
    ) -> Any:
        """A ``RotaryEmbedding`` with the strategy's rope type and parameters."""
        self.check_apply(strategy, "decoder")
        if strategy.rope_parameters is None:
            return trained
        rope = dict(strategy.rope_parameters)
        base = float(rope.pop("rope_theta"))
        kind = rope.pop("rope_type", "default")
        if rope.get("partial_rotary_factor") not in (None, 1, 1.0):
            raise PosgeomError(f"strategy {strategy.name!r}: the decoder rotates whole heads")
        rope.pop("partial_rotary_factor", None)
        rope.update(strategy.config_changes(ctx.trained_length, ctx.target_length))
        rotary = self.torch_object("posgeom.nn.rotary:RotaryEmbedding")
        return rotary(int(params["head_dim"]), base, {"type": kind, **rope})

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        """``RotaryEmbedding(d_model / n_heads, rope_theta)``."""
        rotary = self.torch_object("posgeom.nn.rotary:RotaryEmbedding")
        return rotary(config.head_dim, config.rope_theta)
