"""RoPE's extension strategies: the ``rope_parameters`` each strategy pastes into a model's
``config.json`` (exactly as transformers spells them), for :class:`~posgeom.encodings.
rope_extension.RoPEExtension`.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from posgeom.encodings._extension import Strategy
from posgeom.encodings.rope_types import ntk_base

__all__ = [
    "LLAMA3_BANDS",
    "LONGROPE_POWERS",
    "NTK_MULTIPLES",
    "YARN_BETAS",
    "longrope_strategy",
    "men_theta_bound",
    "rope_strategies",
    "rope_strategy",
    "yarn_strategy",
]

YARN_BETAS = ((32.0, 1.0), (16.0, 1.0), (64.0, 2.0))
LLAMA3_BANDS = ((1.0, 4.0), (1.0, 8.0))
NTK_MULTIPLES = (1.0, 2.0, 4.0, 8.0)
LONGROPE_POWERS = (0.5, 1.0, 2.0)


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


def yarn_strategy(
    model: Any,
    s: float,
    l0: int,
    *,
    description: str,
    betas: tuple[float, float] = (32.0, 1.0),
    attention: bool = True,
) -> Strategy:
    """YaRN with ``factor = s`` over ``L0 = l0`` and ``(beta_fast, beta_slow) = betas``; with
    its attention factor ``0.1 ln s + 1``, or without it (``attention_factor = 1``)."""
    fast, slow = betas
    yarn = {"rope_type": "yarn", "factor": s, "beta_fast": fast, "beta_slow": slow}
    yarn["original_max_position_embeddings"] = int(l0)
    name = f"yarn x{s:g} b{fast:g}/{slow:g}"
    if not attention:
        yarn["attention_factor"], name = 1.0, f"{name} no-attn"
    return rope_strategy(model, name, "yarn", yarn, description)


def _yarn(params: Mapping[str, Any], s: float, l0: int) -> list[Strategy]:
    why = "YaRN ramp with its attention factor 0.1 ln s + 1"
    out = [yarn_strategy(params, s, l0, description=why, betas=b) for b in YARN_BETAS]
    why = "YaRN ramp without its attention factor"
    return [*out, yarn_strategy(params, s, l0, description=why, attention=False)]


def _llama3(params: Mapping[str, Any], s: float, l0: int) -> list[Strategy]:
    orig = {"original_max_position_embeddings": int(l0)}
    return [
        rope_strategy(
            params,
            f"llama3 x{s:g} {low:g}/{high:g}",
            "llama3",
            {"rope_type": "llama3", "factor": s, "low_freq_factor": low, "high_freq_factor": high}
            | orig,
            "Llama 3 wavelength bands",
        )
        for low, high in LLAMA3_BANDS
    ]


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


def _factor(params: Mapping[str, Any], s: float, kind: str, description: str) -> Strategy:
    """The rope type ``kind`` with ``factor = s`` (linear, dynamic)."""
    return rope_strategy(
        params, f"{kind} x{s:g}", kind, {"rope_type": kind, "factor": s}, description
    )


def rope_strategies(model: Any, l0: int, target: int) -> list[Strategy]:
    """Every RoPE strategy of the module docstring at ``(L0, L)`` (``fitted`` excluded)."""
    params = _params(model)
    s = target / l0
    own = dict(params["rope_parameters"])
    out = [
        Strategy("none", "rope", "none", own, "the model's own rope parameters, unchanged"),
        _factor(params, s, "linear", "position interpolation: every frequency divided by s"),
        *_ntk(params, s, target),
        _factor(
            params,
            s,
            "dynamic",
            "dynamic NTK (base grows with the current length; keep max_position_embeddings = L0)",
        ),
        *_yarn(params, s, l0),
        *_llama3(params, s, l0),
    ]
    for p in LONGROPE_POWERS:
        ramp = _ramp(params, s, p)
        why = f"per-plane factors s^((f/(F-1))^{p:g})"
        out.append(longrope_strategy(params, l0, target, ramp, f"longrope p={p:g}", why))
    return out
