"""Plug-in and bias-corrected squared Hellinger chords.

Notation: position ``i`` has counts ``X_it`` (``T_i = sum_t X_it`` samples, probabilities
``p_it``), plug-in roots ``ŝ_it = sqrt(X_it / T_i)``, true roots ``s_it = sqrt(p_it)``, mean roots
``m_it = E ŝ_it``. Positions are sampled independently, so for ``i != j``::

    E D̂^2_ij = E (2 - 2 <ŝ_i, ŝ_j>) = 2 - 2 <m_i, m_j> = ||m_i - m_j||^2 + b_i + b_j,
    b_i = 1 - ||m_i||^2 = sum_t Var(ŝ_it)                      (the sampling contribution)

``b_i`` is large for a large vocabulary (every rare token seen once adds about ``p_it`` to it) and
grows as ``T_i`` falls, which is why the plug-in matrix is flat and makes positions with few samples
look far from every other position.
"""

from __future__ import annotations

import decimal
from functools import lru_cache
from math import comb
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom.estimators._core import register
from posgeom.geometry.distributions import positional_distributions
from posgeom.geometry.gram import FactoredGram

__all__ = ["squared_mean_root"]

_EXACT_UP_TO = 200  # h(k) exact (high-precision arithmetic) for k <= this; asymptote beyond


@lru_cache(maxsize=1)
def _h_table() -> np.ndarray:
    """``h(0 .. K)`` exactly: ``h(k) = sum_m C(k, m) 2^m (-1)^(k-m) g(m)``,
    ``g(m) = E sqrt(B (m - B))``, ``B ~ Binomial(m, 1/2)`` (derivation in :func:`squared_mean_root`).
    The alternating sum cancels about ``0.48 k`` decimal digits, so it runs in ``decimal`` with
    that many guard digits (about 0.2 s once per process)."""
    k_max = _EXACT_UP_TO
    with decimal.localcontext() as ctx:
        ctx.prec = int(0.48 * k_max) + 30
        roots = [decimal.Decimal(i).sqrt() for i in range(k_max + 1)]
        g = [
            sum((comb(m, b) * (roots[b] * roots[m - b]) for b in range(1, m)), decimal.Decimal(0))
            / (2**m)
            for m in range(k_max + 1)
        ]
        h = [
            sum(
                (comb(k, m) * 2**m * (1 - 2 * ((k - m) % 2)) * g[m] for m in range(k + 1)),
                decimal.Decimal(0),
            )
            for k in range(k_max + 1)
        ]
    return np.array([float(v) for v in h])


def squared_mean_root(k: Any) -> np.ndarray:
    """``h(k)``: the unbiased estimator of ``(E sqrt X)^2`` from one ``X ~ Poisson(λ)``.

    ``E_λ h(X) = (E_λ sqrt X)^2`` for every ``λ >= 0``. Derivation: for ``Y, Y'`` independent
    ``Poisson(λ)``, ``(E sqrt Y)^2 = E sqrt(Y Y') = E g(Y + Y')`` with ``Y + Y' ~ Poisson(2 λ)`` and
    ``g(m) = E sqrt(B (m - B))``, ``B ~ Binomial(m, 1/2)``. Matching the Poisson(λ) and
    Poisson(2λ) power series gives ``h(k) = sum_m C(k, m) 2^m (-1)^(k-m) g(m)`` (unique: the
    Poisson family is complete). ``h(0) = h(1) = 0``, ``h(2) = 2``, ``h(k) = k - 1/4 + r(k)`` with
    ``r`` slowly decreasing (``r(200) ≈ 0.056``); beyond ``k = 200`` we use
    ``r(k) = r(200) ln 200 / ln k`` (error below 0.01 per token, so below ``0.01 / 200`` in ``b_i``).
    """
    k = np.asarray(k, dtype=np.int64)
    table = _h_table()
    top = _EXACT_UP_TO
    small = table[np.minimum(k, top)]
    tail = table[top] - top + 0.25
    big = k - 0.25 + tail * np.log(top) / np.log(np.maximum(k, top))
    return np.where(k <= top, small, big)


@register("plugin", min_samples=1, factored=True)
def plugin(counts: sp.csr_matrix, totals: np.ndarray, *, rng: Any) -> tuple[FactoredGram, dict]:
    """Plug-in: ``D_ij = ||sqrt(X_i / T_i) - sqrt(X_j / T_j)||`` (the paper's Eq. 3).

    Exactly ``hellinger_distances(positional_distributions(counts))``. Assumes nothing and corrects
    nothing: biased upwards by ``b_i + b_j`` (module docstring), most for the positions with fewest
    samples. Reference: Cirrincione, arXiv 2604.05217, Eq. 3.
    """
    return FactoredGram(positional_distributions(counts), np.zeros(counts.shape[0])), {}


@register("corrected", min_samples=1, factored=True)
def corrected(counts: sp.csr_matrix, totals: np.ndarray, *, rng: Any) -> tuple[FactoredGram, dict]:
    """Bias-corrected squared chords: the sampling contribution removed analytically.

    ``D̃^2_ij = D̂^2_ij - b̂_i - b̂_j`` with ``b̂_i = 1 - sum_t h(X_it) / T_i``, i.e.::

        D̃^2_ij = sum_t [ h(X_it) / T_i + h(X_jt) / T_j - 2 sqrt(X_it X_jt / (T_i T_j)) ]

    where ``h`` (:func:`squared_mean_root`) is the unbiased estimator of ``(E sqrt X)^2``. Under the
    Poisson model (``X_it ~ Poisson(T_i p_it)`` independent; multinomial sampling differs by
    ``O(p_it)`` per token) ``E b̂_i = b_i`` exactly, so ``E D̃^2_ij = ||m_i - m_j||^2``: the
    distance between the *mean* root vectors (``m_i -> s_i`` as ``T_i p_it`` grows). Tokens seen
    once are effectively removed (``h(1) = 0``); one sample gives ``b̂_i = 1``. Reference: the
    Poisson-complete unbiased estimator (Lehmann–Scheffé) applied to the variance decomposition
    above; cf. the split-half floor of :func:`posgeom.noise_floor`.
    """
    h = counts.copy().astype(np.float64)
    h.data = squared_mean_root(counts.data)
    bias = 1.0 - np.asarray(h.sum(axis=1)).ravel() / totals
    return FactoredGram(positional_distributions(counts), bias), {"bias": bias}


@register("split_half", min_samples=4, factored=True)
def split_half(
    counts: sp.csr_matrix, totals: np.ndarray, *, rng: Any, n_repeats: int = 10
) -> tuple[FactoredGram, dict]:
    """Split-half corrected squared chords: ``D̃^2_ij = D̂^2_ij - b̂_i - b̂_j`` with the floor of
    :func:`posgeom.noise_floor` (``method="split_half"``): ``b̂_i = s_i^2 / 4``, ``s_i`` the chord
    between two random halves of position ``i``'s samples, averaged over ``n_repeats`` splits.

    Assumes ``b_i ∝ 1 / T_i`` (``E s_i^2 ≈ 2 b_i(T/2) = 4 b_i``); with a large vocabulary ``b_i``
    falls more slowly, so this under-corrects. Reference: posgeom's noise floor (issue 9).
    """
    from posgeom.geometry.split_half import split_half_squared

    seed = int(rng.integers(2**31))  # the stream noise_floor(seed=seed) draws its splits from
    bias = split_half_squared(counts, n_repeats, np.random.default_rng(seed)) / 4.0
    return FactoredGram(positional_distributions(counts), bias), {"bias": bias}
