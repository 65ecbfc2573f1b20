"""How much of each Hellinger distance is sampling noise.

Late positions of a short-text corpus have few samples, so their estimated ``mu_i`` are noisy and a
Hellinger distance computed from them is biased upwards: even two samples of the *same*
distribution are at a positive distance. Two estimates, both from the counts alone:

* ``method="split_half"``: each position's samples are split at random into two halves
  (multivariate hypergeometric), and ``s_i`` is the chord between the two halves' distributions.
  Since ``E s_i^2 ≈ 4 b_i`` where ``b_i = E||sqrt(mû_i) - sqrt(mu_i)||^2`` is the per-position
  bias at the full sample size (each half has ``T_i / 2`` samples and the bias scales as
  ``1 / T``), the noise floor of a pair is ``floor_ij = sqrt((s_i^2 + s_j^2) / 4)``: an estimated
  ``D_ij`` below it cannot be told apart from two samples of one distribution.
* ``method="bootstrap"``: rows are resampled ``Multinomial(T_i, mû_i)`` and the distances
  recomputed; ``distance_std`` is the spread of ``D_ij`` over the replicates, and the floor uses
  the bootstrap bias ``b_i = mean ||sqrt(mû*_i) - sqrt(mû_i)||^2``.

``NoiseFloor.trusted(threshold)`` marks pairs with ``D_ij > threshold * floor_ij``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom._records import field_record
from posgeom._validation import Interval, Options, check_param, validate_params
from posgeom.geometry.counts import count_matrix
from posgeom.geometry.distributions import positional_distributions
from posgeom.geometry.divergences import hellinger_distances
from posgeom.geometry.split_half import _row_chords, split_half_squared

__all__ = ["REPEATS", "NoiseFloor", "SampledNoiseFloor", "noise_floor", "sampled_noise_floor"]

# splits or replicates of a noise floor: its error falls as 1/sqrt(R), past 1000 nothing is gained
REPEATS = [Interval(Integral, 1, 1000)]


def _summary_head(floor: NoiseFloor | SampledNoiseFloor) -> dict[str, Any]:
    """The summary fields both noise floors share (method, repeats, pair floor, trusted share)."""
    record = field_record(floor, ("method", "n_repeats", "median_pair_floor"))
    return record | {"trusted_pair_share": floor.trusted_share}


@dataclass(frozen=True, eq=False)
class NoiseFloor:
    """Sampling-noise estimates for a Hellinger geometry (chord convention).

    Attributes
    ----------
    distances : (n, n) the estimated Hellinger distances from all samples
    self_distance : (n,) chord between two halves of a position (split-half) or ``2 sqrt(b_i)``
    pair_floor : (n, n) ``sqrt(b_i + b_j)``: distance expected from sampling noise alone
    distance_std : (n, n) or None: bootstrap standard deviation of each distance
    totals : (n,) samples per position

    Set when made (plain data, as in :class:`SampledNoiseFloor`): ``trusted_pairs``
    (:meth:`trusted` at 2, read-only), its share ``trusted_share`` and ``median_pair_floor``
    over pairs ``i < j``."""

    distances: np.ndarray
    self_distance: np.ndarray
    pair_floor: np.ndarray
    distance_std: np.ndarray | None
    totals: np.ndarray
    method: str
    n_repeats: int
    trusted_pairs: np.ndarray = field(init=False, repr=False)
    trusted_share: float = field(init=False, repr=False)
    median_pair_floor: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        trusted, iu = self.trusted(), np.triu_indices_from(self.pair_floor, 1)
        trusted.setflags(write=False)
        object.__setattr__(self, "trusted_pairs", trusted)
        object.__setattr__(self, "trusted_share", float(trusted[iu].mean()) if iu[0].size else 0.0)
        object.__setattr__(self, "median_pair_floor", float(np.median(self.pair_floor[iu])))

    def trusted(self, threshold: float = 2.0) -> np.ndarray:
        """Boolean (n, n): ``D_ij > threshold * floor_ij`` (diagonal False)."""
        out = self.distances > threshold * self.pair_floor
        np.fill_diagonal(out, False)
        return out

    def summary(self, positions: np.ndarray) -> dict[str, Any]:
        """JSON-ready: method, median pair floor, share of trusted pairs, untrusted positions."""
        return _summary_head(self) | {
            "untrusted_positions": np.asarray(positions)[self.untrusted_positions()].tolist(),
        }

    def untrusted_positions(self, threshold: float = 2.0, share: float = 0.5) -> np.ndarray:
        """Positions for which more than ``share`` of their distances are not trusted."""
        n = self.distances.shape[0]
        bad = (~self.trusted(threshold)).sum(axis=1) - 1  # minus the diagonal
        return np.flatnonzero(bad > share * (n - 1))


def _resample_rows(c: sp.csr_matrix, rng: np.random.Generator) -> sp.csr_matrix:
    out = c.copy().astype(np.float64)
    for i in range(c.shape[0]):
        lo, hi = c.indptr[i], c.indptr[i + 1]
        row = c.data[lo:hi].astype(np.float64)
        total = round(row.sum())
        if total > 0:
            out.data[lo:hi] = rng.multinomial(total, row / row.sum())
    return out


def _checked_counts(counts: Any) -> tuple[sp.csr_matrix, np.ndarray]:
    cm = count_matrix(counts)
    if not cm.integer:
        raise PosgeomError("noise_floor needs non-negative integer counts, not probabilities")
    c, totals = cm.counts, cm.totals
    if np.any(totals < 2):
        first = int(np.flatnonzero(totals < 2)[0])
        raise PosgeomError(
            f"position {first} has fewer than 2 samples; a noise floor needs >= 2 per position "
            "(lower max_positions or drop thin positions first)"
        )
    return c, totals


@validate_params(
    {
        "method": [Options({"split_half", "bootstrap"})],
        "n_repeats": REPEATS,
        "seed": [Interval(Integral, 0, None)],
    }
)
def noise_floor(
    counts: Any,
    *,
    method: Literal["split_half", "bootstrap"] = "split_half",
    n_repeats: int = 10,
    seed: int = 0,
) -> NoiseFloor:
    """Estimate the sampling-noise floor of the Hellinger geometry of ``counts``.

    Parameters
    ----------
    counts : PositionCounts or (n, V) integer counts (sparse or dense); every position needs
        at least 2 samples.
    method : {"split_half", "bootstrap"}
    n_repeats : random splits or bootstrap replicates (averaged)
    seed : random seed (identical results for identical seeds)
    """
    c, totals = _checked_counts(counts)
    rng = np.random.default_rng(seed)
    dist = hellinger_distances(positional_distributions(c))
    std = None
    if method == "split_half":
        sq = split_half_squared(c, n_repeats, rng)
        bias, self_distance = sq / 4.0, np.sqrt(sq)
    else:  # bootstrap
        reps = np.empty((n_repeats, *dist.shape))
        bias = np.zeros(c.shape[0])
        for k in range(n_repeats):
            boot = _resample_rows(c, rng)
            reps[k] = hellinger_distances(positional_distributions(boot))
            bias += _row_chords(boot, c) ** 2
        bias /= n_repeats
        std = reps.std(axis=0, ddof=1) if n_repeats > 1 else np.zeros_like(dist)
        self_distance = 2.0 * np.sqrt(bias)
    floor = np.sqrt(bias[:, None] + bias[None, :])
    np.fill_diagonal(floor, 0.0)
    return NoiseFloor(
        distances=dist,
        self_distance=self_distance,
        pair_floor=floor,
        distance_std=std,
        totals=totals,
        method=method,
        n_repeats=n_repeats,
    )


@dataclass(frozen=True, eq=False)
class SampledNoiseFloor:
    """The noise floor of a long context: per-position bias ``b_i`` exactly (``O(nnz)``), the
    pair statistics from ``m`` uniform pairs ``(i, j)``: ``trusted_share``, the share with
    ``D_ij > threshold * floor_ij`` (Wilson interval ``trusted_ci``), and ``median_pair_floor``
    of ``floor_ij = sqrt(b_i + b_j)``. Positions are not judged one by one."""

    self_distance: np.ndarray
    bias: np.ndarray
    totals: np.ndarray
    method: str
    n_repeats: int
    median_pair_floor: float
    trusted_share: float
    trusted_ci: tuple[float, float]
    n_pairs: int

    def summary(self, positions: np.ndarray) -> dict[str, Any]:
        return _summary_head(self) | {
            "trusted_pair_share_ci": list(self.trusted_ci),
            "sampled_pairs": self.n_pairs,
            "untrusted_positions_note": "not judged per position at this n (sampled pairs)",
        }


def sampled_noise_floor(
    counts: Any,
    pairs: tuple[np.ndarray, np.ndarray],
    plugin_distances: np.ndarray,
    *,
    n_repeats: int = 5,
    seed: int = 0,
    threshold: float = 2.0,
    confidence: float = 0.95,
) -> SampledNoiseFloor:
    """Split-half noise floor without ``n x n`` matrices: ``b_i`` as :func:`noise_floor` does
    (drawn by :func:`~posgeom.geometry.split_half._half_counts`), then the trusted share over
    the drawn ``pairs`` ``(i, j)`` at which ``plugin_distances`` are the plug-in ``D_ij``."""
    from posgeom.scores.order import wilson_interval

    check_param("n_repeats", n_repeats, REPEATS)
    c, totals = _checked_counts(counts)
    rng = np.random.default_rng(seed)
    sq = split_half_squared(c, n_repeats, rng, vectorized=True)
    bias, self_distance = sq / 4.0, np.sqrt(sq)
    i, j = pairs
    floor = np.sqrt(bias[i] + bias[j])
    trusted = int(np.count_nonzero(np.asarray(plugin_distances) > threshold * floor))
    m = int(np.size(i))
    return SampledNoiseFloor(
        self_distance=self_distance,
        bias=bias,
        totals=totals,
        method="split_half",
        n_repeats=n_repeats,
        median_pair_floor=float(np.median(floor)),
        trusted_share=trusted / max(m, 1),
        trusted_ci=wilson_interval(trusted, m, confidence),
        n_pairs=m,
    )
