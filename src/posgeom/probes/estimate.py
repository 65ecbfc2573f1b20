"""One probe number with its interval over seeds and folds.

A probe is repeated over ``S`` seeds (each a new shuffle, pair sample or initialisation) and, per
seed, over ``K`` folds. The estimate is the grand mean of the ``S x K`` fold values; folds of one
seed share their rows, so the interval treats each seed's mean as one observation:

    se = sd(seed means, ddof 1) / sqrt(S),   [mean -+ t_{(1+level)/2, S-1} se]

(with one seed, the folds' own spread with ``K - 1`` degrees of freedom). The result is the
:class:`posgeom.uncertainty._intervals.Interval` every posgeom interval is, with ``method`` naming
the rule (``"t over seeds"`` / ``"t over folds"``) and ``bias = 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from posgeom._errors import PosgeomError
from posgeom.uncertainty._intervals import Interval

__all__ = ["interval_dict", "interval_over_seeds"]


def interval_over_seeds(values: np.ndarray, *, level: float = 0.95) -> Interval:
    """The interval of the module docstring; ``values`` ``(S, K)`` (seed, fold), float."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.size == 0:
        raise PosgeomError(f"probe values must be a (seeds, folds) array, got shape {v.shape}")
    mean = float(v.mean())
    per = v.mean(axis=1) if v.shape[0] > 1 else v[0]
    method = "t over seeds" if v.shape[0] > 1 else "t over folds"
    if per.size < 2:
        return Interval(mean, mean, mean, level, method, 0.0, float("nan"))
    se = float(per.std(ddof=1) / np.sqrt(per.size))
    half = float(stats.t.ppf(0.5 + level / 2, per.size - 1)) * se
    return Interval(mean, mean - half, mean + half, level, method, 0.0, se)


def interval_dict(interval: Interval, values: np.ndarray | None = None) -> dict[str, Any]:
    """The JSON form: estimate, low, high, level, method, se (and the ``(S, K)`` values)."""
    out = {k: v for k, v in interval.as_dict().items() if k != "bias"}
    if values is not None:
        out["values"] = np.round(np.asarray(values, dtype=np.float64), 10).tolist()
    return out
