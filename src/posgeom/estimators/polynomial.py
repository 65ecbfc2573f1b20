"""The polynomial-approximation estimator of Jiao, Venkat, Han and Weissman for the
Bhattacharyya coefficient ``BC_ij = sum_t sqrt(p_it) sqrt(p_jt)``.

Positions are sampled independently, so for any per-cell estimators ``ŝ_it`` of ``sqrt(p_it)``
built from position ``i``'s counts alone, ``E <ŝ_i, ŝ_j> = <E ŝ_i, E ŝ_j>``: the two-sample
functional ``sum_t F(p_it, p_jt)`` with ``F(p, q) = sqrt(p) sqrt(q)`` (the bivariate non-smooth
function of Han–Jiao–Weissman) factorises, and the bias of the estimate is that of the
one-sample estimator of ``sqrt p`` on each side. That estimator is JVHW's (arXiv 1406.6956):

* split the ``T`` samples of the position at random into halves ``X'`` (``T'`` samples) and
  ``X''`` (``T''``) (multivariate hypergeometric; ``split=False`` uses ``X`` for both);
* non-smooth regime (``X' / T' < Δ / 2``, ``Δ = c1 ln T'' / T''``): the unbiased estimator of
  the best uniform polynomial approximation ``P_L(p) = sqrt(Δ) sum_k q_k (p / Δ)^k`` of
  ``sqrt`` on ``[0, Δ]`` (degree ``L = clip(round(c2 ln T''), 2, 8)``, Remez exchange), using
  ``E[(X'')_k] = (T'')_k p^k`` (falling factorials, exact under multinomial sampling)::

      ŝ = sqrt(Δ) sum_{k <= min(L, X'')} q_k (X'')_k / ((T'')_k Δ^k)

* smooth regime: the bias-corrected plug-in ``sqrt(p̂) + (1 - p̂) / (8 T'' sqrt(p̂))``,
  ``p̂ = X'' / T''`` (second-order Taylor correction ``- f''(p̂) p̂ (1 - p̂) / (2 T)``).

``D^2_ij = 2 - 2 <ŝ_i, ŝ_j>`` (``||s_i||^2 = 1`` is known). Every unseen token gets
``ŝ = sqrt(Δ) q_0``, a per-row constant (the roots' floor). Consistent when ``V`` is at most of
order ``T ln T``; beyond, the unseen tokens' bias ``~ V sqrt(Δ) / L`` does not vanish.
References: Jiao, Venkat, Han, Weissman, IEEE T-IT 2015 (arXiv 1406.6956); Han, Jiao, Weissman,
arXiv 1605.09124; Jiao, Han, Weissman, arXiv 1705.00807.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.polynomial import Chebyshev, Polynomial

from posgeom.estimators._core import register
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.gram import FactoredGram
from posgeom.geometry.split_half import _split_rows

__all__ = ["best_sqrt_polynomial"]


def _alternation_points(err: np.ndarray, grid: np.ndarray, count: int) -> np.ndarray | None:
    """One extremum of ``|err|`` per run of constant sign; ``count`` of them (or None)."""
    sign = np.sign(err)
    sign[sign == 0] = 1
    starts = np.flatnonzero(np.r_[True, sign[1:] != sign[:-1]])
    ends = np.r_[starts[1:], err.size]
    picks = [s + int(np.argmax(np.abs(err[s:e]))) for s, e in zip(starts, ends, strict=True)]
    while len(picks) > count:  # drop the weaker end until the alternation set has the right size
        picks.pop(0 if abs(err[picks[0]]) < abs(err[picks[-1]]) else -1)
    return grid[picks] if len(picks) == count else None


@lru_cache(maxsize=32)
def best_sqrt_polynomial(degree: int) -> np.ndarray:
    """Power-basis coefficients ``q_0 .. q_L`` of the best uniform approximation of ``sqrt(x)`` on
    ``[0, 1]`` by polynomials of degree ``L`` (Remez exchange on a grid dense near 0)."""
    grid = np.linspace(0.0, 1.0, 20001) ** 2
    ref = ((1 - np.cos(np.pi * np.arange(degree + 2) / (degree + 1))) / 2) ** 2
    signs = (-1.0) ** np.arange(degree + 2)
    coef = np.zeros(degree + 1)
    for _ in range(60):
        a = np.column_stack([np.polynomial.chebyshev.chebvander(2 * ref - 1, degree), signs])
        sol = np.linalg.solve(a, np.sqrt(ref))
        coef = sol[:-1]
        err = np.polynomial.chebyshev.chebval(2 * grid - 1, coef) - np.sqrt(grid)
        new = _alternation_points(err, grid, degree + 2)
        if new is None or np.allclose(new, ref, rtol=0, atol=1e-12):
            break
        ref = new
    power = Chebyshev(coef, domain=[0.0, 1.0]).convert(kind=Polynomial)
    return np.pad(power.coef, (0, degree + 1 - power.coef.size))


def _falling_ratio(x: np.ndarray, total: np.ndarray, k: int) -> np.ndarray:
    """``(x)_k / (total)_k`` element-wise (0 when ``k > x``)."""
    out = np.ones_like(x, dtype=np.float64)
    for j in range(k):
        out *= np.maximum(x - j, 0) / np.maximum(total - j, 1)
    return out


def _root_estimates(
    x1: np.ndarray, x2: np.ndarray, t1: np.ndarray, t2: np.ndarray, *, c1: float, c2: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-cell ``ŝ`` from decision counts ``x1`` (rows of ``t1`` samples) and estimation counts
    ``x2`` (``t2``); also the per-row floor ``ŝ(0)`` and degree. Cell arrays carry row totals."""
    delta = c1 * np.log(np.maximum(t2, 2)) / t2
    degree = np.clip(np.round(c2 * np.log(np.maximum(t2, 2))), 2, 8).astype(int)
    poly = np.zeros(x2.shape)
    for k in range(int(degree.max()) + 1):
        qk = np.array([best_sqrt_polynomial(int(d))[k] if k <= d else 0.0 for d in degree])
        poly += qk * _falling_ratio(x2, t2, k) / delta**k
    poly *= np.sqrt(delta)
    p_hat = x2 / t2
    with np.errstate(divide="ignore", invalid="ignore"):
        smooth = np.where(x2 > 0, np.sqrt(p_hat) + (1 - p_hat) / (8 * t2 * np.sqrt(p_hat)), 0.0)
    return np.where(x1 / t1 < delta / 2, poly, smooth), delta, degree


@register("polynomial", min_samples=8, factored=True)
def polynomial(
    counts: sp.csr_matrix,
    totals: np.ndarray,
    *,
    rng: Any,
    c1: float = 2.0,
    c2: float = 1.0,
    split: bool = True,
) -> tuple[FactoredGram, dict]:
    """JVHW polynomial approximation of ``sqrt`` on small probabilities, bias-corrected plug-in on
    large ones, ``D^2 = 2 - 2 BC`` (formula and references in :mod:`posgeom.estimators.polynomial`).

    Assumes multinomial sampling; ``c1`` sets the non-smooth interval ``[0, c1 ln T / T]``, ``c2``
    the degree ``c2 ln T``; ``split`` decides regimes on an independent half of the samples.
    Reference: Jiao, Venkat, Han, Weissman, arXiv 1406.6956 (IEEE T-IT 2015).
    """
    n = counts.shape[0]
    rows = np.repeat(np.arange(n), np.diff(counts.indptr))
    x = counts.data.astype(np.float64)
    x1, t1 = x2, t2 = x, totals
    if split:
        half, _ = _split_rows(counts, rng)
        x1 = np.asarray(half[rows, counts.indices]).ravel().astype(np.float64)
        t1 = np.floor(totals / 2)
        x2, t2 = x - x1, totals - t1
    cells, _, _ = _root_estimates(x1, x2, t1[rows], t2[rows], c1=c1, c2=c2)
    zero, delta, degree = _root_estimates(np.zeros(n), np.zeros(n), t1, t2, c1=c1, c2=c2)
    sparse = sp.csr_matrix((cells - zero[rows], counts.indices, counts.indptr), shape=counts.shape)
    roots = PositionalDistributions(
        sqrt_sparse=sparse,
        sqrt_floor=zero,
        positions=np.arange(n),
        totals=totals,
    )
    # D^2_ij = 2 - 2 <ŝ_i, ŝ_j> = ||ŝ_i - ŝ_j||^2 - b_i - b_j with b_i = ||ŝ_i||^2 - 1
    bias = roots.squared_norms - 1.0
    diag = {"unseen_root": zero, "degree": degree, "interval": delta, "bias": bias}
    return FactoredGram(roots, bias), diag
