"""Order-based scores: monotonicity violations (Conjecture 5), separation (Theorem 4), Shepard table.

Monotonicity (Conjecture 5): for an anchor ``i`` and two other positions ``j != k``, the conjecture
says ``D_ij < D_ik  =>  delta_ij <= delta_ik``. A triple *violates* it when the target orders the
pair strictly and the encoding orders it strictly the other way; a triple the target orders
strictly and the encoding ties (``delta_ij == delta_ik``) counts as half a violation: the encoding
does not say which of ``j``, ``k`` is nearer, a coin toss would be right half of the time. Triples
whose target distances tie (``D_ij == D_ik``) say nothing and are excluded.

    rate = (#{discordant} + #{encoding ties} / 2) / #{(i, {j, k}) : D_ij != D_ik}
         = (1 - D_anchor) / 2

where ``D_anchor`` is Somers' ``D(delta | D)`` of the pooled anchor rows (concordant minus
discordant over the pairs the target orders; :func:`scipy.stats.somersd` per anchor, weighted by
its informative pairs). A random encoding scores about 0.5, and so does an encoding with every
distance equal (NoPE: every informative triple a tie), so neither beats chance on it; an encoding
that orders every informative triple as ``D`` scores 0.

Differences within ``tie_rtol`` times the largest distance of their matrix count as ties, so
round-off cannot create violations (an MDS encoding isometric to ``D`` scores exactly 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import ndtri

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, validate_params
from posgeom.scores import registry
from posgeom.scores._encoding import (
    EncodingKind,
    encoding_distances,
    encoding_pairs,
    matched_distance_matrices,
    pair_vectors,
)

__all__ = [
    "ViolationRate",
    "draw_triples",
    "monotonicity_violation_rate",
    "separation_at_scale",
    "separation_margin",
    "shepard_table",
]


@dataclass(frozen=True)
class ViolationRate:
    """Monotonicity violation rate with a confidence interval (exact: the interval is the point).
    ``n_violations``: discordant triples plus half the encoding's ties (a multiple of 0.5);
    ``n_ties``: the informative triples the encoding ties."""

    rate: float
    ci_low: float
    ci_high: float
    n_triples: int
    n_violations: float
    exact: bool
    confidence: float
    n_ties: int = 0

    def __float__(self) -> float:
        return self.rate


def _signs(diff: np.ndarray, tol: float) -> np.ndarray:
    return np.where(np.abs(diff) <= tol, 0.0, np.sign(diff))


def wilson_interval(k: float, m: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / m`` (``k`` may count halves)."""
    if m == 0:
        return 0.0, 1.0
    z = float(ndtri(0.5 + confidence / 2))
    p = k / m
    den = 1 + z**2 / m
    centre = (p + z**2 / (2 * m)) / den
    half = z * np.sqrt(p * (1 - p) / m + z**2 / (4 * m**2)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


@validate_params(
    {
        "method": [Options({"auto", "exact", "sampled"})],
        "max_exact_positions": [Interval(Integral, 0, None)],
        "n_samples": [Interval(Integral, 1, None)],
        "seed": [Interval(Integral, 0, None)],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "encoding_kind": [Options({"auto", "vectors", "distances"})],
        "tie_rtol": [Interval(Real, 0, None)],
    }
)
def monotonicity_violation_rate(
    encoding: Any,
    target: Any,
    *,
    method: str = "auto",
    max_exact_positions: int = 400,
    n_samples: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    encoding_kind: EncodingKind = "auto",
    tie_rtol: float = 1e-9,
) -> ViolationRate:
    """Fraction of informative triples ``(i, j, k)`` whose encoding distances contradict the target.

    Parameters
    ----------
    method : {"auto", "exact", "sampled"}
        ``"exact"`` counts all ``n (n-1)(n-2)/2`` triples (``O(n^3)`` time, ``O(n^2)`` memory);
        ``"sampled"`` draws ``n_samples`` uniform triples with ``seed`` and reports a Wilson
        interval; ``"auto"`` is exact up to ``max_exact_positions``.
    tie_rtol : float
        Distance differences within ``tie_rtol`` times the matrix's largest distance are ties.
    """
    delta, tgt = matched_distance_matrices(encoding, target, encoding_kind=encoding_kind)
    return violation_rate_of_matrices(
        delta,
        tgt,
        method=method,
        max_exact_positions=max_exact_positions,
        n_samples=n_samples,
        seed=seed,
        confidence=confidence,
        tie_rtol=tie_rtol,
    )


def violation_rate_of_matrices(
    delta: np.ndarray,
    tgt: np.ndarray,
    *,
    method: str = "auto",
    max_exact_positions: int = 400,
    n_samples: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    tie_rtol: float = 1e-9,
) -> ViolationRate:
    """:func:`monotonicity_violation_rate` of two valid ``(n, n)`` matrices of the same positions
    (the encoding's ``delta``, the target's ``tgt``), not checked again."""
    n = delta.shape[0]
    if n < 3:
        raise PosgeomError(f"monotonicity needs at least 3 positions, got {n}")
    exact = method == "exact" or (method == "auto" and n <= max_exact_positions)
    tol_t = tie_rtol * float(tgt.max(initial=0.0))
    tol_e = tie_rtol * float(delta.max(initial=0.0))
    if exact:
        discordant = ties = informative = 0
        for i in range(n):
            keep = np.arange(n) != i
            a, b = tgt[i, keep], delta[i, keep]
            sa = _signs(a[:, None] - a[None, :], tol_t)
            sb = _signs(b[:, None] - b[None, :], tol_e)
            # each unordered pair {j, k} appears twice in the full matrices
            informative += int(np.count_nonzero(sa)) // 2
            discordant += int(np.count_nonzero(sa * sb < 0)) // 2
            ties += int(np.count_nonzero((sa != 0) & (sb == 0))) // 2
        violations = discordant + 0.5 * ties
        rate = violations / informative if informative else 0.0
        return ViolationRate(rate, rate, rate, informative, violations, True, confidence, ties)
    ij, ik = _flat_triples(n, n_samples, seed)
    t, e = tgt.ravel(), delta.ravel()
    return violations_in_triples(
        (t.take(ij), t.take(ik)), (e.take(ij), e.take(ik)), (tol_t, tol_e), confidence
    )


@lru_cache(maxsize=4)
def _flat_triples(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices ``(i n + j, i n + k)`` of :func:`draw_triples`'s ``m`` triples for ``seed``,
    drawn once per ``(n, m, seed)`` (every encoding and replicate is scored on the same triples;
    read-only: the cache shares them)."""
    i, j, k = draw_triples(n, m, np.random.default_rng(seed))
    ij, ik = i * n + j, i * n + k
    ij.flags.writeable = ik.flags.writeable = False
    return ij, ik


def draw_triples(
    n: int, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` uniform triples: anchor ``i``, then ``j != i``, then ``k`` uniform over the others
    (so ``(i, j)`` alone is a uniform pair of distinct positions)."""
    i = rng.integers(0, n, m)
    j = (i + rng.integers(1, n, m)) % n
    k = rng.integers(0, n - 2, m)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    k = k + (k >= lo)
    k = k + (k >= hi)
    return i, j, k


def violations_in_triples(
    target: tuple[np.ndarray, np.ndarray],
    encoding: tuple[np.ndarray, np.ndarray],
    tolerances: tuple[float, float],
    confidence: float,
) -> ViolationRate:
    """The sampled rate from ``(D_ij, D_ik)`` and ``(delta_ij, delta_ik)`` at drawn triples, with
    a Wilson interval (target ties within ``tolerances[0]`` are not informative; encoding ties
    within ``tolerances[1]`` of an informative triple count half, module docstring)."""
    sa = _signs(target[0] - target[1], tolerances[0])
    sb = _signs(encoding[0] - encoding[1], tolerances[1])
    informative = int(np.count_nonzero(sa))
    ties = int(np.count_nonzero((sa != 0) & (sb == 0)))
    violations = int(np.count_nonzero(sa * sb < 0)) + 0.5 * ties
    rate = violations / informative if informative else 0.0
    low, high = wilson_interval(violations, informative, confidence)
    return ViolationRate(rate, low, high, informative, violations, False, confidence, ties)


def separation_margin(encoding: Any, *, encoding_kind: EncodingKind = "auto") -> float:
    """``min_{i != j} delta_ij``: the smallest distance between two distinct positions (Theorem 4)."""
    return separation_of_matrix(encoding_distances(encoding, encoding_kind=encoding_kind))


def separation_of_matrix(delta: np.ndarray) -> float:
    """:func:`separation_margin` of a valid ``(n, n)`` matrix, not checked again."""
    n = delta.shape[0]
    if n < 2:
        raise PosgeomError("separation needs at least 2 positions")
    return float(delta[np.triu_indices(n, 1)].min())


def shepard_table(
    encoding: Any, target: Any, *, encoding_kind: EncodingKind = "auto"
) -> dict[str, np.ndarray]:
    """Per pair ``i < j``: ``{"i", "j", "target", "encoding"}`` arrays for a Shepard plot."""
    delta, tgt = matched_distance_matrices(encoding, target, encoding_kind=encoding_kind)
    i, j = np.triu_indices(delta.shape[0], 1)
    return {"i": i, "j": j, "target": tgt[i, j], "encoding": delta[i, j]}


# ----------------------------------------------------------------------------- at long contexts
SEPARATION_EXACT_FLOPS = 1e11  # blocked exact separation up to n^2 d / 2 multiply-adds
SEPARATION_EXACT_PAIRS = 2.5e8  # ... and n^2 / 2 pairs (n <= 22,360)
_KD_TREE_MAX_DIM = 8
_BLOCK = 1024  # rows per block: a block and its temporaries stay near 30 MB


def separation_at_scale(encoding: Any, n: int, *, sample: Any = None) -> tuple[float, str]:
    """``(min_{i != j} delta_ij, kind)`` at any ``n`` without an ``(n, n)`` matrix: ``kind`` is
    ``"exact"`` (lag profile, 1-D vectors, a k-d tree up to 8 dimensions, BLAS blocks up to
    :data:`SEPARATION_EXACT_FLOPS` and :data:`SEPARATION_EXACT_PAIRS`) or ``"upper bound"`` (the
    minimum over ``sample``'s pairs and the adjacent pairs)."""
    lag = getattr(encoding, "lag_profile", None)
    if lag is not None:
        return float(np.min(np.asarray(lag)[1:n])), "exact"
    v = pair_vectors(encoding)
    if v is None:
        return separation_margin(encoding), "exact"
    if v.shape[1] == 1:
        return float(np.min(np.diff(np.sort(v[:, 0])))), "exact"
    if v.shape[1] <= _KD_TREE_MAX_DIM:  # nearest neighbours, exact, O(n log n)
        from scipy.spatial import cKDTree

        return float(cKDTree(v).query(v, k=2)[0][:, 1].min()), "exact"
    pairs = n * (n - 1) / 2
    if sample is None or (
        pairs * v.shape[1] <= SEPARATION_EXACT_FLOPS and pairs <= SEPARATION_EXACT_PAIRS
    ):
        return _blocked_min_distance(v), "exact"
    idx = np.arange(n - 1)
    adjacent = encoding_pairs(encoding, idx, idx + 1)
    drawn = encoding_pairs(encoding, sample.i, sample.j)
    return float(min(adjacent.min(), drawn.min())), "upper bound"


def _blocked_min_distance(v: np.ndarray) -> float:
    """Exact ``min_{i != j} ||v_i - v_j||``: BLAS blocks find each block's closest pair, whose
    distance is then recomputed directly (no cancellation in the reported value)."""
    n = v.shape[0]
    sq = np.einsum("ij,ij->i", v, v)
    best, tol = np.inf, 1e-10 * (float(sq.max(initial=0.0)) + 1.0)
    for a in range(0, n, _BLOCK):
        ra = slice(a, min(a + _BLOCK, n))
        for b in range(a, n, _BLOCK):
            rb = slice(b, min(b + _BLOCK, n))
            g = sq[ra, None] + sq[None, rb] - 2.0 * (v[ra] @ v[rb].T)
            if a == b:
                g[np.tril_indices(g.shape[0], 0, g.shape[1])] = np.inf
            # candidates within the Gram products' round-off of the block's minimum, recomputed
            near = np.argwhere(g <= g.min() + tol)[:256]
            best = min(best, *(float(np.linalg.norm(v[a + r] - v[b + c])) for r, c in near))
    return best


# ----------------------------------------------------------------------------- registry
def _violation_row(v: ViolationRate) -> dict[str, Any]:
    return {
        "violation_rate": v.rate,
        "violation_ci": [float(v.ci_low), float(v.ci_high)],
        "violation_exact": v.exact,
    }


def _sampled_violations(x: registry.SampledPairs) -> dict[str, Any]:
    """The violation rate on a pair sample; ties within ``1e-9`` of the largest *sampled*
    distance."""
    t = x.sample
    tol_t = 1e-9 * float(max(t.target_ij.max(initial=0), t.target_ik.max(initial=0)))
    tol_e = 1e-9 * float(max(x.delta_ij.max(initial=0), x.delta_ik.max(initial=0)))
    return _violation_row(
        violations_in_triples(
            (t.target_ij, t.target_ik), (x.delta_ij, x.delta_ik), (tol_t, tol_e), t.confidence
        )
    )


def _sampled_separation(x: registry.SampledPairs) -> dict[str, Any]:
    value, kind = separation_at_scale(x.encoding, x.n_positions, sample=x.sample)
    return {"separation": value, "separation_kind": kind}


@registry.register(
    "violation_rate",
    column=("violation rate", ".3f"),
    convention="lower is better (0: the encoding orders every informative triple as D; random "
    "and NoPE: about 0.5); the share of triples (i, {j, k}) with D_ij != D_ik whose encoding "
    "distances order the pair the other way, a tie in the encoding counting half (Conjecture 5; "
    "exact up to 400 positions, else 200,000 sampled triples with a Wilson interval, "
    "violation_ci); range [0, 1]",
    bounds=(0.0, 1.0),
    sampled=_sampled_violations,
    order=30,
)
def _violation_score(delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    return _violation_row(violation_rate_of_matrices(delta, target, seed=seed))


@registry.register(
    "separation",
    column=("separation", ".3g"),
    convention="higher is better (0: two positions indistinguishable, Theorem 4); "
    "min_{i != j} delta_ij, of the encoding alone (no target); at long contexts exact or a "
    "stated upper bound (separation_kind); range [0, inf)",
    better="higher",
    sampled=_sampled_separation,
    tables=("scores",),
    rank_curve=False,
    order=40,
)
def _separation_score(delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> float:
    return separation_of_matrix(delta)
