"""RoPE's extension side: its ``extend`` spec, strategies, lag kernel and how a strategy reaches
a model (:class:`RoPEExtension`, the ``extension_type`` of
:class:`~posgeom.encodings.rope.RoPEFamily`).

Parameters: ``{"head_dim": h, "rope_parameters": {...}}`` (transformers 5 spelling, ``rope_type``
and ``rope_theta`` always present). Spec: ``rope:theta=10000,head_dim=64[,partial_rotary_factor=
0.5]``. A strategy's ``rope_parameters`` are pasted into ``config.json`` exactly as transformers
spells them; their frequencies come from the one implementation of every rope type,
:func:`posgeom.encodings.rope_types.rope_frequencies`, at the current length ``seq_len`` with
``context = L0``.

Strategies, with ``s = L / L0`` (target over trained length), ``theta`` the model's base, ``d`` the
rotary width:

- ``none``: the model's own parameters;
- ``linear`` (position interpolation): ``factor = s``;
- ``ntk``: static NTK as a new base, ``theta' = theta a^(d/(d-2))`` for ``a`` in ``s x {1, 2, 4,
  8}`` (``rope_type "default"``: loads everywhere), and Men et al.'s lower bound
  ``theta >= 0.0424 L^1.628`` when it is above ``theta``;
- ``dynamic`` (dynamic NTK): ``factor = s`` (keep ``max_position_embeddings = L0``: transformers
  takes it as the trained length);
- ``yarn``: ``factor = s`` with ``(beta_fast, beta_slow)`` in ``(32, 1), (16, 1), (64, 2)``, with
  its attention factor ``0.1 ln s + 1``, and ``(32, 1)`` without it (``attention_factor = 1``);
- ``llama3``: ``factor = s``, ``(low_freq_factor, high_freq_factor)`` in ``(1, 4), (1, 8)``;
- ``longrope``: per-plane factors ``lambda_f = s^((f / (F-1))^p)`` for ``p`` in ``{0.5, 1, 2}``
  (1 at the fastest plane, ``s`` at the slowest), ``short_factor`` all ones;
- ``fitted`` (added by :mod:`posgeom.extension.scoring`, it needs the corpus): per-plane factors
  fitted to the corpus's lag geometry (:mod:`posgeom.extension.fit`).

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
from posgeom.encodings.rope_types import config_rope_parameters, ntk_base, rotary_vectors

__all__ = [
    "LLAMA3_BANDS",
    "LONGROPE_POWERS",
    "NTK_MULTIPLES",
    "YARN_BETAS",
    "RoPEExtension",
    "longrope_strategy",
    "men_theta_bound",
    "rebuild_rotary",
    "rope_lag_vectors",
    "rope_strategies",
    "rope_strategy",
]

YARN_BETAS = ((32.0, 1.0), (16.0, 1.0), (64.0, 2.0))
LLAMA3_BANDS = ((1.0, 4.0), (1.0, 8.0))
NTK_MULTIPLES = (1.0, 2.0, 4.0, 8.0)
LONGROPE_POWERS = (0.5, 1.0, 2.0)
_ABOVE_ONE = Interval(Real, 1, math.inf, closed="neither")  # a finite frequency base > 1


def rope_lag_vectors(inv_freq: Any, lags: Any, *, attention_factor: float = 1.0) -> np.ndarray:
    """``(m, 2F)``: ``attention_factor^2 (cos k w_f, sin k w_f)`` per lag (module docstring)."""
    w = np.asarray(inv_freq, dtype=np.float64)
    return float(attention_factor) ** 2 * rotary_vectors(w, check_lags(lags), layout="half")


def men_theta_bound(length: int) -> float:
    """Men et al. (2024)'s lower bound on the RoPE base for context ``length``:
    ``theta >= 0.0424 L^1.628``."""
    return 0.0424 * float(length) ** 1.628


def _params(model: Any) -> Mapping[str, Any]:
    """RoPE parameters of an ``ExtensionModel`` (its ``params``) or the parameters themselves."""
    return model if isinstance(model, Mapping) else model.params


def _base(params: Mapping[str, Any]) -> dict[str, Any]:
    """The keys every strategy keeps: ``rope_theta`` and ``partial_rotary_factor``."""
    own = params["rope_parameters"]
    keep = {"rope_theta": float(own["rope_theta"])}
    if own.get("partial_rotary_factor") is not None:
        keep["partial_rotary_factor"] = float(own["partial_rotary_factor"])
    return keep


def rope_strategy(
    model: Any, name: str, kind: str, params: Mapping[str, Any], description: str
) -> Strategy:
    """A RoPE strategy whose ``rope_parameters`` are the model's base keys plus ``params``
    (``model``: an ``ExtensionModel`` or its RoPE parameters)."""
    return Strategy(name, "rope", kind, {**_base(_params(model)), **dict(params)}, description)


def _rotary_dim(params: Mapping[str, Any]) -> int:
    fraction = params["rope_parameters"].get("partial_rotary_factor") or 1.0
    return int(params["head_dim"] * float(fraction))


def _ntk(params: Mapping[str, Any], s: float, target: int) -> list[Strategy]:
    d, theta = _rotary_dim(params), float(params["rope_parameters"]["rope_theta"])
    thetas = {round(ntk_base(theta, a * s, d)): f"a = {a * s:g}" for a in NTK_MULTIPLES}
    bound = men_theta_bound(target)
    if bound > theta:
        thetas.setdefault(round(bound), f"Men et al.'s bound 0.0424 L^1.628 at L = {target}")
    return [
        rope_strategy(
            params,
            f"ntk theta={t}",
            "ntk",
            {"rope_type": "default", "rope_theta": float(t)},
            f"static NTK: base {theta:g} -> {t} ({why})",
        )
        for t, why in sorted(thetas.items())
    ]


def _yarn(params: Mapping[str, Any], s: float, l0: int) -> list[Strategy]:
    orig = {"original_max_position_embeddings": int(l0)}
    out = []
    for fast, slow in YARN_BETAS:
        yarn = {"rope_type": "yarn", "factor": s, "beta_fast": fast, "beta_slow": slow, **orig}
        out.append(
            rope_strategy(
                params,
                f"yarn x{s:g} b{fast:g}/{slow:g}",
                "yarn",
                yarn,
                "YaRN ramp with its attention factor 0.1 ln s + 1",
            )
        )
    yarn = {"rope_type": "yarn", "factor": s, "beta_fast": 32.0, "beta_slow": 1.0, **orig}
    out.append(
        rope_strategy(
            params,
            f"yarn x{s:g} b32/1 no-attn",
            "yarn",
            {**yarn, "attention_factor": 1.0},
            "YaRN ramp without its attention factor",
        )
    )
    return out


def _llama3(params: Mapping[str, Any], s: float, l0: int) -> list[Strategy]:
    out = []
    for low, high in LLAMA3_BANDS:
        bands = {
            "rope_type": "llama3",
            "factor": s,
            "low_freq_factor": low,
            "high_freq_factor": high,
            "original_max_position_embeddings": int(l0),
        }
        out.append(
            rope_strategy(
                params,
                f"llama3 x{s:g} {low:g}/{high:g}",
                "llama3",
                bands,
                "Llama 3 wavelength bands",
            )
        )
    return out


def _ramp(params: Mapping[str, Any], s: float, power: float) -> np.ndarray:
    f = _rotary_dim(params) // 2
    return s ** ((np.arange(f) / max(f - 1, 1)) ** power)


def longrope_strategy(
    model: Any,
    l0: int,
    target: int,
    factors: Any,
    name: str,
    description: str,
    *,
    kind: str = "longrope",
    attention_factor: float | None = None,
) -> Strategy:
    """LongRoPE parameters with per-plane ``long_factor = factors`` (``short_factor`` ones)."""
    lam = [float(x) for x in np.asarray(factors, dtype=np.float64)]
    params: dict[str, Any] = {
        "rope_type": "longrope",
        "factor": target / l0,
        "original_max_position_embeddings": int(l0),
        "long_factor": lam,
        "short_factor": [1.0] * len(lam),
    }
    if attention_factor is not None:
        params["attention_factor"] = float(attention_factor)
    return rope_strategy(model, name, kind, params, description)


def rope_strategies(model: Any, l0: int, target: int) -> list[Strategy]:
    """Every RoPE strategy of the module docstring at ``(L0, L)`` (``fitted`` excluded)."""
    params = _params(model)
    s = target / l0
    own = dict(params["rope_parameters"])
    out = [Strategy("none", "rope", "none", own, "the model's own rope parameters, unchanged")]
    out.append(
        rope_strategy(
            params,
            f"linear x{s:g}",
            "linear",
            {"rope_type": "linear", "factor": s},
            "position interpolation: every frequency divided by s",
        )
    )
    out += _ntk(params, s, target)
    out.append(
        rope_strategy(
            params,
            f"dynamic x{s:g}",
            "dynamic",
            {"rope_type": "dynamic", "factor": s},
            "dynamic NTK (base grows with the current length; keep max_position_embeddings = L0)",
        )
    )
    out += _yarn(params, s, l0) + _llama3(params, s, l0)
    for p in LONGROPE_POWERS:
        ramp = _ramp(params, s, p)
        why = f"per-plane factors s^((f/(F-1))^{p:g})"
        out.append(longrope_strategy(params, l0, target, ramp, f"longrope p={p:g}", why))
    return out


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
