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

import logging
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, validate_params
from posgeom.geometry.counts import count_matrix
from posgeom.geometry.distributions import plugin_roots, positional_distributions
from posgeom.geometry.divergences import hellinger_distances

log = logging.getLogger("posgeom")
__all__ = ["REPEATS", "NoiseFloor", "SampledNoiseFloor", "noise_floor", "sampled_noise_floor"]

# splits or replicates of a noise floor: its error falls as 1/sqrt(R), past 1000 nothing is gained
REPEATS = [Interval(Integral, 1, 1000)]


def _summary_head(floor: NoiseFloor | SampledNoiseFloor) -> dict[str, Any]:
    """The summary fields both noise floors share (method, repeats, pair floor, trusted share)."""
    return {
        "method": floor.method,
        "n_repeats": floor.n_repeats,
        "median_pair_floor": floor.median_pair_floor,
        "trusted_pair_share": floor.trusted_share,
    }


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

    def signal_to_noise(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            snr = np.where(self.pair_floor > 0, self.distances / self.pair_floor, np.inf)
        np.fill_diagonal(snr, 0.0)
        return snr

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


_EXACT_SPLIT_MAX = 10**9 - 1  # numpy's multivariate hypergeometric takes fewer samples


def _split_rows(c: sp.csr_matrix, rng: np.random.Generator) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each row split into two random halves: exactly ``total // 2`` samples drawn without
    replacement, or, past :data:`_EXACT_SPLIT_MAX` samples, each sample kept with probability
    1/2 (``Binomial(c, 1/2)`` per token: halves equal to a relative ``1/sqrt(total)``)."""
    half = c.copy()
    for i in range(c.shape[0]):
        lo, hi = c.indptr[i], c.indptr[i + 1]
        row = c.data[lo:hi].astype(np.int64)
        total = int(row.sum())
        if total > _EXACT_SPLIT_MAX:
            half.data[lo:hi] = rng.binomial(row, 0.5)
        elif total >= 2:
            half.data[lo:hi] = rng.multivariate_hypergeometric(row, total // 2)
    other = c - half
    return half.tocsr(), other.tocsr()


def split_rows_vectorized(
    c: sp.csr_matrix, rng: np.random.Generator
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each row's samples split at random into halves of ``floor(T_i / 2)`` and the rest (the
    distribution of :func:`_split_rows`, other draws): :func:`_half_counts` as two CSR matrices."""
    half = _half_counts(c, rng)
    data = c.data.astype(np.int64)
    a = sp.csr_matrix((half, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    b = sp.csr_matrix((data - half, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    a.eliminate_zeros()
    b.eliminate_zeros()
    return a, b


def _half_counts(c: sp.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """The first half's counts on ``c``'s stored entries (``(nnz,)`` int64; the second half is
    ``c.data - half``): ``floor(T_i / 2)`` of row ``i``'s samples drawn without replacement, the
    multivariate hypergeometric drawn as successive hypergeometrics, the ``k``-th stored token of
    every row at once (``O(nnz)`` work in ``max_i nnz_i`` vectorised steps instead of one call
    per row). The rows are held longest first, so the rows with a ``k``-th token are a prefix and
    their running totals are contiguous slices."""
    data = np.asarray(c.data, dtype=np.int64)
    nnz = np.diff(c.indptr)
    order = np.argsort(-nnz, kind="stable")
    sorted_nnz = nnz[order]
    start = c.indptr[:-1][order]
    remaining = np.diff(np.concatenate([[0], np.cumsum(data)])[c.indptr])[order]  # row totals
    need = remaining // 2
    half = np.zeros_like(data)
    prefix = np.searchsorted(-sorted_nnz, -np.arange(int(nnz.max(initial=0))), side="left")
    for k, m in enumerate(prefix):
        idx = start[:m] + k
        good = data[idx]
        remaining[:m] -= good
        half[idx] = x = _hypergeometric(good, remaining[:m], need[:m], rng)
        need[:m] -= x
    return half


def _hypergeometric(
    good: np.ndarray, bad: np.ndarray, sample: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``Hypergeometric(good, bad, sample)`` draws; where ``good == 1`` (most stored counts of a
    Zipfian tail) the draw is ``Bernoulli(sample / (1 + bad))``, exactly, from one uniform (a
    numpy hypergeometric draw costs about 100 times more)."""
    x = np.empty_like(good)
    single = good == 1
    x[single] = rng.random(int(single.sum())) * (bad[single] + 1) < sample[single]
    many = ~single
    x[many] = rng.hypergeometric(good[many], bad[many], sample[many])
    return x


def _halves_squared_chords(c: sp.csr_matrix, half: np.ndarray, chunk: int = 2**18) -> np.ndarray:
    """``||sqrt(a_i / A_i) - sqrt(b_i / B_i)||^2`` per row for the halves ``a = half`` and ``b =
    c.data - half`` on ``c``'s stored entries (``A_i``, ``B_i`` their row totals): both halves
    share ``c``'s pattern, so the sum runs over its stored entries, term by term, ``O(nnz)``, in
    row ranges of about ``chunk`` entries (small temporaries, reused)."""
    n = c.shape[0]
    out = np.zeros(n)
    cuts = np.unique(np.searchsorted(c.indptr, np.arange(0, c.nnz, chunk), side="right") - 1)
    for lo, hi in zip(cuts, [*cuts[1:], n], strict=True):
        sl = slice(c.indptr[lo], c.indptr[hi])
        counts = np.diff(c.indptr[lo : hi + 1])
        rows = np.repeat(np.arange(hi - lo), counts)
        a = half[sl].astype(np.float64)
        b = c.data[sl] - a
        ta = np.bincount(rows, weights=a, minlength=hi - lo)
        tb = np.bincount(rows, weights=b, minlength=hi - lo)
        a /= np.maximum(ta, 1e-300)[rows]
        b /= np.maximum(tb, 1e-300)[rows]
        np.sqrt(a, out=a)
        np.sqrt(b, out=b)
        a -= b
        a *= a
        out[lo:hi] = np.bincount(rows, weights=a, minlength=hi - lo)
    return out


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


def _row_chords(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    diff = (plugin_roots(a) - plugin_roots(b)).tocsr()
    diff.data **= 2
    return np.sqrt(np.asarray(diff.sum(axis=1)).ravel())


def split_half_squared(
    c: sp.csr_matrix, n_repeats: int, rng: np.random.Generator, *, vectorized: bool = False
) -> np.ndarray:
    """``s_i^2``: the squared chord between two random halves of each row, mean of
    ``n_repeats`` splits (``(n,)``; ``O(nnz)`` per split, no ``n x n`` matrix). ``vectorized``:
    the halves drawn by :func:`_half_counts` (long contexts; one Python step per stored token
    of the longest row instead of one per row), else by :func:`_split_rows`."""
    sq = np.zeros(c.shape[0])
    for r in range(n_repeats):
        if c.shape[0] > 4096:
            log.info("noise floor: split %d/%d", r + 1, n_repeats)
        if vectorized:
            sq += _halves_squared_chords(c, _half_counts(c, rng))
        else:
            sq += _row_chords(*_split_rows(c, rng)) ** 2
    return sq / n_repeats


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
        bias = sq / 4.0
        self_distance = np.sqrt(sq)
    elif method == "bootstrap":
        reps = np.empty((n_repeats, *dist.shape))
        bias = np.zeros(c.shape[0])
        for k in range(n_repeats):
            boot = _resample_rows(c, rng)
            reps[k] = hellinger_distances(positional_distributions(boot))
            bias += _row_chords(boot, c) ** 2
        bias /= n_repeats
        std = reps.std(axis=0, ddof=1) if n_repeats > 1 else np.zeros_like(dist)
        self_distance = 2.0 * np.sqrt(bias)
    else:
        raise PosgeomError(f"unknown method {method!r}; use 'split_half' or 'bootstrap'")
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
    pair statistics from ``m`` uniform pairs ``(i, j)`` (no ``n x n`` matrix).

    ``trusted_share`` estimates the share of pairs ``i < j`` with ``D_ij > threshold * floor_ij``
    (Wilson interval ``trusted_ci``); ``median_pair_floor`` is the sample median of
    ``floor_ij = sqrt(b_i + b_j)``. Positions are not judged one by one (a few pairs each).
    """

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
    (the same split distribution, drawn by :func:`_half_counts`), then the trusted share
    over the drawn ``pairs`` ``(i, j)`` at which ``plugin_distances`` are the plug-in ``D_ij``."""
    from posgeom._validation import check_param
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
