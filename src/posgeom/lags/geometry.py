"""The lag geometry of a corpus and its dependence profile, from :class:`LagCounts`.

**Across lags.** Row ``l`` of the lag counts samples the pair distribution ``P_k`` at lag
``k = lags[l]``; :func:`posgeom.estimate_geometry` on those rows estimates the Hellinger chords
``D_kk' = ||sqrt P_k - sqrt P_k'||`` (recommended estimator: ``corrected``), exactly as it does for
positions. With half-sample replicates the uncertainty machinery of
:mod:`posgeom.uncertainty.bootstrap` turns that into intervals on every score.

**Dependence profile.** How far the pairs at lag ``k`` are from independence::

    dep_k = || sqrt(P_k) - sqrt(r_k (x) c_k) ||        (chord, r_k, c_k the two marginals of P_k)

Plug-in ``dep^_k`` uses the observed frequencies. Its **noise level** is the plug-in value when the
two tokens are independent: ``null_k`` is the mean of ``dep^`` over the block-shuffled null tables
of :func:`posgeom.lags.count_lags` (same marginals and runs, no dependence between the two tokens)
and ``null_q95_k`` the mean plus 1.645 standard deviations of those values (``null="shuffled"``).
Without null counts (or with ``null="multinomial"``) the tables are drawn from
``Multinomial(N_k, r^_k (x) c^_k)`` (``N_k`` the pairs at lag ``k``; ``n_null`` draws, seeded):
independent pairs, which understates the noise of text whose tokens come in runs. The corrected
dependence is ``dep~_k = sqrt(max(dep^_k^2 - mean(null^2), 0))`` (the squared sampling contribution
removed), and ``signal_k = dep^_k > null_q95_k`` (a one-sided 5% test per lag).
``longest_signal_lag`` is the largest lag with signal below which every lag has signal: beyond it
the corpus has no dependence that this resolution can see, and a lag geometry says nothing about
those lags.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.lags.counting import LagCounts

__all__ = ["DependenceProfile", "LagGeometry", "dependence_profile", "lag_geometry"]


def _dependence(joint: np.ndarray) -> float:
    """Plug-in chord between a ``(C, C)`` count table and the product of its marginals."""
    n = joint.sum()
    p = joint / n
    q = np.outer(p.sum(axis=1), p.sum(axis=0))
    return float(np.sqrt(max(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2), 0.0)))


@dataclass(frozen=True, eq=False)
class DependenceProfile:
    """Per lag: ``plugin``, ``null`` (noise level), ``null_q95``, ``corrected``, ``signal``;
    all ``(m,)`` (module docstring); ``replicates`` ``(B, m)`` plug-in values of the
    half-sample replicates (None without)."""

    lags: np.ndarray
    plugin: np.ndarray
    null: np.ndarray
    null_q95: np.ndarray
    corrected: np.ndarray
    signal: np.ndarray
    n_null: int
    replicates: np.ndarray | None = field(default=None, repr=False)
    null_method: str = "shuffled"

    @property
    def longest_signal_lag(self) -> int:
        """The largest lag ``k`` such that every counted lag up to ``k`` shows dependence (0: none)."""
        off = np.flatnonzero(~self.signal)
        last = off[0] - 1 if off.size else self.lags.size - 1
        return int(self.lags[last]) if last >= 0 else 0

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for i, k in enumerate(self.lags):
            row = {
                "lag": int(k),
                "dependence": float(self.plugin[i]),
                "noise_level": float(self.null[i]),
                "noise_q95": float(self.null_q95[i]),
                "dependence_corrected": float(self.corrected[i]),
                "signal": bool(self.signal[i]),
            }
            if self.replicates is not None:
                lo, hi = np.quantile(self.replicates[:, i], [0.025, 0.975])
                row["dependence_replicate_range"] = [float(lo), float(hi)]
            out.append(row)
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "definition": "chord ||sqrt P_k - sqrt(r_k x c_k)|| (plug-in); noise level: its mean "
            "under independence",
            "null_method": self.null_method,
            "n_null": self.n_null,
            "longest_signal_lag": self.longest_signal_lag,
            "lags": self.rows(),
        }


def _null_values(
    counts: LagCounts, i: int, joint: np.ndarray, method: str, n_null: int, rng: Any
) -> np.ndarray:
    if method == "shuffled":
        return np.array([_dependence(counts.joint(i, t).astype(float)) for t in counts.null_counts])
    n = int(joint.sum())
    q = np.outer(joint.sum(axis=1), joint.sum(axis=0)).ravel() / float(n) ** 2
    draws = rng.multinomial(n, q / q.sum(), size=n_null)
    return np.array([_dependence(d.reshape(joint.shape).astype(np.float64)) for d in draws])


def dependence_profile(
    counts: LagCounts, *, null: str = "auto", n_null: int = 20, seed: int = 0
) -> DependenceProfile:
    """The dependence profile of ``counts`` (module docstring). ``null``: ``"shuffled"`` (the
    block-shuffled null counts), ``"multinomial"`` (``n_null`` independent tables per lag, drawn
    with ``numpy.random.default_rng(seed)``) or ``"auto"`` (shuffled when counted)."""
    if null not in ("auto", "shuffled", "multinomial"):
        raise PosgeomError(f"null must be 'auto', 'shuffled' or 'multinomial', got {null!r}")
    shuffled = counts.null_counts is not None and counts.null_counts.shape[0] >= 2
    if null == "shuffled" and not shuffled:
        raise PosgeomError("these lag counts have no null counts; count with null_shuffles >= 2")
    method = "shuffled" if null == "shuffled" or (null == "auto" and shuffled) else "multinomial"
    if method == "multinomial" and n_null < 2:
        raise PosgeomError(f"n_null must be at least 2, got {n_null}")
    rng = np.random.default_rng(seed)
    m = counts.lags.size
    plugin, nulls, q95, null_sq = (np.zeros(m) for _ in range(4))
    for i in range(m):
        joint = counts.joint(i).astype(np.float64)
        if joint.sum() == 0:
            plugin[i] = nulls[i] = q95[i] = np.nan
            continue
        plugin[i] = _dependence(joint)
        values = _null_values(counts, i, joint, method, n_null, rng)
        nulls[i], null_sq[i] = values.mean(), np.mean(values**2)
        q95[i] = values.mean() + 1.645 * values.std(ddof=1)
    corrected = np.sqrt(np.maximum(plugin**2 - null_sq, 0.0))
    reps = None
    if counts.n_replicates:
        reps = np.array(
            [
                [_dependence(counts.joint(i, counts.replicate(b)).astype(float)) for i in range(m)]
                for b in range(counts.n_replicates)
            ]
        )
    size = int(counts.null_counts.shape[0]) if method == "shuffled" else int(n_null)
    return DependenceProfile(
        counts.lags, plugin, nulls, q95, corrected, plugin > q95, size, reps, method
    )


@dataclass(frozen=True, eq=False)
class LagGeometry:
    """The estimated Hellinger geometry across lags (``estimate``, a GeometryEstimate whose
    "positions" are the lags), the plug-in ``plugin`` ``(m, m)``, the ``dependence`` profile and
    the ``counts`` it came from; ``replicates``: the
    :class:`~posgeom.uncertainty.replicates.ReplicateGeometry` of the half-sample replicates (None
    without), for intervals."""

    counts: LagCounts
    estimate: Any
    plugin: np.ndarray
    dependence: DependenceProfile
    replicates: Any = None

    @property
    def lags(self) -> np.ndarray:
        return self.counts.lags

    @property
    def distances(self) -> np.ndarray:
        return self.estimate.distances

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.estimate, dtype=dtype)

    def distance(self, k1: int, k2: int, *, estimator: str = "estimate") -> float:
        """The distance between lags ``k1`` and ``k2`` (``"estimate"`` or ``"plugin"``)."""
        d = self.distances if estimator == "estimate" else self.plugin
        return float(d[self._rows(k1, k2)])

    def _rows(self, k1: int, k2: int, *, distinct: bool = False) -> tuple[int, int]:
        """The rows of the counted lags ``k1`` and ``k2`` (two different lags with ``distinct``)."""
        where = {int(k): i for i, k in enumerate(self.lags)}
        if k1 not in where or k2 not in where or (distinct and k1 == k2):
            both = "!=" if distinct else "and"
            raise PosgeomError(f"lags {k1} {both} {k2} must both be counted; counted: {self.lags}")
        return where[k1], where[k2]

    def distance_interval(
        self, k1: int, k2: int, *, level: float = 0.95, method: str = "bias_aware"
    ) -> Any:
        """The bootstrap :class:`~posgeom.uncertainty._intervals.Interval` of the estimated distance
        between lags ``k1`` and ``k2`` from the half-sample replicates (rules of
        :mod:`posgeom.uncertainty.bootstrap`); its bounds are those of
        :meth:`~posgeom.uncertainty.replicates.ReplicateGeometry.distance_intervals` (clipped
        at 0, and from 0 when the estimate resolves no direction above its noise edge)."""
        from posgeom.uncertainty._intervals import bootstrap_interval

        if self.replicates is None:
            raise PosgeomError("no replicates: count with replicates=B for intervals")
        i, j = sorted(self._rows(k1, k2, distinct=True))
        m = self.lags.size
        flat = i * m - i * (i + 1) // 2 + (j - i - 1)  # index in numpy.triu_indices(m, 1)
        rep = self.replicates
        iv = bootstrap_interval(
            float(rep.estimate[i, j]),
            rep.replicates[:, flat],
            truth=float(rep.truth[i, j]),
            level=level,
            method=method,
        )
        low, high = rep.distance_intervals(level=level, method=method)
        return replace(iv, low=float(low[flat]), high=float(high[flat]))

    def summary(self) -> dict[str, Any]:
        return {
            "counts": self.counts.summary(),
            "estimate": self.estimate.summary(),
            "dependence": self.dependence.summary(),
        }


def _check_replicates(counts: LagCounts) -> None:
    """Refuse replicates that hold no pair at some lag: a half-sample replicate keeps each block
    of ``counts.block`` tokens with probability 1/2, so a corpus of a few blocks leaves some
    replicate empty, and its geometry undefined."""
    reps = counts.replicate_counts
    if reps is None or (reps.sum(axis=2, dtype=np.int64) > 0).all():
        return
    raise PosgeomError(
        f"the corpus is too short for {reps.shape[0]} half-sample replicates: its "
        f"{counts.n_tokens:,} tokens in {counts.n_sequences:,} sequence(s) make too few replicate "
        f"blocks of {counts.block:,} tokens, and a replicate that keeps none has no pairs at some "
        "lag; pass more text (dozens of blocks) or replicates=0 (no intervals)"
    )


def lag_geometry(
    counts: LagCounts, *, estimator: str = "recommended", n_null: int = 20, seed: int = 0
) -> LagGeometry:
    """Estimate the geometry across lags and the dependence profile of ``counts``."""
    from posgeom.estimators import estimate_geometry

    if not isinstance(counts, LagCounts):
        raise PosgeomError("lag_geometry needs LagCounts; count them with posgeom.lags.count_lags")
    empty = np.flatnonzero(counts.pairs == 0)
    if empty.size:
        raise PosgeomError(
            f"lag {int(counts.lags[empty[0]])} has no pairs (sequences shorter than it); use "
            "longer texts or drop the lags beyond the longest sequence"
        )
    _check_replicates(counts)
    est = estimate_geometry(counts.counts, estimator=estimator, seed=seed)
    plug = estimate_geometry(counts.counts, estimator="plugin", seed=seed).distances
    dep = dependence_profile(counts, n_null=n_null, seed=seed)
    reps = None
    if counts.n_replicates:
        from posgeom.uncertainty.replicates import replicate_geometry

        reps = replicate_geometry(counts, estimator=estimator, estimator_options={"seed": seed})
    return LagGeometry(counts, est, plug, dep, reps)
