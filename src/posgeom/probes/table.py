"""Probes of a position table alone (Wang & Chen 2020, "What Do Position Embeddings Learn?",
code MiuLab/PE-Study), with intervals over seeds and folds.

For a table ``P`` ``(n, d)`` (row ``i`` the vector of position ``i``):

* **absolute**: rows shuffled (``seed``), ``K``-fold cross-validation of the minimum-norm
  least-squares fit with an intercept (:mod:`posgeom.probes.fitting`) from ``P[i]`` to ``i``;
  the error of a seed is ``mean_i |round(ŷ_i) - i|`` over every row (each predicted once, by the
  fold that did not see it), in positions. Chance (predicting the middle) is about ``n / 4``.
* **order**: ``m`` random pairs ``(i, j)``, ``i != j`` uniform (``seed``), features
  ``[P[i], P[j]]`` ``(2d,)``, label ``j > i``, ``K``-fold ``LogisticRegression`` (L2, ``C = 1``);
  the error is the share of misclassified pairs, in percent. Chance is 50%.

The order probe's null is not 50%: every row appears in many training pairs, so a linear score
per row can be learned (with ``d >= n - 1`` any rows in general position can be ordered). Its
baseline is therefore measured: the same probe, pairs and folds on the table with its rows
permuted (``shuffled_order``); order is in the table when the error is well below that.

PE-Study uses ``m = n`` pairs, with which the probe is data-starved (its error varies by
several points between seeds); the default here is ``m = max(4 n, 2048)``
(:data:`DEFAULT_PAIRS_PER_POSITION`, :data:`MIN_DEFAULT_PAIRS`); ``pairs=n`` is PE-Study's.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval as Allowed
from posgeom._validation import check_int, check_scale
from posgeom.probes.estimate import interval_dict, interval_over_seeds
from posgeom.probes.fitting import (
    PairDesign,
    kfold,
    least_squares,
    logistic_regression,
    rounded_mae,
)
from posgeom.uncertainty._intervals import Interval

__all__ = [
    "DEFAULT_PAIRS_PER_POSITION",
    "MAX_PAIRS",
    "MAX_SEEDS",
    "PAIRS",
    "SEEDS",
    "TableProbes",
    "absolute_probe_values",
    "order_probe_values",
    "probe_table",
    "real_values",
]

DEFAULT_PAIRS_PER_POSITION = 4
MIN_DEFAULT_PAIRS = 2048
#: the most repetitions (seeds) of the table probes: each refits every fold of both probes
MAX_SEEDS = 100
#: the most pairs of the order probe (its fit holds a few arrays of ``pairs`` numbers; the
#: default ``max(4 n, 2048)`` reaches it at n = 250,000 positions)
MAX_PAIRS = 1_000_000
SEEDS = [Allowed(Integral, 1, MAX_SEEDS)]
PAIRS = [Allowed(Integral, 2, MAX_PAIRS)]


def real_values(values: Any, what: str = "the position table") -> np.ndarray:
    """``values`` as float64, refusing what a conversion would silently change: a complex array
    (its imaginary part dropped) and non-numeric ones (``what`` names it in the message)."""
    a = np.asarray(values)
    if np.iscomplexobj(a):
        raise PosgeomError(
            f"{what} is complex ({a.dtype}); the probes read real vectors: pass its real part, "
            "or its real and imaginary parts side by side (numpy.hstack([t.real, t.imag]))"
        )
    if a.dtype.kind not in "biuf":
        raise PosgeomError(f"{what} holds {a.dtype} values, not real numbers; pass a numeric table")
    return a.astype(np.float64, copy=False)


def _check_table(table: Any, what: str = "the position table") -> np.ndarray:
    """The table as float64 ``(n, d)``: ``n >= 4``, finite, and its largest ``|entry|`` zero
    or within :data:`posgeom._validation.SCALE` (outside it the fits under- or overflow in
    float64: NaN errors from a table scaled by 1e-308, an overflow from one scaled by 1e308)."""
    p = real_values(table, what)
    if p.ndim != 2 or p.shape[0] < 4 or p.shape[1] < 1:
        raise PosgeomError(f"{what} must be (n >= 4 positions, d) vectors, got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise PosgeomError(f"{what} has NaN or infinite entries; fix or drop those rows")
    check_scale(
        p,
        what,
        fix="rescale it (divide it by its largest entry: the absolute probe is unchanged by a scale)",
    )
    return p


def absolute_probe_values(table: np.ndarray, *, seeds: int, folds: int) -> np.ndarray:
    """``(seeds, folds)`` rounded MAE (positions) of each fold's held-out rows, seed ``s`` the
    shuffle ``default_rng(s)``."""
    p = _check_table(table)
    y = np.arange(p.shape[0], dtype=np.float64)
    out = np.empty((seeds, folds))
    for s in range(seeds):
        for f, test in enumerate(kfold(p.shape[0], folds, s)):
            train = np.setdiff1d(np.arange(p.shape[0]), test, assume_unique=True)
            fit = least_squares(p[train], y[train])
            out[s, f] = rounded_mae(y[test], fit.predict(p[test]))
    return out


def random_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` pairs ``(i, j)``, ``i != j``, uniform over ordered pairs of ``0..n-1``."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, m)
    j = rng.integers(0, n - 1, m)
    return i, j + (j >= i)  # skip i: uniform over the n - 1 others


def order_probe_values(table: np.ndarray, *, pairs: int, seeds: int, folds: int) -> np.ndarray:
    """``(seeds, folds)`` percent of misclassified held-out pairs; seed ``s`` draws the pairs
    with ``default_rng(s)`` and the folds with ``default_rng(s + 1_000_003)``."""
    p = _check_table(table)
    out = np.empty((seeds, folds))
    for s in range(seeds):
        i, j = random_pairs(p.shape[0], pairs, s)
        design, label = PairDesign(p, i, j), (j > i).astype(np.int64)
        for f, test in enumerate(kfold(pairs, folds, s + 1_000_003)):
            train = np.setdiff1d(np.arange(pairs), test, assume_unique=True)
            predict = logistic_regression(design.rows(train), label[train])
            out[s, f] = 100.0 * float(np.mean(predict(design.rows(test)) != label[test]))
    return out


@dataclass(frozen=True, eq=False)
class TableProbes:
    """The two table probes of one table: estimates with intervals, the ``(S, K)`` fold values
    and the protocol (every setting needed to rerun them)."""

    absolute: Interval  # rounded MAE, positions
    order: Interval  # error, percent
    absolute_values: np.ndarray
    order_values: np.ndarray
    protocol: dict[str, Any]
    shuffled_order: Interval | None = None  # the same probe on the row-shuffled table
    shuffled_order_values: np.ndarray | None = None

    @property
    def n_positions(self) -> int:
        return int(self.protocol["positions"][1] - self.protocol["positions"][0])

    def summary(self) -> dict[str, Any]:
        return {
            "absolute_mae": interval_dict(self.absolute, self.absolute_values),
            "order_error_percent": interval_dict(self.order, self.order_values),
            "chance": {"absolute_mae": self.protocol["chance_mae"], "order_error_percent": 50.0},
            "shuffled_order_error_percent": None
            if self.shuffled_order is None
            else interval_dict(self.shuffled_order, self.shuffled_order_values),
            "protocol": self.protocol,
        }


def chance_mae(n: int) -> float:
    """Rounded MAE of always predicting the middle position ``round((n - 1) / 2)``."""
    y = np.arange(n, dtype=np.float64)
    return float(np.mean(np.abs(y - np.round((n - 1) / 2))))


def probe_table(
    table: Any,
    *,
    pairs: int | None = None,
    seeds: int = 5,
    folds: int = 5,
    level: float = 0.95,
    start: int = 0,
    source: str = "array",
) -> TableProbes:
    """Absolute and order probes of ``table`` ``(n, d)`` (module docstring). ``pairs``: pairs of
    the order probe (default ``max(4 n, 2048)``); ``seeds`` repetitions, ``folds`` CV folds;
    ``start``: the table row of position 0 (recorded only)."""
    p = _check_table(table, "the position table" if source == "array" else source)
    n = p.shape[0]
    seeds = check_int(seeds, "seeds", 1, MAX_SEEDS)
    folds = check_int(folds, "folds", 2, n)
    m = max(DEFAULT_PAIRS_PER_POSITION * n, MIN_DEFAULT_PAIRS) if pairs is None else pairs
    m = min(m, MAX_PAIRS) if pairs is None else check_int(m, "pairs", 2 * folds, MAX_PAIRS)
    absolute = absolute_probe_values(p, seeds=seeds, folds=folds)
    order = order_probe_values(p, pairs=m, seeds=seeds, folds=folds)
    shuffled = order_probe_values(
        p[np.random.default_rng(2_000_003).permutation(n)], pairs=m, seeds=1, folds=folds
    )  # one seed: a baseline far from the estimate needs no more
    protocol = {
        "source": source,
        "positions": [int(start), int(start + n)],
        "width": int(p.shape[1]),
        "absolute": "rows shuffled, K-fold minimum-norm least squares with intercept "
        "(pseudo-inverse, singular values below max(rows, width) eps s_max dropped), "
        "mean |round(prediction) - position|",
        "order": "random pairs (i, j), i != j, features [p_i, p_j], label j > i, K-fold "
        "LogisticRegression (L2, C = 1), percent misclassified",
        "pairs": int(m),
        "pairs_per_position": m / n,
        "seeds": list(range(seeds)),
        "folds": int(folds),
        "level": float(level),
        "interval": "t over seed means (see posgeom.probes.estimate)",
        "chance_mae": chance_mae(n),
        "shuffled": "the order probe (seed 0, t over folds) on the table's rows permuted "
        "(default_rng(2000003)): what a probe that memorises rows reaches without any order",
    }
    return TableProbes(
        absolute=interval_over_seeds(absolute, level=level),
        order=interval_over_seeds(order, level=level),
        absolute_values=absolute,
        order_values=order,
        protocol=protocol,
        shuffled_order=interval_over_seeds(shuffled, level=level),
        shuffled_order_values=shuffled,
    )
