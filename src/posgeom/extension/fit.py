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

**Constrained** (``constrained=True``, what ``posgeom extend`` fits; issue 23 item 3): the planes
that turn fully inside ``L0`` (``2 pi / w_f < L0``: the fast planes, whose every kernel value the
model was trained on) keep ``lambda_f = 1``; the others get factors non-decreasing from fast to
slow (LongRoPE's monotone constraint), written ``log lambda = cumsum(delta)``, ``delta >= 0``;
and the model-aware in-window change (:func:`posgeom.extension.usage.model_scores`, weighted by
``use``, uniform without it) is added with weight ``change_penalty``, so a fit that moves the
trained window pays for it.
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
    z: np.ndarray,
    w0: np.ndarray,
    gaps: np.ndarray,
    target: np.ndarray,
    seen: np.ndarray,
    reach_len: int,
    penalty: float,
) -> tuple[float, np.ndarray]:
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


def _change(z: np.ndarray, w0: np.ndarray, use: np.ndarray, l0: int) -> tuple[float, np.ndarray]:
    """In-window change ``sum_f u_f sum_k p_k (1 - cos(k (w_f - w0_f))) / 2`` (attention factor
    1; ``p_k`` proportional to ``1/k``, ``k < L0``) and its gradient in ``z = log lambda``."""
    k = np.arange(1, l0, dtype=np.float64)
    p = (1.0 / k) / np.sum(1.0 / k)
    w = w0 * np.exp(-z)
    arg = k[:, None] * (w - w0)[None, :]
    value = float(use @ (p @ (1.0 - np.cos(arg)) / 2.0))
    d_w = use * (p @ (k[:, None] * np.sin(arg)) / 2.0)
    return value, -w * d_w


def _constrained(free: np.ndarray, args: tuple, extra: tuple) -> Any:
    """The objective in the monotone increments ``delta`` of the free planes."""
    w0, use, l0, mu = extra

    def fn(delta: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.zeros(w0.size)
        z[free] = np.cumsum(delta)
        value, grad = _objective(z, *args)
        change, d_change = _change(z, w0, use, l0)
        grad = grad + mu * d_change
        return value + mu * change, np.cumsum(grad[free][::-1])[::-1]

    return fn


def _best_start(fn: Any, starts: list, upper: float, args: tuple = ()) -> Any:
    """The best bounded L-BFGS-B run (``z`` in ``[0, upper]``, ``fn`` returning value and
    gradient) over ``starts``: a later start replaces the best only below it by ``1e-12``."""
    from scipy.optimize import minimize

    best = None
    for x0 in starts:
        res = minimize(
            fn,
            x0,
            args=args,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, upper)] * x0.size,
            options={"maxiter": 500},
        )
        if best is None or res.fun < best.fun - 1e-12:
            best = res
    return best


def fit_factors(
    trained_freq: Any,
    lags: Any,
    target: Any,
    *,
    trained_length: int,
    target_length: int,
    penalty: float = 1.0,
    constrained: bool = False,
    use: Any = None,
    change_penalty: float = 1.0,
) -> FactorFit:
    """Fit per-plane factors ``lambda`` to the ``(m, m)`` lag geometry ``target`` at ``lags``
    (``constrained``: fast planes fixed, monotone, in-window change penalised; module
    docstring)."""
    from posgeom.encodings.rope_extension import rope_lag_vectors

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
    if constrained:
        free = np.flatnonzero(2.0 * np.pi / w0 >= trained_length)
        weights = np.full(f, 1.0 / f) if use is None else np.asarray(use, dtype=np.float64)
        fn = _constrained(free, args, (w0, weights, int(trained_length), float(change_penalty)))
        n = free.size
        ramp = np.arange(1, n + 1) / max(n, 1) * np.log(s)
        zs = (np.zeros(n), ramp, np.full(n, np.log(s)))
        best = _best_start(fn, [np.diff(np.concatenate([[0.0], z0])) for z0 in zs], upper)
        z = np.zeros(f)
        z[free] = np.minimum(np.cumsum(best.x), upper)
        best.x = z
    else:
        starts = [np.zeros(f), np.full(f, np.log(s)), np.arange(f) / max(f - 1, 1) * np.log(s)]
        best = _best_start(_objective, starts, upper, args=args)

    w = w0 / np.exp(best.x)
    st = _stress(rope_lag_vectors(w, lags), d, iu)  # reported with the scores' own stress
    un = phase_report(w0, w, trained_length, target_length)["unseen_phase_fraction"]
    return FactorFit(np.exp(best.x), st, un, float(penalty), str(best.message))
