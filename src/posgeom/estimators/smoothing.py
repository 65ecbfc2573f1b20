"""Smoothing over positions: a lower-variance Euclidean estimate (``estimate_geometry(smooth=)``).

The smoothed estimate replaces every position's mean root vector by a local-linear kernel
average over positions (neighbours' roots are nearly the same; their noise averages out)::

    W_ik = g_ik (S2_i - (k - i) S1_i) / sum_k' g_ik' (S2_i - (k' - i) S1_i),
    g_ik = exp(-(k - i)^2 / (2 h_i^2)),   S1_i = sum_k g_ik (k - i),   S2_i = sum_k g_ik (k - i)^2,
    h_i = a i          (bandwidth in positions, growing with the position; a = ``slope``)

(rows sum to 1; a row with ``h_i < 0.3`` is the identity, so position 0 and the first
``0.3 / a`` positions are never smoothed; local-linear, not a plain kernel mean, so the last
positions are not pulled towards the middle), and its Gram is

    B~_W = J W B~ W^T J

with ``B~`` the estimator's (centred) Gram: ``W B~ W^T = c (W S)(W S)^T - c W diag(b) W^T``
subtracts the noise covariance of the smoothed roots ``W S``, so ``B~_W`` is (nearly) unbiased
for the Gram of the smoothed mean roots ``W E[S]``. The Euclidean estimate is taken of ``B~_W``
as of ``B~``, its noise edge the largest ``λ_1(J W N0_j W^T J)`` of the split-half null draws
(:func:`posgeom.estimators.euclidean.parallel_edge`).

**Bias.** The estimate is the geometry of the *smoothed* trajectory: bends within a bandwidth
shorten nearby distances, abrupt changes are blurred over about ``2 h_i`` positions; distances
far apart compared with ``h_i`` are nearly unchanged.

**The bandwidth** ``smooth="auto"``: split-half cross-validation. Every count is thinned
``A ~ Binomial(X, 1/2)``, ``B = X - A``; the smoothed Euclidean estimate of one half at each
candidate ``a`` (``SLOPES``, 0 included) is scored by the mean squared error of its ``D^2``
against the other half's raw unbiased ``D~^2``, both ways, over ``CV_THINNINGS`` thinnings; the
smallest error wins (leaning to more smoothing than the whole sample needs).

Measured: ``docs/ESTIMATION.md``, "A lower-variance estimator: smoothing over positions".

Limits: up to ``MAX_SMOOTH_N`` positions (dense ``n x n`` Grams); not with pooling, the plug-in
(no noise model) or ``euclidean=False``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom.geometry.gram import double_centre_inplace

__all__ = ["CV_THINNINGS", "MAX_SMOOTH_N", "SLOPES", "position_smoother", "smoothed_gram"]

SLOPES = (0.0, 0.03, 0.05, 0.08, 0.12, 0.18, 0.25, 0.35, 0.5)  # candidate a of h_i = a i
CV_THINNINGS = 3
MAX_SMOOTH_N = 512  # the CV: 2 x 3 x 9 dense eigendecompositions; 7 s CPU at n = 512, 46 s at 1,024
MIN_BANDWIDTH = 0.3  # below this the kernel sees only position i (weights e^-5.6 beside)


def position_smoother(n: int, slope: float) -> np.ndarray:
    """``W``, ``(n, n)`` float64: local-linear Gaussian weights with ``h_i = slope * i``
    (module docstring); rows sum to 1; the identity for ``slope = 0``."""
    if not (np.isfinite(slope) and slope >= 0):
        raise PosgeomError(f"smooth must be 'auto' or a slope >= 0, got {slope!r}")
    w = np.eye(n)
    k = np.arange(n, dtype=np.float64)
    for i in range(n):
        h = slope * i
        if h < MIN_BANDWIDTH:
            continue
        u = k - i
        g = np.exp(-0.5 * (u / h) ** 2)
        row = g * (g @ u**2 - u * (g @ u))
        w[i] = row / row.sum()
    return w


def smoothed_gram(b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``J W b W^T J`` (``b``: ``(n, n)`` Gram; the centring makes it a Gram of the smoothed
    points again: ``W 1 = 1``)."""
    out = w @ b @ w.T
    double_centre_inplace(out)
    return 0.5 * (out + out.T)


def null_draws(counts: Any, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(d, ||d_i||^2)`` of each split-half null draw of
    :func:`posgeom.estimators.euclidean.null_edge` (the same thinnings and seeds), dense."""
    from posgeom.estimators.euclidean import null_roots, null_seeds

    roots = [null_roots(counts, s).toarray() for s in null_seeds(seed)]
    return [(d, np.sum(d * d, axis=1)) for d in roots]


def smoothed_null_edge(
    counts: Any, w: np.ndarray, scale: float, seed: int, draws: list | None = None
) -> dict[str, Any]:
    """The noise edge of the smoothed estimate: the rule of
    :func:`posgeom.estimators.euclidean.parallel_edge` over ``λ_1(c J W N0_j W^T J)``, the
    split-half null draws ``N0_j = D_j D_j^T - diag(||d_i||^2)`` smoothed by ``W``
    (``draws``: :func:`null_draws` of the counts, computed once for several ``W``)."""
    from posgeom.estimators.euclidean import parallel_edge

    tops = []
    for d, q in draws if draws is not None else null_draws(counts, seed):
        m = w @ d
        g = scale * (m @ m.T - (w * q[None, :]) @ w.T)
        g = 0.5 * (g + g.T)
        double_centre_inplace(g)
        tops.append(float(np.linalg.eigvalsh(g)[-1]))
    return parallel_edge(tops)


def check_smooth(smooth: Any, *, n: int, estimator: str, pooled: bool, euclidean: Any) -> None:
    """One-line refusals of the combinations the smoothed estimate does not cover."""
    if isinstance(smooth, str) and smooth != "auto":
        raise PosgeomError(f"smooth must be 'auto' or a slope >= 0, got {smooth!r}")
    if estimator == "plugin":
        raise PosgeomError(
            "smooth needs an estimator with a noise model (the smoothed Gram subtracts the "
            "smoothed noise); use estimator='corrected'"
        )
    if pooled:
        raise PosgeomError("smooth and pool do not combine (buckets are unevenly spaced); pick one")
    if euclidean is False:
        raise PosgeomError("smooth needs the Euclidean estimate; leave euclidean at its default")
    if n > MAX_SMOOTH_N:
        raise PosgeomError(
            f"smooth works up to {MAX_SMOOTH_N} positions (dense n x n Grams), got {n}; pool "
            "positions (pool=...) instead"
        )


def _halves(c: sp.csr_matrix, rng: np.random.Generator) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    a = c.copy()
    a.data = rng.binomial(c.data.astype(np.int64), 0.5)
    b = (c - a).tocsr()
    a.eliminate_zeros()
    b.eliminate_zeros()
    return a, b


def _kept_distances(b: np.ndarray, edge: dict[str, Any]) -> np.ndarray:
    """Squared distances of the eigen-directions of ``b`` above ``max(edge, |λ_min|)`` (the
    leading one when none is), as the Euclidean estimate keeps them."""
    vals, vecs = np.linalg.eigh(b)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    keep = max(int(np.sum(vals > max(edge["null_edge"], -min(vals[-1], 0.0)))), 1)
    x = vecs[:, :keep] * np.sqrt(np.maximum(vals[:keep], 0.0))
    sq = np.sum(x * x, axis=1)
    return sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)


def choose_slope(
    counts: sp.csr_matrix,
    gram_of: Callable[[sp.csr_matrix], np.ndarray],
    *,
    scale: float,
    seed: int,
    min_samples: int = 1,
) -> tuple[float, dict[str, Any]]:
    """``(a, info)``: the slope of ``SLOPES`` with the smallest split-half CV error (module
    docstring). ``gram_of(half_counts)``: the estimator's dense centred ``B~`` of a half."""
    n = counts.shape[0]
    iu = np.triu_indices(n, 1)
    rng = np.random.default_rng([int(seed), 17])
    smoothers = [position_smoother(n, a) for a in SLOPES]
    error = np.zeros(len(SLOPES))
    for t in range(CV_THINNINGS):
        halves = _halves(counts, rng)
        thin = min(float(h.sum(axis=1).min()) for h in halves)
        if thin < min_samples:
            raise PosgeomError(
                f"smooth='auto' splits each position's samples in two and a half has {thin:.0f} "
                f"samples at some position; give a slope (smooth=0.1) or use more text"
            )
        grams = [gram_of(h) for h in halves]
        for fit, score in ((0, 1), (1, 0)):
            draws = null_draws(halves[fit], seed + t)
            q = np.diag(grams[score])
            target = (q[:, None] + q[None, :] - 2.0 * grams[score])[iu]
            for k, w in enumerate(smoothers):
                edge = smoothed_null_edge(halves[fit], w, scale, seed + t, draws)
                got = _kept_distances(smoothed_gram(grams[fit], w), edge)[iu]
                error[k] += float(np.mean((got - target) ** 2))
    error /= 2 * CV_THINNINGS
    best = int(np.argmin(error))
    return SLOPES[best], {
        "chosen_by": f"split-half CV ({CV_THINNINGS} thinnings, squared error of D^2)",
        "cv_slopes": list(SLOPES),
        "cv_error": [float(e) for e in error],
    }
