"""The Euclidean estimate: the geometry MDS can reproduce, the same at every ``n``.

An estimator's squared chords ``D~^2`` are (nearly) unbiased for a Euclidean geometry, but their
Gram matrix ``B~ = -1/2 J D~^2 J`` (the factored ``c J (S S^T - diag(b)) J`` of
:mod:`posgeom.geometry.gram`) has negative eigenvalues, the sampling noise the correction leaves.
The Euclidean estimate keeps the eigen-directions of ``B~`` above a threshold ``τ``::

    B+ = sum_{k <= K, λ_k > τ} λ_k u_k u_k^T,     X = [sqrt(λ_k) u_k]  (m x K'),
    D+_ij = ||x_i - x_j||                         (chord; "normalized" has c = 1/2 in B~)

with ``(λ_k, u_k)`` the top ``K = min(m - 1, euclidean_rank)`` eigenpairs of ``B~``
(``euclidean_rank = 256`` by default) and two rules for ``τ``:

* ``"noise_edge"`` (the default): ``τ = max(|λ_min(B~)|, max_j λ_1(N0_j))``, the largest
  eigenvalue sampling noise alone produces. When ``m`` is well below the number of token classes
  ``V'`` the noise spectrum is symmetric about 0 to first order, so ``|λ_min|`` is its edge; when
  ``m > V'`` it has at most ``V'`` large positive directions and ``|λ_min|`` misses it. ``N0_j``
  (:func:`null_edge`, parallel analysis) is built like ``B~`` from the difference of two random
  halves of every position's samples: the same noise, no signal; ``NULL_DRAWS = 19`` draws, and
  the edge is their largest ``λ_1`` (a noise direction passes with probability about 1/20).
  Measurements: ``docs/ESTIMATION.md``, "The Euclidean estimate".
* ``"psd"``: ``τ = 0``: for ``m <= K + 1`` the projection of ``B~`` onto the positive
  semidefinite cone, the nearest Euclidean geometry in Frobenius norm. It keeps the positive
  half of the noise, so it inflates every distance, and at large ``m`` it needs all ``K``
  directions.

The rule is the same at every ``m`` (LAPACK for small estimates, Lanczos on the factored ``B~``
for large ones: the same ``B+``). MDS of rank ``K'`` reproduces ``D+`` exactly.

Diagnostics (``estimate.diagnostics["projection"]``): ``rule``, ``threshold`` ``τ``,
``kept_rank`` ``K'`` (``rank_capped`` when all ``K`` passed; ``resolved`` False, with a
warning, when no direction passed and only the leading one is kept), ``kept_mass``
``trace(B+)``, ``null_edge``, ``null_draws``, ``null_median``, ``null_min`` (the null draws'
largest ``λ_1``, number and spread), ``trace`` ``trace(B~)``, ``most_negative_eigenvalue``; with
the full spectrum (``m <= 1024``) ``negative_mass`` ``sum |λ_k|`` over ``λ_k < 0``,
``positive_mass``, ``projection_ratio`` = negative / positive mass, ``removed_positive_mass``
(positive mass below ``τ``) and ``dropped_positive_mass`` (positive eigenvalues beyond ``K``).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from posgeom._errors import PosgeomError

__all__ = ["EUCLIDEAN_RANK", "EXACT_MAX_N", "euclidean_form", "spectrum_keys"]

EUCLIDEAN_RANK = 256  # K: the Euclidean estimate's largest dimension
EXACT_MAX_N = 1024  # LAPACK (full spectrum) up to here; Lanczos beyond, as classical_mds's auto
RULES = ("noise_edge", "psd")
FIRST_PAIRS = 32  # Lanczos asks for this many, doubling while the last is above the edge
DENSE_NULL_MAX = 256  # a null draw's λ_1 by LAPACK up to here (exact, cheap), Lanczos above
NULL_DRAWS = 19  # split-half null draws of the noise edge: a noise direction passes w.p. 1/20


def _dense_pairs(b: np.ndarray, k: int, full: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = b.shape[0]
    if full:
        vals, vecs = sla.eigh(b, driver="evr", check_finite=False)
        return vals[::-1][:k], vecs[:, ::-1][:, :k], vals[::-1]
    vals, vecs = sla.eigh(b, subset_by_index=[n - k, n - 1], driver="evr", check_finite=False)
    return vals[::-1], vecs[:, ::-1], vals[::-1]


def _lanczos_pairs(op: spla.LinearOperator, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from posgeom._threads import blas_threads

    n = op.shape[0]
    v0 = np.random.default_rng(seed).standard_normal(n)
    v0 -= v0.mean()
    with blas_threads(1):
        vals, vecs = spla.eigsh(op, k=k, which="LA", v0=v0, tol=0.0)
    order = np.argsort(vals)[::-1]
    vecs = vecs[:, order]
    vecs -= vecs.mean(axis=0, keepdims=True)  # B's null vector 1 (round-off)
    return vals[order], vecs / np.linalg.norm(vecs, axis=0, keepdims=True)


def _extreme(b: Any, which: str, seed: int = 0) -> float:
    """The smallest (``"SA"``) or largest (``"LA"``) eigenvalue by Lanczos (seeded start; 0 for
    a zero operator)."""
    v0 = np.random.default_rng(seed).standard_normal(b.shape[0])
    v0 -= v0.mean()
    try:
        val = spla.eigsh(
            b,
            k=1,
            which=which,
            tol=1e-3,
            v0=v0,
            ncv=min(b.shape[0], 48),
            return_eigenvectors=False,
        )  # a threshold: 0.1% is enough, and the bottom of B~ is a cluster (slow to resolve)
    except spla.ArpackError:  # the operator maps the start to 0: it is 0 on the centred space
        return 0.0
    return float(val[0])


def null_roots(counts: Any, seed: int) -> Any:
    """``D``, ``(m, V')`` CSR: the split-half null's rows ``d_i`` (:func:`null_edge`)."""
    import scipy.sparse as sp

    c = sp.csr_matrix(counts, dtype=np.float64)
    m = c.shape[0]
    a = np.random.default_rng(seed).binomial(c.data.astype(np.int64), 0.5).astype(float)
    b = c.data - a
    # on the non-zeros of C directly (no sparse arithmetic: 19 draws per estimate); totals of
    # whole counts are exact in any order, so the roots equal plugin_roots' of each half
    rows = np.repeat(np.arange(m), np.diff(c.indptr))
    ta = np.bincount(rows, weights=a, minlength=m)
    tb = np.bincount(rows, weights=b, minlength=m)
    ra = np.sqrt(a * (1.0 / np.maximum(ta, 1e-300))[rows])
    rb = np.sqrt(b * (1.0 / np.maximum(tb, 1e-300))[rows])
    both = ((ta > 0) & (tb > 0))[rows]  # an empty half: d_i = 0
    d = sp.csr_matrix(
        (np.where(both, 0.5 * (ra - rb), 0.0), c.indices.copy(), c.indptr.copy()), shape=c.shape
    )
    d.eliminate_zeros()
    return d


def null_seeds(seed: int, draws: int = NULL_DRAWS) -> list[int]:
    """The seeds of the ``draws`` split-half null draws: draw ``j`` thins with ``seed + j``."""
    return [int(seed) + j for j in range(int(draws))]


def parallel_edge(tops: Any) -> dict[str, Any]:
    """The noise edge ``max_j λ_1(N0_j)`` from the null draws' largest eigenvalues ``tops``
    (Horn's parallel analysis at its top quantile, Glorfeld 1995), and the draws' spread."""
    t = np.maximum(np.asarray(tops, dtype=np.float64), 0.0)
    return {
        "null_edge": float(t.max()),
        "null_draws": int(t.size),
        "null_median": float(np.median(t)),
        "null_min": float(t.min()),
    }


def null_edge(counts: Any, scale: float, seed: int, *, draws: int = NULL_DRAWS) -> dict[str, Any]:
    """The split-half null's edge: :func:`parallel_edge` over ``draws`` null Grams, draw ``j``
    seeded ``seed + j``.

    Each count is thinned into halves ``A ~ Binomial(X, 1/2)``, ``B = X - A``;
    ``d_i = (sqrt(A_i / |A_i|) - sqrt(B_i / |B_i|)) / 2`` has no signal and about the sampling
    noise of ``s_i``, so ``N0 = c J (D D^T - diag(||d_i||^2)) J``, built like ``B~``, has its
    noise spectrum without the signal. Positions with an empty half contribute ``d_i = 0``."""
    return parallel_edge([_null_top(counts, scale, s) for s in null_seeds(seed, draws)])


def _null_top(counts: Any, scale: float, seed: int) -> float:
    """``λ_1`` of one split-half null Gram (the draw thinned with ``seed``)."""
    from posgeom.geometry.distributions import PositionalDistributions
    from posgeom.geometry.gram import FactoredGram

    d = null_roots(counts, seed)
    n = d.shape[0]
    if not np.any(d.data):
        return 0.0
    null = PositionalDistributions(
        sqrt_sparse=d, sqrt_floor=np.zeros(n), positions=np.arange(n), totals=np.ones(n)
    )
    gram = FactoredGram(null, null.squared_norms, scale)
    if n <= DENSE_NULL_MAX:
        b = gram.dense()
        return float(sla.eigh(b, subset_by_index=[n - 1, n - 1], eigvals_only=True)[0])
    return _extreme(gram.operator(), "LA", seed)


def euclidean_form(
    gram: Any = None,
    *,
    dense_b: np.ndarray | None = None,
    rank: int = EUCLIDEAN_RANK,
    rule: str = "noise_edge",
    seed: int = 0,
    solver: str = "auto",
    counts: Any = None,
    null: dict[str, Any] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """``(X, info)``: the Euclidean estimate's coordinates ``(m, K')`` (module docstring) from a
    :class:`~posgeom.geometry.gram.FactoredGram` ``gram`` or a dense ``B~`` (``dense_b``).
    Columns in descending ``λ``; signs and tied bases by MDS's canonical rules.
    ``solver``: ``"auto"`` (LAPACK when ``m <= 1024`` or ``4 K > m``, else Lanczos), ``"exact"``
    or ``"implicit"`` (the same ``X``). ``counts``: the estimate's counts, for the null edge of
    ``"noise_edge"``; ``null``: that edge computed by the caller (:func:`parallel_edge`'s dict)."""
    from posgeom.embed._canonical import canonicalise

    if rule not in RULES:
        raise PosgeomError(f"unknown Euclidean rule {rule!r}; use one of {', '.join(RULES)}")
    n = gram.n_positions if dense_b is None else dense_b.shape[0]
    k = max(1, min(n - 1, int(rank), _positive_bound(gram)))
    full = n <= EXACT_MAX_N
    info: dict[str, Any] = {"rule": rule, "euclidean_rank": int(rank)}
    exact = full or 4 * k > n if solver == "auto" else solver == "exact"
    lapack = exact or dense_b is not None
    info["solver"] = "exact" if lapack else "implicit"
    if lapack:
        b = gram.dense() if dense_b is None else dense_b
        trace = float(np.trace(b))
        vals, vecs, spectrum = _dense_pairs(b, k, full)
        low = float(min(spectrum[-1], 0.0)) if full else min(_extreme(b, "SA"), 0.0)
        if full:
            info.update(_full_spectrum(spectrum, k))
    else:
        op = gram.operator()
        trace = gram.trace()
        low = min(_extreme(op, "SA"), 0.0)
    edge, null_info = _edge(rule, low, counts, 1.0 if gram is None else gram.scale, seed, null)
    if not lapack:  # Lanczos, asking for more directions while the last is above the edge
        step = min(k, FIRST_PAIRS)
        vals, vecs = _lanczos_pairs(op, step, seed)
        while vals[-1] > edge and step < k:
            step = min(2 * step, k)
            vals, vecs = _lanczos_pairs(op, step, seed)
    threshold = max(edge, 1e-12 * max(float(vals[0]), 0.0))
    keep = vals > threshold
    info["resolved"] = bool(keep.any())
    if not keep.any() and vals[0] > 0:  # nothing above the noise: keep the leading direction
        keep[0] = True
        logging.getLogger("posgeom").warning(
            "no direction of the estimated geometry rises above its sampling noise (largest "
            "eigenvalue %.3g, noise edge %.3g): the geometry is not resolved at these sample "
            "sizes; the estimate keeps its leading direction only. Use more text, pool "
            "positions or coarsen the vocabulary",
            vals[0],
            threshold,
        )
    vals, vecs = vals[keep], vecs[:, keep]
    vecs, _ = canonicalise(vals, vecs, len(vals), 1e-9)
    coords = vecs * np.sqrt(vals)
    info.update(
        most_negative_eigenvalue=low,
        threshold=float(threshold),
        kept_rank=len(vals),
        rank_capped=bool(len(vals) == k < n - 1),
        kept_mass=float(vals.sum()),
        trace=trace,
        **null_info,
    )
    if "positive_mass" in info:  # the positive part the threshold set aside as noise
        info["removed_positive_mass"] = max(info["positive_mass"] - info["kept_mass"], 0.0)
    return coords, info


def _positive_bound(gram: Any) -> int:
    """At most this many positive eigenvalues: ``B~ <= c J S S^T J`` (``-J diag(b) J`` is
    negative semidefinite, ``b >= 0``), whose rank is at most ``V'`` (+1 with a floor)."""
    if gram is None or np.any(gram.correction < 0):
        return 2**62
    return gram.roots.vocab_size + int(np.any(gram.roots.sqrt_floor))


def _edge(
    rule: str, low: float, counts: Any, scale: float, seed: int, null: dict | None = None
) -> tuple[float, dict[str, Any]]:
    """``(τ, null diagnostics)``: 0 for ``"psd"``; for ``"noise_edge"`` the larger of
    ``|λ_min(B~)|`` and the split-half null edge (``null``, else :func:`null_edge` of ``counts``)."""
    if rule == "psd":
        return 0.0, {}
    if null is None and counts is not None:
        null = null_edge(counts, scale, seed)
    null = null or {}
    return max(-low, null.get("null_edge", 0.0)), dict(null)


def _full_spectrum(spectrum: np.ndarray, k: int) -> dict[str, Any]:
    tol = 1e-10 * max(float(spectrum[0]), 0.0)
    negative = float(-spectrum[spectrum < -tol].sum())
    positive = float(spectrum[spectrum > tol].sum())
    return {
        "negative_mass": negative,
        "positive_mass": positive,
        "projection_ratio": negative / positive if positive > 0 else 0.0,
        "dropped_positive_mass": float(np.clip(spectrum[k:], 0.0, None).sum()),
        "negative_eigenvalues": int(np.sum(spectrum < -tol)),
        "largest_eigenvalue": float(max(spectrum[0], 0.0)),
    }


def spectrum_keys(info: dict[str, Any]) -> dict[str, Any]:
    """The raw ``B~``'s spectrum as scikit-bio's ``pcoa`` reports it, when the full spectrum was
    computed (``m <= 1024``)."""
    if "negative_mass" not in info:
        return {}
    low = info["most_negative_eigenvalue"]
    largest = info.get("largest_eigenvalue", 0.0)
    return {
        "negative_eigenvalues": info["negative_eigenvalues"],
        "most_negative_eigenvalue": low,
        "largest_eigenvalue": largest,
        "negative_eigenvalue_ratio": max(0.0, -low / largest) if largest > 0 else 0.0,
        "euclidean": info["negative_eigenvalues"] == 0,  # the raw B~, before the projection
    }


def pairs_above(coords: np.ndarray, limit: float, *, block: int = 1024) -> int:
    """The number of pairs ``i < j`` with ``||x_i - x_j|| > limit``, in row blocks (``O(block m)``
    memory)."""
    x = np.asarray(coords, dtype=np.float64)
    radius = np.sqrt(np.max(np.sum((x - x.mean(axis=0)) ** 2, axis=1), initial=0.0))
    if 2.0 * radius <= limit:
        return 0
    sq = np.sum(x * x, axis=1)
    above = 0
    for lo in range(0, x.shape[0], block):
        d2 = sq[lo : lo + block, None] + sq[None, :] - 2.0 * (x[lo : lo + block] @ x.T)
        above += int(np.count_nonzero(d2 > limit * limit))
    return above // 2
