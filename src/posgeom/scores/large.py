"""Stress for long contexts without an ``n x n`` matrix: in blocks (exact) or from sampled pairs.

Both take position vectors ``(n, d)`` and a *target provider*: any object with ``block(rows,
cols) -> (len(rows), len(cols))`` distances and ``pairs(i, j) -> distances`` (for example
:class:`posgeom.geometry.divergences.HellingerBlocks`, or :class:`DenseTarget` around a matrix).
All stress kinds are functions of four sums over pairs ``i < j``::

    raw = sum (delta - D)^2,  S_DD = sum D^2,  S_dd = sum delta^2,  S_dD = sum delta D

so the blocked version accumulates them block by block (memory: one block), and the sampled one
estimates them from uniformly drawn pairs; since every kind is a ratio of such sums, the sampled
stress is a ratio estimator and its confidence interval comes from the delta method.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import ndtri

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, float_array, validate_params
from posgeom.scores._encoding import encoding_block, n_positions_of
from posgeom.scores.stress import StressScores, stress_from_pair_sample, stress_from_sums

__all__ = [
    "DenseTarget",
    "SampledStress",
    "blocked_stress",
    "sampled_stress",
]

log = logging.getLogger("posgeom")


class DenseTarget:
    """Target provider around an explicit ``(n, n)`` distance matrix."""

    def __init__(self, distances: np.ndarray):
        self.distances = np.asarray(distances, dtype=np.float64)

    @property
    def n_positions(self) -> int:
        return self.distances.shape[0]

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.distances[np.ix_(rows, cols)]

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.distances[i, j]


def _positions_of(target: Any) -> int:
    """``target.n_positions`` of a distance provider, or a one-line refusal."""
    n = getattr(target, "n_positions", None)
    if n is None:
        raise PosgeomError(
            "target must be a distance provider with n_positions (posgeom.HellingerBlocks(mu), "
            f"an estimate's blocks()), not a {type(target).__name__}"
        )
    return int(n)


@validate_params({"block_size": [Interval(Integral, 1, None)], "progress": [bool]})
def blocked_stress(
    encoding: Any, target: Any, *, block_size: int = 2048, progress: bool = False
) -> StressScores:
    """Exact stress of an encoding (vectors, lag profile or distances) against a target provider,
    one block at a time (memory: one block of each)."""
    n, got = _positions_of(target), n_positions_of(encoding)
    if got != n:
        raise PosgeomError(f"the encoding has {got} positions but the target has {n}")
    sums = np.zeros(4)  # raw, S_DD, S_dd, S_dD
    starts = range(0, n, block_size)
    total, done = len(starts) * (len(starts) + 1) // 2, 0
    for a in starts:
        rows = np.arange(a, min(a + block_size, n))
        for b in range(a, n, block_size):
            cols = np.arange(b, min(b + block_size, n))
            dt = target.block(rows, cols)
            de = encoding_block(encoding, rows, cols)
            if a == b:
                mask = np.triu(np.ones((len(rows), len(cols)), dtype=bool), 1)
                dt, de = dt[mask], de[mask]
            sums += [np.sum((de - dt) ** 2), np.sum(dt * dt), np.sum(de * de), np.sum(de * dt)]
            done += 1
            if progress and done % max(1, total // 20) == 0:
                log.info("blocked stress: %d/%d blocks", done, total)
    return stress_from_sums(*sums)


@dataclass(eq=False)
class SampledStress:
    """Sampled stress with delta-method confidence intervals for each kind."""

    estimate: StressScores
    intervals: dict[str, tuple[float, float]]
    n_pairs: int
    confidence: float

    def __repr__(self) -> str:
        return f"SampledStress(paper={self.estimate.paper:.6g}, ci={self.intervals['paper']}, n_pairs={self.n_pairs})"


@validate_params(
    {
        "n_pairs": [Interval(Integral, 2, None)],
        "seed": [Interval(Integral, 0, None)],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
    }
)
def sampled_stress(
    encoding: Any,
    target: Any,
    *,
    n_pairs: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SampledStress:
    """Stress estimated from ``n_pairs`` uniformly drawn pairs ``i != j`` (with a seed), with
    the intervals of :func:`~posgeom.scores.stress.stress_from_pair_sample`."""
    n = _positions_of(target)
    x = float_array(getattr(encoding, "vectors", encoding), "the encoding")
    if x.ndim != 2 or x.shape[0] != n:
        raise PosgeomError(f"expected (n={n}, d) position vectors, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise PosgeomError("the encoding contains NaN or Inf")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, n_pairs)
    j = (i + rng.integers(1, n, n_pairs)) % n
    dt = target.pairs(i, j)
    de = np.linalg.norm(x[i] - x[j], axis=1)
    z = float(ndtri(0.5 + confidence / 2))
    estimate, intervals = stress_from_pair_sample(de, dt, z, n_positions=n)
    return SampledStress(estimate, intervals, n_pairs, confidence)
