"""Hidden channels monotone in position (Yu et al. 2025, "Mitigate Position Bias in Large
Language Models via Scaling a Single Dimension", arXiv 2406.02536: "positional hidden states").

For every layer ``l`` and channel ``c``, the Spearman correlation ``ρ_lc`` between the channel's
per-position mean ``m_l(i)[c]`` and the position ``i = 0 .. n-1`` (ties averaged; a constant
channel has ``ρ = 0``). A channel is **monotone** when ``|ρ| >= threshold`` (default 0.9) and
its two-sided permutation p-value is below ``alpha / d`` (Bonferroni over the channels; the
exact null of Spearman's ρ under a random order of ``n`` distinct values, read from its
t-approximation ``t = ρ sqrt((n - 2) / (1 - ρ²))``, ``n - 2`` degrees of freedom).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

__all__ = ["channel_spearman", "monotone_channels"]


def channel_spearman(means: np.ndarray) -> np.ndarray:
    """``(L+1, d)`` Spearman ρ of every channel's per-position mean with the position;
    ``means`` ``(L+1, n, d)``."""
    m = np.asarray(means, dtype=np.float64)
    n = m.shape[1]
    ranks = stats.rankdata(m, axis=1)  # (L+1, n, d), ties averaged
    pos = np.arange(n, dtype=np.float64)
    pos -= pos.mean()
    r = ranks - ranks.mean(axis=1, keepdims=True)
    denom = np.sqrt((r**2).sum(axis=1)) * np.sqrt((pos**2).sum())
    num = np.einsum("lnd,n->ld", r, pos)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(denom > 0, num / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(rho, -1.0, 1.0)


def monotone_channels(
    means: np.ndarray, *, threshold: float = 0.9, alpha: float = 0.05, top: int = 5
) -> list[dict[str, Any]]:
    """One row per layer: ``monotone`` (count), ``channels`` (the ``top`` strongest monotone
    channels as ``[channel, ρ]``), ``max_abs_rho`` (module docstring)."""
    rho = channel_spearman(means)
    n, d = np.asarray(means).shape[1], rho.shape[1]
    with np.errstate(divide="ignore"):
        t = np.abs(rho) * np.sqrt((n - 2) / np.clip(1 - rho**2, 1e-300, None))
    p = 2 * stats.t.sf(t, n - 2)
    rows = []
    for layer in range(rho.shape[0]):
        hit = np.flatnonzero((np.abs(rho[layer]) >= threshold) & (p[layer] < alpha / d))
        order = hit[np.argsort(-np.abs(rho[layer, hit]), kind="stable")][:top]
        rows.append(
            {
                "layer": layer,
                "monotone": int(hit.size),
                "channels": [[int(c), round(float(rho[layer, c]), 4)] for c in order],
                "max_abs_rho": float(np.abs(rho[layer]).max()),
            }
        )
    return rows
