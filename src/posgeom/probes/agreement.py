"""Is decodable position the same as corpus-faithful position? Probes beside the geometry.

Per layer ``l`` the three measures are the linear probe's error ``e_l`` (positions, lower: more
decodable), the scale-optimal stress ``s_l`` of the layer's per-position means against the
corpus geometry (lower: closer to the corpus) and the variance share ``R²_l`` explained by
position (higher: more positional). Across layers:

* ``rho(e, s)``: Spearman correlation of probe error and stress; positive when the layers that
  are easy to decode are also the corpus-faithful ones;
* ``rho(e, R²)``: Spearman of probe error and R²; negative when decodable layers are positional.

Each comes with a percentile bootstrap interval over layers (``B`` resamples of the layers with
replacement, ``default_rng(seed)``; a resample whose values are all tied is skipped).

The verdict (none below :data:`MIN_LAYERS` layers): *agree* when the interval of ``rho(e, s)``
lies above 0, *disagree* when below, otherwise *undecided*; it names the layers where the two
rankings part most (largest difference of ranks).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from posgeom.uncertainty._intervals import bootstrap_interval

__all__ = ["agreement"]


def _spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair of ``a``, ``b`` ``(B, L)`` (ties averaged); NaN where a row
    is constant."""
    ra, rb = stats.rankdata(a, axis=-1), stats.rankdata(b, axis=-1)
    ra -= ra.mean(axis=-1, keepdims=True)
    rb -= rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((ra**2).sum(-1) * (rb**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(-1) / np.where(den > 0, den, 1.0), np.nan)


def _interval(a: np.ndarray, b: np.ndarray, *, level: float, boot: int, seed: int) -> dict:
    rho = float(_spearman_rows(a[None], b[None])[0])
    pick = np.random.default_rng(seed).integers(0, a.size, (boot, a.size))
    reps = _spearman_rows(a[pick], b[pick])
    reps = reps[np.isfinite(reps)]
    if not np.isfinite(rho) or reps.size < 2:
        return {"rho": rho, "low": float("nan"), "high": float("nan"), "level": level}
    iv = bootstrap_interval(rho, reps, level=level, method="percentile")
    return {
        "rho": rho,
        "low": iv.low,
        "high": iv.high,
        "level": level,
        "replicates": int(reps.size),
    }


MIN_LAYERS = 5  # fewer layers: no verdict (a bootstrap of 3 ranks says nothing)


def _verdict(es: dict, error: np.ndarray, stress: np.ndarray) -> tuple[str, list[str]]:
    if error.size < MIN_LAYERS:
        return "undecided", [
            f"With {error.size} layers the probe and the geometry cannot be ranked against each "
            f"other (a verdict needs at least {MIN_LAYERS}; Spearman {es['rho']:+.2f})."
        ]
    if not np.isfinite(es["low"]):
        return "undecided", ["the layers do not vary enough to rank them"]
    if es["low"] > 0:
        word = "agree"
        text = "Decodable and corpus-faithful position agree: the layers whose position a probe reads best are those closest to the corpus geometry"
    elif es["high"] < 0:
        word = "disagree"
        text = "Decodable and corpus-faithful position disagree: the layers whose position a probe reads best are the furthest from the corpus geometry"
    else:
        word = "undecided"
        text = "Decodable and corpus-faithful position are not shown to go together or apart across layers"
    lines = [
        f"{text} (Spearman {es['rho']:+.2f}, {es['level']:.0%} interval [{es['low']:+.2f}, {es['high']:+.2f}] over layers)."
    ]
    gap = np.abs(stats.rankdata(error) - stats.rankdata(stress))
    if gap.max() > 0:
        worst = [int(i) for i in np.argsort(-gap, kind="stable")[:2] if gap[i] > 0]
        lines.append(
            "They part most at layer(s) "
            + ", ".join(
                f"{i} (probe error {error[i]:.2f} positions, stress {stress[i]:.3f})" for i in worst
            )
            + "."
        )
    return word, lines


def agreement(
    error: np.ndarray,
    stress: np.ndarray,
    r2: np.ndarray,
    *,
    level: float = 0.95,
    boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The module's comparison of per-layer ``error``, ``stress`` and ``r2`` ``(L+1,)``."""
    e, s, r = (np.asarray(v, dtype=np.float64) for v in (error, stress, r2))
    es = _interval(e, s, level=level, boot=boot, seed=seed)
    er = _interval(e, r, level=level, boot=boot, seed=seed + 1)
    word, lines = _verdict(es, e, s)
    return {
        "error_vs_stress": es,
        "error_vs_r2": er,
        "verdict": word,
        "words": lines,
        "protocol": {
            "error": "linear probe MAE (positions) per layer",
            "stress": "scale-optimal stress of the layer's per-position means against the corpus geometry",
            "interval": f"percentile bootstrap over layers, {boot} resamples, seed {seed}",
        },
    }
