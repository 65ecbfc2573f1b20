"""Bootstrap intervals of one number or of arrays of numbers (the formulas of
:mod:`posgeom.uncertainty.bootstrap`, where the choice of centre and method is explained)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from posgeom._errors import PosgeomError
from posgeom._records import FieldRecord
from posgeom._validation import check_real, float_array

__all__ = ["INTERVAL_METHODS", "Interval", "bootstrap_interval"]

INTERVAL_METHODS = ("bias_aware", "normal", "basic", "percentile")


# ----------------------------------------------------------------------------- intervals
@dataclass(frozen=True)
class Interval(FieldRecord):
    """A point estimate with its bootstrap interval ``[low, high]`` at ``level``.

    ``bias``: ``mean(s_b) - s_0`` (the estimator's bias as the bootstrap world sees it);
    ``se``: ``sd(s_b)`` (ddof 1).
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str
    bias: float
    se: float

    def covers(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def _check_level(level: Any, method: str) -> None:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise PosgeomError(f"level must be a number in (0, 1), e.g. 0.95; got {level!r}")
    if method not in INTERVAL_METHODS:
        raise PosgeomError(
            f"unknown interval method {method!r}; choose one of {', '.join(INTERVAL_METHODS)}"
        )


def _bounds(
    estimate: np.ndarray, reps: np.ndarray, truth: np.ndarray, level: float, method: str
) -> tuple[np.ndarray, ...]:
    """``(low, high, bias, se)`` elementwise; ``reps`` is ``(B, ...)``. A score that is infinite
    in the replicates (NoPE's: every distance equal) has no interval: its cells are NaN, without
    numpy's warnings for ``inf - inf``."""
    with np.errstate(invalid="ignore"):
        return _interval_cells(estimate, reps, truth, 1.0 - level, method)


def _interval_cells(
    estimate: np.ndarray, reps: np.ndarray, truth: np.ndarray, a: float, method: str
) -> tuple[np.ndarray, ...]:
    delta = reps - truth
    bias = delta.mean(axis=0)
    se = reps.std(axis=0, ddof=1)
    if method == "basic":
        q_lo, q_hi = np.quantile(delta, [a / 2, 1 - a / 2], axis=0)
        low, high = estimate - q_hi, estimate - q_lo
    elif method in ("normal", "bias_aware"):
        z = float(ndtri(1 - a / 2))
        half = z * (se if method == "normal" else np.sqrt(se**2 + bias**2))
        low, high = estimate - bias - half, estimate - bias + half
    else:
        low, high = np.quantile(reps, [a / 2, 1 - a / 2], axis=0)
    return low, high, bias, se


def bootstrap_interval(
    estimate: float,
    replicates: Sequence[float] | np.ndarray,
    *,
    truth: float | None = None,
    level: float = 0.95,
    method: str = "bias_aware",
) -> Interval:
    """The interval of one number from its ``B`` replicate values (see the module docstring).

    ``truth``: the bootstrap world's value ``s_0`` (default: ``estimate``, the classical basic
    bootstrap).
    """
    _check_level(level, method)
    check_real(estimate, "estimate")
    reps = float_array(replicates, "replicates").ravel()
    if reps.size < 2 or not np.all(np.isfinite(reps)):
        raise PosgeomError(
            f"need at least 2 finite replicate values, got {reps.size}; count with --bootstrap B"
        )
    s0 = float(estimate if truth is None else truth)
    low, high, bias, se = _bounds(np.float64(estimate), reps, np.float64(s0), level, method)
    return Interval(float(estimate), float(low), float(high), level, method, float(bias), float(se))
