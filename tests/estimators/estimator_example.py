"""The worked example of docs/ARCHITECTURE.md ("Adding an estimator"): the Krichevsky–Trofimov
(add-1/2) smoothed plug-in.

Each position's distribution is estimated as ``p̂_it = (X_it + 1/2) / (T_i + V/2)`` (the KT
estimator, the Bayes mean under a Jeffreys Dirichlet(1/2) prior) and the chord of those:
``D_ij^2 = ||sqrt p̂_i - sqrt p̂_j||^2``. Smoothing pulls sparse positions towards the uniform
distribution (a bias towards 0 that vanishes as ``T_i`` grows). In the package this file would be
``src/posgeom/estimators/kt.py``; ``tests/estimators/test_estimators.py`` imports it in a fresh
process and runs the common estimator checks on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom.estimators import register


@register("kt_smoothed", min_samples=1)
def kt_smoothed(counts: sp.csr_matrix, totals: np.ndarray, *, rng: Any) -> tuple[np.ndarray, dict]:
    """Plug-in chord of the add-1/2 (Krichevsky–Trofimov) smoothed distributions.

    ``D_ij^2 = sum_t (sqrt p̂_it - sqrt p̂_jt)^2`` with ``p̂_it = (X_it + 1/2) / (T_i + V/2)``.
    Dense in the vocabulary (an ``(n, V)`` root matrix). Reference: Krichevsky and Trofimov
    (1981), "The performance of universal encoding", IEEE Trans. Inf. Theory 27(2).
    """
    vocab = counts.shape[1]
    roots = np.sqrt((counts.toarray() + 0.5) / (totals[:, None] + vocab / 2))
    gram = roots @ roots.T
    sq = np.diag(gram)[:, None] + np.diag(gram)[None, :] - 2 * gram
    return sq, {"smoothing": 0.5}
