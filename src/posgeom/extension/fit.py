"""Per-plane RoPE factors fitted to the corpus's lag geometry, and the rotation-phase metrics.

**Phases.** Plane ``f`` of the trained model turns by ``k w_f`` at lag ``k``; training at length
``L0`` showed the phases ``[0, (L0 - 1) w_f]``, the whole circle when ``(L0 - 1) w_f >= 2 pi``. A
strategy with frequencies ``w'_f`` at target length ``L`` shows ``[0, (L - 1) w'_f]``. Per plane::

    seen_f   = min((L0 - 1) w_f, 2 pi)
    unseen_f = max(0, min((L - 1) w'_f, 2 pi) - seen_f) / (2 pi)      (share of the circle)

:func:`phase_report` gives ``unseen_phase_fraction = mean_f unseen_f`` and ``unseen_planes``, the
number of planes reaching more than one trained step ``w_f`` past ``seen_f``, and ``incomplete_planes``, those whose circle training did
not complete (the "critical dimension" view: ``(L0 - 1) w_f < 2 pi``).

**Fit.** LongRoPE writes ``w'_f = w_f / lambda_f`` (``long_factor``). :func:`fit_factors`
minimises, over ``log lambda_f`` in ``[0, log(4 s)]`` (``s = L / L0``; no plane sped up),

    scale-optimal stress(rope_lag_vectors(w / lambda, lags), D_lags) + penalty unseen_phase_fraction

with L-BFGS-B (numerical gradients) from three starts (no scaling, position interpolation
``lambda = s``, the ramp ``lambda_f = s^(f / (F - 1))``), keeping the lowest. ``D_lags`` is the
corpus's estimated lag geometry at the lags up to ``L - 1``: where the corpus has no long-range
signal the fit only sees noise there, and the penalty keeps phases inside those seen in training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FactorFit", "fit_factors", "phase_report"]

TWO_PI = 2.0 * np.pi


def phase_report(
    trained_freq: Any, freq: Any, trained_length: int, target_length: int
) -> dict[str, Any]:
    """``unseen_phase_fraction``, ``unseen_planes``, ``incomplete_planes`` (module docstring)."""
    w0 = np.asarray(trained_freq, dtype=np.float64)
    w = np.asarray(freq, dtype=np.float64)
    seen = np.minimum((trained_length - 1) * w0, TWO_PI)
    reach = np.minimum((target_length - 1) * w, TWO_PI)
    unseen = np.maximum(reach - seen, 0.0) / TWO_PI
    beyond_a_step = reach - seen > w0  # more than one trained position's turn past the seen
    return {
        "unseen_phase_fraction": float(unseen.mean()),
        "unseen_planes": int(np.count_nonzero(beyond_a_step)),
        "incomplete_planes": int(np.count_nonzero(seen < TWO_PI)),
        "planes": int(w.size),
    }


@dataclass(frozen=True, eq=False)
class FactorFit:
    """The fitted ``factors`` ``(F,)``, the objective's ``stress`` and ``unseen`` parts at the
    optimum, ``penalty``, and the optimiser's ``message``."""

    factors: np.ndarray
    stress: float
    unseen: float
    penalty: float
    message: str


def _stress(vectors: np.ndarray, target: np.ndarray, iu: tuple) -> float:
    from posgeom.scores.stress import stress_from_pairs

    diff = vectors[:, None, :] - vectors[None, :, :]
    delta = np.sqrt(np.sum(diff * diff, axis=-1))[iu]
    return float(stress_from_pairs(delta, target[iu]).scale_optimal)


def _objective(
    z: np.ndarray, w0: np.ndarray, gaps: np.ndarray, target: np.ndarray, seen: np.ndarray,
    reach_len: int, penalty: float,
) -> tuple[float, np.ndarray]:  # fmt: skip
    """The fit's objective and its gradient in ``z = log lambda``.

    Stress: ``S = 1 - a^2 / (b c)``, ``a = sum delta D``, ``b = sum delta^2``, ``c = sum D^2``,
    with unit-plane rotary lag distances ``delta^2 = 2 sum_f (1 - cos(g w_f))`` (``g = |k - k'|``,
    ``w = w0 e^-z``), so ``d delta / d w_f = g sin(g w_f) / delta``. Penalty: ``mean_f
    max(0, min((L - 1) w_f, 2 pi) - seen_f) / 2 pi`` (its gradient where it is linear)."""
    w = w0 * np.exp(-z)
    phase = gaps[:, None] * w[None, :]
    delta = np.sqrt(np.maximum(2.0 * np.sum(1.0 - np.cos(phase), axis=1), 0.0))
    a, b, c = delta @ target, delta @ delta, target @ target
    if b <= 0:
        return 1.0 + penalty, np.zeros_like(z)
    stress = 1.0 - a * a / (b * c)
    d_delta = -2.0 * a * target / (b * c) + 2.0 * a * a * delta / (b * b * c)
    safe = np.where(delta > 0, delta, np.inf)
    d_w = ((d_delta * gaps / safe)[:, None] * np.sin(phase)).sum(axis=0)
    reach = reach_len * w
    unseen = np.maximum(np.minimum(reach, TWO_PI) - seen, 0.0) / TWO_PI
    active = (reach < TWO_PI) & (reach > seen)
    d_w = d_w + penalty * active * reach_len / (TWO_PI * w.size)
    return float(stress + penalty * unseen.mean()), -w * d_w


def fit_factors(
    trained_freq: Any,
    lags: Any,
    target: Any,
    *,
    trained_length: int,
    target_length: int,
    penalty: float = 1.0,
) -> FactorFit:
    """Fit per-plane factors ``lambda`` to the ``(m, m)`` lag geometry ``target`` at ``lags``."""
    from scipy.optimize import minimize

    from posgeom.lags.kernels import rope_lag_vectors

    w0 = np.asarray(trained_freq, dtype=np.float64)
    d = np.asarray(target, dtype=np.float64)
    iu = np.triu_indices(d.shape[0], 1)
    lag = np.asarray(lags, dtype=np.float64)
    gaps, tri = np.abs(lag[iu[1]] - lag[iu[0]]), d[iu]
    s = target_length / trained_length
    upper = np.log(4.0 * s)

    seen = np.minimum((trained_length - 1) * w0, TWO_PI)
    args = (w0, gaps, tri, seen, target_length - 1, float(penalty))
    f = w0.size
    starts = [np.zeros(f), np.full(f, np.log(s)), np.arange(f) / max(f - 1, 1) * np.log(s)]
    best = None
    for z0 in starts:
        res = minimize(
            _objective, z0, args=args, jac=True, method="L-BFGS-B",
            bounds=[(0.0, upper)] * f, options={"maxiter": 500},
        )  # fmt: skip
        if best is None or res.fun < best.fun - 1e-12:
            best = res

    def parts(z: np.ndarray, exact: bool = True) -> tuple[float, float]:
        w = w0 / np.exp(z)
        st = _stress(rope_lag_vectors(w, lags), d, iu)
        un = phase_report(w0, w, trained_length, target_length)["unseen_phase_fraction"]
        return st, un

    st, un = parts(best.x, exact=True)  # reported with the scores' own stress
    return FactorFit(np.exp(best.x), st, un, float(penalty), str(best.message))
