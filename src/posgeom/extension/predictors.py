"""The forward-free predictors of which RoPE strategy extends a model best (larger = better).

Every predictor maps a strategy (its frequencies ``w'`` and attention factor ``a`` at the target
``L``; the model's own frequencies ``w`` at ``L0``; ``s = L / L0``; per-plane factors
``lambda_j = w_j / w'_j``) to a number, larger = predicted better:

- ``model-aware``: ``-model_score`` of :func:`posgeom.extension.usage.model_scores` with the
  model's plane use read from its query/key weights (:func:`posgeom.extension.usage.plane_use`);
- ``model-aware, in window`` / ``model-aware, beyond``: its two parts (``-in_window_change``,
  ``-beyond_unseen``), and ``model-aware in window + factor rule``, their rank-sum with the rule;
- ``kernel, uniform planes``: the same with every plane weighted ``1 / F`` (the ablation without
  the model's weights);
- ``factor rule`` (PI / NTK / YaRN's "scale by L / L0"): ``-|ln lambda_slowest - ln s|``;
- ``fast-plane distortion``: ``-mean |ln lambda_j|`` over the planes that turn fully inside
  ``L0`` (``2 pi / w_j < L0``);
- ``fast planes + factor rule``: minus the sum of the strategies' ranks by the two above;
- ``critical planes`` (Liu et al. 2023): minus the number of planes with period above ``L0`` whose
  phase at ``L`` leaves the trained range;
- ``Men bound`` (Men et al. 2024, ``theta >= 0.0424 L^1.628``): ``min(0, ln theta_eff - ln
  bound)``, ``theta_eff = w'_min^(-d / (d - 2))``.

The corpus's lag stress (:func:`posgeom.extension.score_strategies`) and its rank-sum with
``model-aware`` (``corpus + model``) are added by :func:`with_corpus`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom.extension.usage import model_scores

__all__ = ["MODEL_AWARE", "frequency_values", "predictor_values", "rank_sum", "with_corpus"]

MODEL_AWARE = "model-aware"


def rank_sum(values: Mapping[str, Mapping[str, float]], first: str, second: str) -> dict:
    """Minus the sum of the strategies' ranks by two predictors (rank 1 = predicted best)."""
    from scipy.stats import rankdata

    names = list(values[first])
    a = rankdata([-values[first][n] for n in names])
    b = rankdata([-values[second][n] for n in names])
    return {n: -float(x + y) for n, x, y in zip(names, a, b, strict=True)}


def _one(
    w0: np.ndarray, w: np.ndarray, att: float, use: np.ndarray, l0: int, target: int
) -> dict[str, float]:
    lam = w0 / w
    fast = 2.0 * np.pi / w0 < l0
    d = 2 * w.size
    uniform = np.full(w.size, 1.0 / w.size)
    critical = (2.0 * np.pi / w0 > l0) & (w * target > w0 * l0 * (1 + 1e-6))
    theta_eff = float(w.min()) ** (-d / (d - 2))
    aware = model_scores(use, w0, w, att, l0, target)
    return {
        MODEL_AWARE: -aware["model_score"],
        f"{MODEL_AWARE}, in window": -aware["in_window_change"],
        f"{MODEL_AWARE}, beyond": -aware["beyond_unseen"],
        "kernel, uniform planes": -model_scores(uniform, w0, w, att, l0, target)["model_score"],
        "factor rule": -abs(math.log(lam[np.argmin(w0)]) - math.log(target / l0)),
        "fast-plane distortion": -float(np.mean(np.abs(np.log(lam[fast])))) if fast.any() else 0.0,
        "critical planes": -float(np.count_nonzero(critical)),
        "Men bound": min(0.0, math.log(theta_eff) - math.log(0.0424 * target**1.628)),
    }


def predictor_values(
    model: Any, strategies: Sequence[Any], target_length: int, use: Any = None
) -> dict[str, dict[str, float]]:
    """predictor -> strategy name -> value for RoPE ``strategies`` (``Strategy`` objects) on an
    :class:`~posgeom.extension.model.ExtensionModel`; ``use``: the plane-use weights ``(F,)``
    (None: ``model-aware`` is left out)."""
    from posgeom.encodings._extension import Strategy

    l0 = int(model.trained_length)
    own = Strategy("own", "rope", "none", dict(model.rope_parameters))
    w0, _ = own.frequencies(model, l0, l0)
    freqs = {s.name: s.frequencies(model, target_length, l0) for s in strategies}
    return frequency_values(w0, freqs, l0, int(target_length), use)


def frequency_values(
    trained_freq: np.ndarray,
    freqs: Mapping[str, tuple[np.ndarray, float]],
    trained_length: int,
    target_length: int,
    use: Any = None,
) -> dict[str, dict[str, float]]:
    """:func:`predictor_values` from the frequencies: ``trained_freq`` ``(F,)`` the model's own,
    ``freqs`` name -> ``(w', attention factor)`` at ``target_length``."""
    w0 = np.asarray(trained_freq, np.float64)
    weights = np.full(w0.size, 1.0 / w0.size) if use is None else np.asarray(use, np.float64)
    per = {
        name: _one(
            w0, np.asarray(w, np.float64), float(att), weights, trained_length, target_length
        )
        for name, (w, att) in freqs.items()
    }
    names = list(per)
    out = {k: {n: per[n][k] for n in names} for k in per[names[0]]} if names else {}
    if use is None:
        for key in (MODEL_AWARE, f"{MODEL_AWARE}, in window", f"{MODEL_AWARE}, beyond"):
            out.pop(key, None)
    if names:
        out["fast planes + factor rule"] = rank_sum(out, "fast-plane distortion", "factor rule")
    if names and use is not None:
        out[f"{MODEL_AWARE} in window + factor rule"] = rank_sum(
            out, f"{MODEL_AWARE}, in window", "factor rule"
        )
    return out


def with_corpus(values: dict[str, dict[str, float]], stress: Mapping[str, float]) -> dict:
    """``values`` plus ``lag stress (corpus)`` (minus the scale-optimal stress) and, with
    ``model-aware``, ``corpus + model`` (their rank sum)."""
    out = dict(values)
    out["lag stress (corpus)"] = {n: -float(v) for n, v in stress.items()}
    if MODEL_AWARE in out:
        out["corpus + model"] = rank_sum(out, "lag stress (corpus)", MODEL_AWARE)
    return out
