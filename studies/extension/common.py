"""What the extension study's tracks share: rank statistics, the RoPE rules of thumb, binned
losses and the resume keys of a results file.

Rank agreement (:func:`rank_agreement`): for strategies with a measured loss on each of the same
windows and a score where larger means "predicted better", Spearman's rho between the score and
minus the mean loss (ties averaged, as ``scipy.stats.spearmanr``), a 95% percentile bootstrap
interval from ``N_BOOT`` = 2,000 resamples (seed ``SEED`` = 0) of the strategies and of the
windows, and whether the score's best strategy is among the two lowest measured losses.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

N_BOOT, SEED = 2000, 0


# ------------------------------------------------------------------------------ baseline rules
def rope_freqs(params: dict[str, Any], head_dim: int, seq_len: int, l0: int) -> np.ndarray:
    from posgeom.encodings.rope_types import rope_frequencies, rope_type_of

    p = {k: v for k, v in params.items() if k not in ("rope_type", "type")}
    kind = rope_type_of(params) if "rope_type" in params else params.get("type", "default")
    theta = float(params.get("rope_theta", p.pop("base", 10000.0)))
    return rope_frequencies(kind, head_dim, theta, p, seq_len=seq_len, context=l0)[0]


def baseline_scores(
    params: dict[str, Any] | None, *, theta: float, head_dim: int, l0: int, target: int
) -> dict[str, float]:
    """The rule-of-thumb scores of one RoPE strategy (larger = predicted better)."""
    base = {"rope_type": "default", "rope_theta": theta}
    w = rope_freqs(base, head_dim, target, l0)
    w_new = rope_freqs(params or base, head_dim, target, l0)
    critical = (2 * math.pi / w) > l0
    leaves = w_new * target > w * l0 * (1 + 1e-6)
    d = len(w) * 2
    theta_eff = w_new.min() ** (-d / (d - 2))
    bound = 0.0424 * target**1.628
    return {
        "factor rule": -abs(math.log(w.min() / w_new.min()) - math.log(target / l0)),
        "critical planes": -float(np.sum(critical & leaves)),
        "Men bound": min(0.0, math.log(theta_eff) - math.log(bound)),
    }


# ------------------------------------------------------------------------------ statistics
def rank_agreement(
    scores: dict[str, float], losses: dict[str, list[float]], *, seed: int = SEED
) -> dict[str, Any]:
    """Spearman of ``scores`` with minus the mean loss, bootstrap interval, best-in-top-2.

    ``losses``: strategy -> the loss on each window (same windows, same order, for every
    strategy).
    """
    names = [n for n in losses if n in scores and np.isfinite(scores[n])]
    if len(names) < 3:
        return {"n_strategies": len(names), "spearman": None}
    s = np.array([scores[n] for n in names], dtype=np.float64)
    loss = np.array([losses[n] for n in names], dtype=np.float64)  # (strategies, windows)
    mean = loss.mean(1)
    rho = spearman(s, -mean)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(names), (N_BOOT, len(names)))
    j = rng.integers(0, loss.shape[1], (N_BOOT, loss.shape[1]))
    boot_loss = np.stack([loss[i[b]][:, j[b]].mean(1) for b in range(N_BOOT)])
    boot = spearman_rows(s[i], -boot_loss)
    boot = boot[np.isfinite(boot)]
    order = np.argsort(mean)
    top2 = {names[k] for k in order[:2]}
    best = [names[k] for k in np.flatnonzero(s == s.max())]
    return {
        "n_strategies": len(names),
        "n_windows": int(loss.shape[1]),
        "spearman": rho,
        "ci95": interval(boot),
        "predicted_best": best,
        # ties in the order the strategies came (a set's own order changes with the hash seed)
        "measured_top2": sorted(top2, key=lambda n: (mean[names.index(n)], names.index(n))),
        "best_in_top2": all(b in top2 for b in best),
    }


def interval(boot: np.ndarray) -> list[float] | None:
    if not boot.size:
        return None
    return [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(stats.spearmanr(a, b).statistic)


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``(B, n)`` arrays (average ranks for ties; NaN where a
    row is constant): the Pearson correlation of the ranks, as ``scipy.stats.spearmanr``."""
    ra, rb = stats.rankdata(a, axis=1), stats.rankdata(b, axis=1)
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    den = np.sqrt((ra**2).sum(1) * (rb**2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(1) / np.where(den > 0, den, 1.0), np.nan)


# ------------------------------------------------------------------------------ results files
def bin_mean(bins: list[float], size: int, lo: int, hi: int) -> float:
    """Mean loss over positions ``lo ... hi-1`` from per-``size`` bin means (bin 0 holds
    ``size - 1`` losses: position 0 is never predicted); ``lo``, ``hi`` multiples of ``size``."""
    b = np.asarray(bins, dtype=np.float64)
    w = np.full(len(b), float(size))
    w[0] = size - 1
    i, j = lo // size, hi // size
    return float(np.sum(b[i:j] * w[i:j]) / np.sum(w[i:j]))


def done_keys(results: Path, key: Any = None) -> set[tuple]:
    """The keys of the records already in ``results`` (JSON lines): ``key(record)``, by default
    ``(strategy, text, window)``, so a rerun measures only the rest."""
    if not results.exists():
        return set()
    key = key or (lambda r: (r["strategy"], r["text"], r["window"]))
    return {key(json.loads(line)) for line in results.read_text().splitlines() if line.strip()}


#: the issue's reference strategies, measured first (the fitted ones after the first two)
