"""Context-extension strategies: what each family can do past its trained length ``L0``.

A :class:`Strategy` is a name, its family and, for RoPE, the ``rope_parameters`` to paste into
``config.json`` exactly as transformers 5 spells them (``rope_type``, ``rope_theta`` always
included, ``factor``, ``original_max_position_embeddings``, ...). Their frequencies are computed by
the one implementation of every rope type, :func:`posgeom.encodings.rope_types.rope_frequencies`,
at the current length ``seq_len`` with ``context = L0``.

RoPE, with ``s = L / L0`` (target over trained length), ``theta`` the model's base, ``d`` the
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
- ``fitted``: per-plane factors fitted to the corpus's lag geometry (:mod:`posgeom.extension.fit`).

Learned tables: ``clamp`` (positions past ``L0`` reuse the last row), ``interpolate`` (rows at
``i (L0 - 1) / (L - 1)``, linearly), ``gower`` (new rows placed by Gower's formula in the MDS
frame of the corpus's positional geometry, :mod:`posgeom.extension.learned`), ``gower-table``
(the same in the table's own frame, new rows at the table's mean distance per lag; no corpus).
Sinusoidal (the formula evaluated at every position), ALiBi, T5 and NoPE: ``none``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.extension.model import ExtensionModel

__all__ = ["Strategy", "enumerate_strategies", "men_theta_bound", "rope_strategy"]

YARN_BETAS = ((32.0, 1.0), (16.0, 1.0), (64.0, 2.0))
LLAMA3_BANDS = ((1.0, 4.0), (1.0, 8.0))
NTK_MULTIPLES = (1.0, 2.0, 4.0, 8.0)
LONGROPE_POWERS = (0.5, 1.0, 2.0)


@dataclass(frozen=True, eq=False)
class Strategy:
    """One strategy: ``name`` (unique), ``family``, ``kind`` (``none``, ``linear``, ``ntk``,
    ``dynamic``, ``yarn``, ``llama3``, ``longrope``, ``fitted``, ``clamp``, ``interpolate``,
    ``gower``, ``gower-table``), ``rope_parameters`` (RoPE only; transformers 5 spelling) and
    ``description``."""

    name: str
    family: str
    kind: str
    rope_parameters: Mapping[str, Any] | None = None
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def frequencies(
        self, model: ExtensionModel, seq_len: int, trained_length: int
    ) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` at ``seq_len`` (``(F,)`` float64)."""
        from posgeom.encodings.rope_types import rope_frequencies, rope_type_of

        if self.rope_parameters is None:
            raise PosgeomError(f"strategy {self.name!r} has no rope parameters")
        p = dict(self.rope_parameters)
        return rope_frequencies(
            rope_type_of(p),
            int(model.head_dim),
            float(p["rope_theta"]),
            p,
            seq_len=int(seq_len),
            context=int(trained_length),
        )

    def config_changes(self, trained_length: int, target_length: int) -> dict[str, Any]:
        """The ``config.json`` keys to set besides ``rope_parameters``: ``max_position_embeddings
        = L`` (transformers expects ``original_max_position_embeddings < max_position_embeddings``),
        except for dynamic NTK, which reads ``max_position_embeddings`` as the trained length."""
        if self.rope_parameters is None:
            return {}
        dynamic = self.rope_parameters.get("rope_type") == "dynamic"
        return {"max_position_embeddings": int(trained_length if dynamic else target_length)}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "family": self.family, "kind": self.kind}
        if self.rope_parameters is not None:
            out["rope_parameters"] = _jsonable(self.rope_parameters)
        out["description"] = self.description
        return out


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, (list, tuple)):
            v = [float(x) for x in v]
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def men_theta_bound(length: int) -> float:
    """Men et al. (2024)'s lower bound on the RoPE base for context ``length``:
    ``theta >= 0.0424 L^1.628``."""
    return 0.0424 * float(length) ** 1.628


def _base(model: ExtensionModel) -> dict[str, Any]:
    """The keys every strategy keeps: ``rope_theta`` and ``partial_rotary_factor``."""
    keep = {"rope_theta": float(model.rope_theta)}
    if model.rope_parameters.get("partial_rotary_factor") is not None:
        keep["partial_rotary_factor"] = float(model.rope_parameters["partial_rotary_factor"])
    return keep


def rope_strategy(
    model: ExtensionModel, name: str, kind: str, params: Mapping[str, Any], description: str
) -> Strategy:
    """A RoPE strategy whose ``rope_parameters`` are the model's base keys plus ``params``."""
    return Strategy(name, "rope", kind, {**_base(model), **dict(params)}, description)


def _rotary_dim(model: ExtensionModel) -> int:
    return int(model.head_dim * float(model.rope_parameters.get("partial_rotary_factor") or 1.0))


def _ntk(model: ExtensionModel, s: float, target: int) -> list[Strategy]:
    d, theta = _rotary_dim(model), model.rope_theta
    thetas = {round(theta * (a * s) ** (d / (d - 2))): f"a = {a * s:g}" for a in NTK_MULTIPLES}
    bound = men_theta_bound(target)
    if bound > theta:
        thetas.setdefault(round(bound), f"Men et al.'s bound 0.0424 L^1.628 at L = {target}")
    return [
        rope_strategy(
            model,
            f"ntk theta={t}",
            "ntk",
            {"rope_type": "default", "rope_theta": float(t)},
            f"static NTK: base {theta:g} -> {t} ({why})",
        )
        for t, why in sorted(thetas.items())
    ]


def _rope(model: ExtensionModel, l0: int, target: int) -> list[Strategy]:
    s = target / l0
    orig = {"original_max_position_embeddings": int(l0)}
    own = dict(model.rope_parameters)
    out = [Strategy("none", "rope", "none", own, "the model's own rope parameters, unchanged")]
    out.append(
        rope_strategy(
            model,
            f"linear x{s:g}",
            "linear",
            {"rope_type": "linear", "factor": s},
            "position interpolation: every frequency divided by s",
        )
    )
    out += _ntk(model, s, target)
    out.append(
        rope_strategy(
            model,
            f"dynamic x{s:g}",
            "dynamic",
            {"rope_type": "dynamic", "factor": s},
            "dynamic NTK (base grows with the current length; keep max_position_embeddings = L0)",
        )
    )
    for fast, slow in YARN_BETAS:
        params = {"rope_type": "yarn", "factor": s, "beta_fast": fast, "beta_slow": slow, **orig}
        out.append(
            rope_strategy(
                model,
                f"yarn x{s:g} b{fast:g}/{slow:g}",
                "yarn",
                params,
                "YaRN ramp with its attention factor 0.1 ln s + 1",
            )
        )
    params = {"rope_type": "yarn", "factor": s, "beta_fast": 32.0, "beta_slow": 1.0, **orig}
    out.append(
        rope_strategy(
            model,
            f"yarn x{s:g} b32/1 no-attn",
            "yarn",
            {**params, "attention_factor": 1.0},
            "YaRN ramp without its attention factor",
        )
    )
    for low, high in LLAMA3_BANDS:
        params = {"rope_type": "llama3", "factor": s, "low_freq_factor": low,
                  "high_freq_factor": high, **orig}  # fmt: skip
        out.append(
            rope_strategy(
                model,
                f"llama3 x{s:g} {low:g}/{high:g}",
                "llama3",
                params,
                "Llama 3 wavelength bands",
            )
        )
    out += [longrope_strategy(model, l0, target, _ramp(model, s, p), f"longrope p={p:g}",
                              f"per-plane factors s^((f/(F-1))^{p:g})") for p in LONGROPE_POWERS]  # fmt: skip
    return out


def _ramp(model: ExtensionModel, s: float, power: float) -> np.ndarray:
    f = _rotary_dim(model) // 2
    return s ** ((np.arange(f) / max(f - 1, 1)) ** power)


def longrope_strategy(
    model: ExtensionModel,
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


def enumerate_strategies(
    model: ExtensionModel, trained_length: int, target_length: int
) -> list[Strategy]:
    """Every strategy of the module docstring that applies to ``model`` (``fitted`` excluded:
    it needs the corpus, :func:`posgeom.extension.score_strategies` adds it)."""
    l0, target = int(trained_length), int(target_length)
    if not 1 < l0 < target:
        raise PosgeomError(
            f"the target length ({target}) must exceed the trained length ({l0}); pass "
            "--target-length above --trained-length"
        )
    if model.family == "rope":
        return _rope(model, l0, target)
    if model.family == "learned":
        return [
            Strategy("clamp", "learned", "clamp", None, "positions past L0 reuse the last row"),
            Strategy("interpolate", "learned", "interpolate", None, "rows at i (L0-1)/(L-1)"),
            Strategy("gower", "learned", "gower", None, "Gower extension in the corpus MDS frame"),
            Strategy("gower-table", "learned", "gower-table", None,
                     "Gower extension in the table's own MDS frame, new rows at its mean lag "
                     "distances"),
        ]  # fmt: skip
    return [Strategy("none", model.family, "none", None, f"{model.family} as it is")]
