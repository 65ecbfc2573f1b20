"""Spearman's rank correlation of stress and accuracy over encodings, with its uncertainty.

``rho``: Spearman correlation of the group means (average ranks for ties); a bootstrap over the
seeds of every group gives a percentile interval; a permutation test over the pairings of the
group means gives the p-value (exact for at most 9 groups). Statistics in float64.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = ["RankCorrelation", "rank_correlation"]


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho between per-group stress and accuracy, with its uncertainty.

    ``rho``: Spearman rank correlation of the group means (average ranks for ties).
    ``ci_low, ci_high``: percentile interval of rho over ``n_boot`` bootstrap replicates that
    resample the seeds within every group (with replacement) and recompute both means.
    ``p_value``: two-sided permutation p-value, ``#{perm: |rho_perm| >= |rho|} / #perms`` over all
    ``k!`` pairings of the ``k`` group means (exact for ``k <= 9``, else ``n_perm`` random ones
    plus the identity).
    """

    rho: float
    ci_low: float
    ci_high: float
    p_value: float
    n_groups: int
    n_boot: int
    exact_permutation: bool

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _centred_ranks(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Centred average ranks ``rx, ry`` of ``x, y`` and ``sqrt(|rx|^2 |ry|^2)``."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return rx, ry, math.sqrt(float(rx @ rx) * float(ry @ ry))


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry, den = _centred_ranks(x, y)
    return float(rx @ ry / den) if den > 0 else float("nan")


def rank_correlation(
    stress_by_group: Sequence[Sequence[float]],
    accuracy_by_group: Sequence[Sequence[float]],
    *,
    n_boot: int = 2000,
    n_perm: int = 100_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> RankCorrelation:
    """Spearman rho of mean stress vs mean accuracy over groups (encodings); see the class.

    ``stress_by_group[g]`` and ``accuracy_by_group[g]`` hold one value per seed of group ``g``
    (the same seeds, paired; a fixed encoding repeats its stress).
    """
    import itertools

    s_groups = [np.asarray(g, dtype=np.float64) for g in stress_by_group]
    a_groups = [np.asarray(g, dtype=np.float64) for g in accuracy_by_group]
    k = len(s_groups)
    if k < 3 or len(a_groups) != k:
        raise PosgeomError("rank_correlation needs >= 3 groups with stress and accuracy each")
    if any(len(s) != len(a) or len(s) < 1 for s, a in zip(s_groups, a_groups, strict=True)):
        raise PosgeomError("every group needs the same (>= 1) number of stress and accuracy values")
    s_mean = np.array([g.mean() for g in s_groups])
    a_mean = np.array([g.mean() for g in a_groups])
    rho = _spearman(s_mean, a_mean)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        sm, am = np.empty(k), np.empty(k)
        for g in range(k):
            pick = rng.integers(0, len(s_groups[g]), len(s_groups[g]))
            sm[g], am[g] = s_groups[g][pick].mean(), a_groups[g][pick].mean()
        r = _spearman(sm, am)
        if np.isfinite(r):
            boots.append(r)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [tail, 1 - tail]) if boots else (float("nan"),) * 2
    rs, ra, den = _centred_ranks(s_mean, a_mean)
    exact = k <= 9
    if den == 0:
        p = 1.0
    else:
        if exact:
            perms = np.array(list(itertools.permutations(range(k))))
        else:
            perms = np.array([rng.permutation(k) for _ in range(n_perm)] + [np.arange(k)])
        null = (ra[perms] @ rs) / den
        p = float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
    return RankCorrelation(rho, float(lo), float(hi), p, k, len(boots), exact)
