"""Choosing ``n``: the sequence-length profile of a corpus, from its position counts.

With positions counted from the start (or the end), ``T_i`` (the samples at position ``i``) is
the number of sequences longer than ``i``, so the counts already hold the length histogram:
``h[L] = T_{L-1} - T_L`` sequences have exactly ``L`` tokens (``T_{-1}`` = all sequences), and
``T_{cap-1}`` have ``cap`` tokens *or more*.

The suggested ``n``: the positions reached by at least ``1 - q`` of the sequences
(``q = 0.95``), i.e. the ``q`` quantile of the lengths, at least 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from posgeom._validation import Interval, validate_params

__all__ = [
    "QUANTILE",
    "QUANTILE_RANGE",
    "LengthProfile",
    "empty_positions_hint",
    "length_profile",
    "suggest_n",
]

QUANTILE = 0.95
#: the quantile of the lengths that ``n`` covers: a share of the sequences, in (0, 1]
QUANTILE_RANGE = Interval(Real, 0, 1, closed="right")


@validate_params({"quantile": [QUANTILE_RANGE]})
def suggest_n(totals: np.ndarray, n_sequences: int, *, quantile: float = QUANTILE) -> int:
    """Positions reached by at least ``(1 - quantile)`` of the sequences (at least 3)."""
    t = np.asarray(totals, dtype=np.float64)
    floor = (1.0 - quantile) * n_sequences
    return max(3, int(np.count_nonzero((t >= floor * (1 - 1e-12)) & (t > 0))))


def _reached_by(quantile: float) -> str:
    """Who reaches the suggested positions: "at least 5% of the sequences" (q = 0.95)."""
    if quantile == 1:
        return "at least one sequence"
    return f"at least {100 * (1 - quantile):.3g}% of the sequences"


@dataclass(frozen=True)
class LengthProfile:
    """``histogram[L]``: sequences of exactly ``L`` tokens, ``L = 0 .. cap`` (the last bin is
    ``cap`` or more: ``capped`` of them); ``percentiles``: ``{p: length}`` for p in 50, 90, 95,
    99; ``suggested_n`` (see :func:`suggest_n`)."""

    histogram: np.ndarray
    n_sequences: int
    cap: int
    capped: int
    percentiles: dict[int, int]
    suggested_n: int
    quantile: float = QUANTILE

    def summary(self) -> dict[str, Any]:
        return {
            "n_sequences": self.n_sequences,
            "cap": self.cap,
            "sequences_at_or_above_cap": self.capped,
            "percentiles": {str(k): v for k, v in self.percentiles.items()},
            "suggested_n": self.suggested_n,
            "rule": f"positions reached by {_reached_by(self.quantile)}",
        }

    def text(self, *, bins: int = 16, width: int = 40) -> str:
        """The profile as terminal lines: percentiles, a histogram in ``bins`` ranges, the
        suggestion."""
        lines = [
            f"{self.n_sequences} sequences; lengths counted up to {self.cap} tokens"
            + (f" ({self.capped} have {self.cap} or more)" if self.capped else ""),
            "percentiles: "
            + ", ".join(
                f"{p}%: {'>=' if v >= self.cap and self.capped else ''}{v}"
                for p, v in self.percentiles.items()
            ),
            "",
        ]
        top = int(np.flatnonzero(self.histogram)[-1]) if self.histogram.any() else 0
        edges = np.unique(np.linspace(0, top + 1, bins + 1).round().astype(int))
        sums = np.add.reduceat(self.histogram[: top + 1], edges[:-1]) if top else self.histogram[:1]
        peak = max(1, int(sums.max()))
        for lo, hi, c in zip(edges[:-1], edges[1:], sums, strict=False):
            bar = "#" * round(width * c / peak)
            lines.append(f"{lo:>6}-{hi - 1:<6} {int(c):>8}  {bar}")
        lines += [
            "",
            f"suggested n = {self.suggested_n} (reached by {_reached_by(self.quantile)}; "
            f"pass -n {self.suggested_n})",
        ]
        return "\n".join(lines)


@validate_params({"quantile": [QUANTILE_RANGE]})
def length_profile(
    totals: np.ndarray, n_sequences: int, *, quantile: float = QUANTILE
) -> LengthProfile:
    """The length profile from ``totals`` (``T_i``, ``i = 0 .. cap-1``) and the sequence count."""
    t = np.asarray(totals, dtype=np.int64)
    cap = len(t)
    before = np.concatenate([[n_sequences], t])
    hist = np.zeros(cap + 1, dtype=np.int64)
    hist[:cap] = before[:-1] - before[1:]
    hist[cap] = t[-1] if cap else n_sequences
    cum = np.cumsum(hist)
    pct = {
        p: int(np.searchsorted(cum, p / 100 * n_sequences * (1 - 1e-12))) for p in (50, 90, 95, 99)
    }
    return LengthProfile(
        histogram=hist,
        n_sequences=int(n_sequences),
        cap=cap,
        capped=int(hist[cap]),
        percentiles=pct,
        suggested_n=min(cap, suggest_n(t, n_sequences, quantile=quantile)),
        quantile=quantile,
    )


def empty_positions_hint(totals: np.ndarray, n_sequences: int, *, minimum: int = 2) -> str | None:
    """One sentence when ``n`` leaves positions with fewer than ``minimum`` samples (else None),
    naming them and the suggested ``n``."""
    t = np.asarray(totals)
    sparse = np.flatnonzero(t < minimum)
    if len(sparse) == 0 or n_sequences <= 0:
        return None
    first = int(sparse[0])
    return (
        f"positions {first}..{len(t) - 1} have fewer than {minimum} samples ({len(sparse)} of "
        f"{len(t)}): most sequences are shorter than n = {len(t)}; n = "
        f"{suggest_n(t, n_sequences)} is reached by at least 5% of them (`posgeom lengths CORPUS` "
        "shows "
        "the length profile)"
    )
