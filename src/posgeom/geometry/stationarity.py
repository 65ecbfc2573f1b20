"""How much of a distance matrix is a function of ``|i - j|`` alone: exactly, or from sampled pairs.

:func:`stationarity` reads every pair of an ``(n, n)`` matrix. :func:`sampled_stationarity` reads
a *blocks target* (``n_positions``, ``pairs(i, j)``) at pairs drawn per lag bin, so a long
context (``n = 131,072``: 8.6e9 pairs) needs no ``(n, n)`` matrix; its R^2 carry
delete-a-group jackknife intervals. Both return a :class:`StationarityResult`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtri

from posgeom._distance_matrix import as_distances
from posgeom._errors import PosgeomError
from posgeom._records import field_record

__all__ = ["LAG_BINS", "StationarityResult", "sampled_stationarity", "stationarity"]

log = logging.getLogger("posgeom")
LAG_BINS = 512  # lag bins of the sampled fit (every lag its own bin when n - 1 <= LAG_BINS)
_GROUPS = 20  # jackknife groups


@dataclass(frozen=True, eq=False)
class StationarityResult:
    """How much of a distance matrix is explained by a function of ``|i - j|`` alone.

    Over pairs ``i < j`` (each pair weighted equally), with ``k = |i - j|``:

    * ``diagonal_mean[k-1] = mean_{|i-j|=k} D_ij`` (``k = 1 .. n-1``): the best Toeplitz
      approximation ``T_ij = diagonal_mean[|i-j| - 1]`` in the least-squares sense;
    * ``toeplitz_r2 = 1 - sum (D - T)^2 / sum (D - mean D)^2``;
    * ``monotone_fit``: the best *non-decreasing* function of ``k`` (weighted isotonic regression of
      ``diagonal_mean`` with weights ``n - k``, equal to isotonic regression over all pairs), and
      ``monotone_r2`` its R^2 (``<= toeplitz_r2``). ALiBi (``m |i-j|``) and RoPE/sinusoidal
      geometries are functions of ``|i - j|``, so these bound how well they can fit.
    * ``diagonal_std[k-1]``: spread of ``D`` along diagonal ``k`` (0 for an exact Toeplitz matrix).

    When every ``D_ij`` (``i < j``) is equal the denominator is zero; both R^2 are then 1.

    Sampled (:func:`sampled_stationarity`): ``lag_edges`` (``B + 1``) splits the lags into bins
    ``[lag_edges[b], lag_edges[b+1])``; the arrays hold one value per bin, the fit is constant on
    each bin (its R^2 at most the per-lag one), ``toeplitz_ci`` / ``monotone_ci`` are its
    intervals and ``sampling`` says how. Set at construction: ``sampled`` and ``line``, the one
    sentence of a table's text.
    """

    toeplitz_r2: float
    monotone_r2: float
    diagonal_mean: np.ndarray
    diagonal_std: np.ndarray
    monotone_fit: np.ndarray
    n_positions: int
    lag_edges: np.ndarray | None = None
    toeplitz_ci: tuple[float, float] | None = None
    monotone_ci: tuple[float, float] | None = None
    sampling: dict[str, Any] | None = None
    sampled: bool = field(init=False, repr=False)
    line: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampled", self.lag_edges is not None)
        object.__setattr__(self, "line", self._line())

    def toeplitz(self) -> np.ndarray:
        """The best Toeplitz approximation ``T`` (``(n, n)``, zero diagonal; small ``n`` only)."""
        idx = np.arange(self.n_positions)
        gap = np.abs(idx[:, None] - idx[None, :])
        per_lag = self.diagonal_mean
        if self.sampled:
            per_lag = self.diagonal_mean[np.searchsorted(self.lag_edges, gap[0, 1:], "right") - 1]
        return np.concatenate([[0.0], per_lag])[gap]

    def summary(self) -> dict[str, Any]:
        out = {
            **field_record(self, ("toeplitz_r2", "monotone_r2", "n_positions")),
            "definition": "R^2 over pairs i<j of D_ij against the mean of D on its diagonal "
            "|i-j| (best Toeplitz approximation) and against the best non-decreasing function of "
            "|i-j| (weighted isotonic regression)",
            **field_record(self, ("diagonal_mean", "diagonal_std", "monotone_fit")),
        }
        if self.sampled:
            out["definition"] += (
                "; sampled: the fit is constant on lag bins [lag_edges[b], lag_edges[b+1]) "
                "(a lower bound of the per-lag R^2, equal when every bin is one lag), estimated "
                "from pairs drawn uniformly within each bin (bins with few pairs read whole)"
            )
            out |= {
                "lag_edges": self.lag_edges.tolist(),
                "toeplitz_r2_ci": list(self.toeplitz_ci),
                "monotone_r2_ci": list(self.monotone_ci),
                "sampling": self.sampling,
            }
        return out

    def _line(self) -> str:
        """One sentence for a table's text (:attr:`line`)."""
        if not self.sampled:
            return (
                f"Stationarity: R^2 of D against the best function of |i - j| (Toeplitz) = "
                f"{self.toeplitz_r2:.4f}; against the best non-decreasing function of |i - j| = "
                f"{self.monotone_r2:.4f}."
            )
        s, (tl, th), (ml, mh) = self.sampling, self.toeplitz_ci, self.monotone_ci
        return (
            f"Stationarity (sampled: {s['pairs']:,} pairs in {len(self.lag_edges) - 1} lag bins, "
            f"{100 * s['confidence']:.0f}% jackknife intervals): R^2 of D against the best "
            f"function of the lag bin of |i - j| = {self.toeplitz_r2:.4f} [{tl:.4f}, {th:.4f}]; "
            f"against the best non-decreasing one = {self.monotone_r2:.4f} [{ml:.4f}, {mh:.4f}]."
        )


def _r2(residual: float, total: float) -> float:
    if total <= 0:
        return 1.0 if residual <= 1e-30 else 0.0
    return float(1.0 - residual / total)


def _isotonic(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    from scipy.optimize import isotonic_regression

    return np.asarray(isotonic_regression(values, weights=weights, increasing=True).x, float)


def stationarity(distances: Any) -> StationarityResult:
    """Stationarity diagnostic of an ``(n, n)`` distance matrix (or an object with
    ``.distances``), ``n >= 3`` (see :class:`StationarityResult`)."""
    d = as_distances(distances).distances
    n = d.shape[0]
    if n < 3:
        raise PosgeomError(f"stationarity needs at least 3 positions, got {n}")
    i, j = np.triu_indices(n, 1)
    vals = d[i, j]
    k = j - i
    weights = np.bincount(k, minlength=n)[1:].astype(np.float64)  # n - k pairs on diagonal k
    sums = np.bincount(k, weights=vals, minlength=n)[1:]
    sq = np.bincount(k, weights=vals**2, minlength=n)[1:]
    mean = sums / weights
    std = np.sqrt(np.clip(sq / weights - mean**2, 0.0, None))
    total = float(np.sum((vals - vals.mean()) ** 2))
    res_t = float(np.sum((vals - mean[k - 1]) ** 2))
    mono = _isotonic(mean, weights)
    res_m = float(np.sum((vals - mono[k - 1]) ** 2))
    return StationarityResult(
        toeplitz_r2=_r2(res_t, total),
        monotone_r2=_r2(res_m, total),
        diagonal_mean=mean,
        diagonal_std=std,
        monotone_fit=mono,
        n_positions=n,
    )


# ----------------------------------------------------------------------------- sampled
def lag_bins(n: int, bins: int) -> np.ndarray:
    """``B + 1`` edges splitting the lags ``1 .. n-1`` into ``B = min(bins, n - 1)`` contiguous
    bins of near-equal width (``[edges[b], edges[b+1])``)."""
    return np.unique(np.linspace(1, n, min(bins, n - 1) + 1).round().astype(np.int64))


def _draw(n: int, edges: np.ndarray, per_bin: int, rng: np.random.Generator) -> tuple:
    """Pairs per bin: every pair of a bin with at most ``per_bin`` pairs (``group = -1``), else
    ``per_bin`` pairs uniform within the bin (with replacement; groups ``0 .. G-1``).

    A pair ``i < j`` of lag ``k = j - i`` has the index ``u = cum[k - 1] + i``
    (``cum[t] = sum_{k <= t} (n - k)``), so a uniform ``u`` in a bin's range is a uniform pair."""
    cum = np.concatenate([[0], np.cumsum(n - np.arange(1, n, dtype=np.int64))])
    lo, hi = cum[edges[:-1] - 1], cum[edges[1:] - 1]  # pair-index range of each bin
    size = hi - lo
    u_parts, bin_parts, group_parts = [], [], []
    for b in range(len(size)):
        whole = size[b] <= per_bin
        if whole:
            u = np.arange(lo[b], hi[b])
        else:
            u = rng.integers(lo[b], hi[b], per_bin, dtype=np.int64)
        u_parts.append(u)
        bin_parts.append(np.full(u.size, b))
        group_parts.append(np.full(u.size, -1) if whole else np.arange(u.size) % _GROUPS)
    u = np.concatenate(u_parts)
    t = np.searchsorted(cum, u, side="right") - 1  # lag - 1
    i = u - cum[t]
    return i, i + t + 1, np.concatenate(bin_parts), np.concatenate(group_parts), size


def _fit(stats: np.ndarray, weight: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """``(toeplitz_r2, monotone_r2, bin means, isotonic fit)`` from per-bin ``(count, sum,
    sum of squares, corrected)`` rows: ``corrected`` 1 where the bin is a sample (unbiased
    within-bin variance), 0 where it was read whole; bins weighted by their pair share."""
    cnt, s1, s2, corr = stats
    mean = s1 / cnt
    unbiased = np.divide(cnt, cnt - 1, out=np.ones_like(cnt), where=corr > 0)
    within = np.clip(s2 / cnt - mean**2, 0.0, None) * unbiased
    grand = float(weight @ mean)
    total = float(weight @ (within + mean**2)) - grand**2
    mono = _isotonic(mean, weight)
    res_t = float(weight @ within)
    res_m = res_t + float(weight @ (mean - mono) ** 2)
    return _r2(res_t, total), _r2(res_m, total), mean, mono


def _clip(r2: float, half: float) -> tuple[float, float]:
    """``r2 -+ half`` within ``[0, 1]`` (both fits contain the constant, so ``R^2 >= 0``)."""
    return max(0.0, r2 - half), min(1.0, r2 + half)


def sampled_stationarity(
    target: Any,
    *,
    bins: int = LAG_BINS,
    size: int = 100_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> StationarityResult:
    """The stationarity diagnostic of a blocks target from about ``size`` sampled pairs.

    Lags are split into ``B = min(bins, n - 1)`` bins (:func:`lag_bins`); each bin gets
    ``ceil(size / B)`` pairs drawn uniformly within it (``default_rng(seed)``), or all of its pairs
    when it has no more. With ``W_b`` the exact share of pairs in bin ``b``, ``m_b`` / ``v_b`` the
    bin's mean / within-bin variance (unbiased for sampled bins):
    ``R^2_T = 1 - sum_b W_b v_b / V``, ``R^2_M = 1 - sum_b W_b (v_b + (m_b - iso_b)^2) / V``,
    ``V = sum_b W_b (v_b + m_b^2) - (sum_b W_b m_b)^2``, ``iso`` the isotonic regression of ``m``
    with weights ``W``. Intervals: delete-a-group jackknife over 20 groups of the sampled pairs
    (normal quantile at ``confidence``). ``O(size)`` pair evaluations; no ``(n, n)`` matrix.
    """
    from posgeom.scores.sampled import target_pairs

    n = int(target.n_positions)
    if n < 3:
        raise PosgeomError(f"stationarity needs at least 3 positions, got {n}")
    edges = lag_bins(n, int(bins))
    n_bins = len(edges) - 1
    per_bin = max(2 * _GROUPS, -(-int(size) // n_bins))
    i, j, b, g, pairs_in_bin = _draw(n, edges, per_bin, np.random.default_rng(seed))
    log.info("stationarity: %d pairs in %d lag bins", i.size, n_bins)
    d = target_pairs(target, i, j, label="stationarity")
    weight = pairs_in_bin / pairs_in_bin.sum()

    def stats(keep: np.ndarray) -> np.ndarray:
        row = [
            np.bincount(b[keep], weights=w, minlength=n_bins) for w in (None, d[keep], d[keep] ** 2)
        ]
        return np.vstack([*row, np.bincount(b[keep], weights=(g[keep] >= 0), minlength=n_bins)])

    full = stats(np.ones(d.size, bool))
    t_r2, m_r2, mean, mono = _fit(full, weight)
    leave = np.array([_fit(stats(g != h), weight)[:2] for h in range(_GROUPS)])
    se = np.sqrt((_GROUPS - 1) / _GROUPS * np.sum((leave - leave.mean(0)) ** 2, axis=0))
    z = float(ndtri(0.5 + confidence / 2))
    cnt, s1, s2, _ = full
    return StationarityResult(
        toeplitz_r2=t_r2,
        monotone_r2=m_r2,
        diagonal_mean=mean,
        diagonal_std=np.sqrt(np.clip(s2 / cnt - (s1 / cnt) ** 2, 0.0, None)),
        monotone_fit=mono,
        n_positions=n,
        lag_edges=edges,
        toeplitz_ci=_clip(t_r2, z * se[0]),
        monotone_ci=_clip(m_r2, z * se[1]),
        sampling={
            "pairs": int(d.size),
            "pairs_per_bin": int(per_bin),
            "bins_read_whole": int(np.count_nonzero(pairs_in_bin <= per_bin)),
            "seed": int(seed),
            "confidence": float(confidence),
            "interval": f"delete-a-group jackknife ({_GROUPS} groups), normal quantile",
        },
    )
