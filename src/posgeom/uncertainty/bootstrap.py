"""Uncertainty on every score, from bootstrap replicates of the counts.

For replicate counts ``C_b`` (:class:`~posgeom.corpus.bootstrap.BootstrapCounts`) the geometry is
re-estimated, ``D_b = est(C_b)``, and every score ``s`` (each stress kind, the violation rate, the
separation margin of encodings fitted to the geometry) is recomputed, ``s_b = s(D_b)``.

**Intervals.** With ``s_hat = s(est(C))``, the centre ``s_0`` (``bootstrap_truth``) and
``delta_b = s_b - s_0``, ``a = 1 - level``:

* ``"bias_aware"`` (default): ``s_hat - mean(delta) +- z_{1-a/2} sqrt(sd(s_b)^2 +
  mean(delta)^2)``: bias-corrected, and since the correction is only as good as the assumption
  that the bias halves when the sample doubles, its own size joins the spread;
* ``"normal"``: ``s_hat - mean(delta) +- z_{1-a/2} sd(s_b)``: bias-corrected, with the
  replicates' spread only;
* ``"basic"``: ``[s_hat - q_{1-a/2}(delta), s_hat - q_{a/2}(delta)]`` (Davison & Hinkley 1997,
  eq. 5.6); its tail quantiles need a few hundred replicates;
* ``"percentile"``: ``[q_{a/2}(s_b), q_{1-a/2}(s_b)]`` (no bias correction; for comparison).

Quantiles are ``numpy.quantile`` (linear). Intervals of the scores are clipped to their range
(stresses and margins ``>= 0``, violation rates in ``[0, 1]``). With ``s_0 = s_hat``
(``bootstrap_truth="estimate"``, the default) ``mean(delta)`` measures the extra bias of a
replicate; with half-samples the extra bias of a ``1/T`` bias equals the bias itself, so
``s_hat - mean(delta)`` is the Richardson (jackknife) correction and ``sd(s_b)`` the standard
error. ``bootstrap_truth="plugin"`` centres on the plug-in of the observed counts ``T(F_hat)``
(wrong for ``corrected``, which removes the tokens seen once). Coverage measured in simulation:
``docs/ESTIMATION.md``.

**Rankings.** Encodings are ranked by one stress kind (``rank_by``, lower is better; ties keep
the order given). ``p_first[e]`` is the fraction of replicates in which ``e`` has the lowest
score; ``ranking_stability`` is the mean over replicates of Kendall's tau-b between the
replicate's scores and the point scores (1: every replicate ranks as the point estimate).

Everything is deterministic: the replicates are fixed by the counts' seed, sampled violation
rates use ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._records import FieldRecord, field_record
from posgeom.scores import registry
from posgeom.scores._encoding import encoding_distances
from posgeom.scores.registry import Score, score_row
from posgeom.scores.stress import STRESS_KINDS
from posgeom.uncertainty._intervals import Interval, _bounds, _check_level
from posgeom.uncertainty.replicates import ReplicateGeometry, as_replicate_geometry

__all__ = [
    "BootstrapScores",
    "EncodingUncertainty",
    "VectorIntervals",
    "bootstrap_scores",
    "bootstrap_vector",
]


# ----------------------------------------------------------------------------- scores
@dataclass(frozen=True)
class EncodingUncertainty:
    """Intervals of one encoding's scores, ``scores[name]`` for every registered score with an
    interval, and ``p_first``; ``stress``, ``violation_rate``, ``separation_margin``: views."""

    name: str
    scores: dict[str, Interval]
    p_first: float

    @property
    def stress(self) -> dict[str, Interval]:
        return {k: self.scores[k] for k in STRESS_KINDS if k in self.scores}

    @property
    def violation_rate(self) -> Interval:
        return self.scores["violation_rate"]

    @property
    def separation_margin(self) -> Interval:
        return self.scores["separation"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "scores": {k: v.as_dict() for k, v in self.scores.items()},
            "p_first": self.p_first,
        }


#: the fields :meth:`BootstrapScores.as_dict` writes first, in this order
_RECORD = (
    "estimator",
    "n_replicates",
    "level",
    "method",
    "rank_by",
    "ranking",
    "ranking_stability",
)


@dataclass(frozen=True)
class BootstrapScores:
    """Every encoding's scores with intervals, and the stability of their ranking."""

    estimator: str
    n_replicates: int
    level: float
    method: str
    rank_by: str
    encodings: dict[str, EncodingUncertainty]
    ranking: tuple[str, ...]
    ranking_stability: float
    replicate_taus: np.ndarray = field(repr=False)
    replicate_ranking: np.ndarray | None = field(default=None, repr=False)  # (B, E) rank_by

    def as_dict(self) -> dict[str, Any]:
        """The settings and ranking (:data:`_RECORD`), then ``p_first`` and every encoding's."""
        return {
            **field_record(self, _RECORD),
            "p_first": {k: v.p_first for k, v in self.encodings.items()},
            "encodings": {k: v.as_dict() for k, v in self.encodings.items()},
        }


def _interval_scores(names: Sequence[str] | None = None) -> tuple[Score, ...]:
    """The registered scores with an interval (or those of ``names``, which must have one)."""
    chosen = registry.scores(names)
    if names is None:
        return tuple(s for s in chosen if s.interval)
    without = [s.name for s in chosen if not s.interval]
    if without:
        raise PosgeomError(f"score(s) {without} have no interval; choose from {_with_interval()}")
    return chosen


def _with_interval() -> str:
    return ", ".join(s.name for s in registry.scores() if s.interval)


def _replicates(
    boot: Any,
    encodings: Mapping[str, Any],
    scores: Callable[[dict[str, np.ndarray], np.ndarray], np.ndarray],
    settings: tuple[Any, Mapping[str, Any] | None, float, str, Any],
) -> tuple[ReplicateGeometry, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """``(geometry, point, replicates, (low, high, bias, se))`` of every bootstrap:
    ``scores(distances, target)`` of the fixed encodings (each checked to have the geometry's
    ``m`` positions) on the estimate, the truth and every replicate of ``boot``. ``settings``:
    ``(estimator, estimator_options, level, method, bootstrap_truth)``."""
    estimator, estimator_options, level, method, bootstrap_truth = settings
    _check_level(level, method)
    geo = as_replicate_geometry(
        boot,
        estimator=estimator,
        estimator_options=estimator_options,
        bootstrap_truth=bootstrap_truth,
    )
    m = geo.estimate.shape[0]
    fixed = {n: encoding_distances(e, name=n) for n, e in encodings.items()}
    for name, d in fixed.items():
        if d.shape[0] != m:
            raise PosgeomError(
                f"encoding {name!r} has {d.shape[0]} positions but the geometry has {m}; "
                "build encodings for the same positions"
            )
    point, truth = scores(fixed, geo.estimate), scores(fixed, geo.truth)
    reps = np.stack([scores(fixed, geo.replicate(b)) for b in range(geo.n_replicates)])
    return geo, point, reps, _bounds(point, reps, truth, level, method)


def bootstrap_scores(
    boot: Any,
    encodings: Mapping[str, Any],
    *,
    fitted_encodings: Mapping[str, Callable[[np.ndarray], Any]] | None = None,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
    level: float = 0.95,
    method: str = "bias_aware",
    rank_by: str = "scale_optimal",
    bootstrap_truth: Any = "estimate",
    seed: int = 0,
) -> BootstrapScores:
    """Scores of every encoding with bootstrap intervals, and the stability of their ranking.

    ``boot``: :class:`~posgeom.corpus.bootstrap.BootstrapCounts`, or a :class:`ReplicateGeometry`
    (then the estimator options are ignored). ``encodings``: name -> fixed encoding (``(m, d)``
    vectors, ``(m, m)`` distances, or an object with ``.distances``; on the buckets when pooled);
    ``fitted_encodings``: name -> function of the ``(m, m)`` target giving an encoding, refitted
    on every replicate. ``rank_by``: a registered score with a direction. ``seed``: of the
    sampled violation rate for more than 400 positions.
    """
    chosen = _interval_scores()
    keys = [s.name for s in chosen]
    if rank_by not in keys or registry.get(rank_by).better is None:
        ranked = [s.name for s in chosen if s.better is not None]
        raise PosgeomError(f"rank_by must be one of {', '.join(ranked)}, got {rank_by!r}")
    if not isinstance(encodings, Mapping) or not isinstance(fitted_encodings or {}, Mapping):
        raise PosgeomError("encodings (and fitted_encodings) must map names to encodings")
    fitted = dict(fitted_encodings or {})
    names = [*encodings, *fitted]
    if len(names) < 1 or len(set(names)) != len(names):
        raise PosgeomError("give at least one encoding, each name once (encodings and fitted)")

    def evaluate(fixed: dict[str, np.ndarray], target: np.ndarray) -> np.ndarray:
        mats = {**fixed, **{n: encoding_distances(fn(target), name=n) for n, fn in fitted.items()}}
        rows = (score_row(mats[n], target, seed=seed, names=keys) for n in names)
        return np.array([[row[k] for k in keys] for row in rows], dtype=np.float64)

    settings = (estimator, estimator_options, level, method, bootstrap_truth)
    geo, point, reps, (low, high, bias, se) = _replicates(boot, encodings, evaluate, settings)
    bounds = np.array([s.bounds for s in chosen])  # each score's range (last axis: the scores)
    low, high = np.maximum(low, bounds[:, 0]), np.minimum(high, bounds[:, 1])
    col = keys.index(rank_by)
    sign = 1.0 if registry.get(rank_by).better == "lower" else -1.0
    ranked = sign * reps[:, :, col]
    first = np.bincount(np.argmin(ranked, axis=1), minlength=len(names)) / len(reps)
    taus = np.array([_tau(point[:, col], r[:, col]) for r in reps])

    def iv(e: int, k: int) -> Interval:
        p, lo, hi, bi, s = (float(a[e, k]) for a in (point, low, high, bias, se))
        return Interval(p, lo, hi, level, method, bi, s)

    result = {
        n: EncodingUncertainty(n, {k: iv(e, j) for j, k in enumerate(keys)}, float(first[e]))
        for e, n in enumerate(names)
    }
    order = np.argsort(sign * point[:, col], kind="stable")
    return BootstrapScores(
        geo.estimator,
        geo.n_replicates,
        level,
        method,
        rank_by,
        result,
        tuple(names[i] for i in order),
        float(np.nanmean(taus)) if np.any(np.isfinite(taus)) else float("nan"),
        taus,
        reps[:, :, col],
    )


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2:
        return 1.0
    from scipy.stats import kendalltau  # here: scipy.stats costs ~33 MB of imports

    return float(kendalltau(a, b).statistic)


# ----------------------------------------------------------------------------- vectors (layers)
@dataclass(frozen=True)
class VectorIntervals(FieldRecord):
    """Intervals of a vector of scores (e.g. one stress per layer): ``(L,)`` arrays."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    bias: np.ndarray
    se: np.ndarray
    level: float
    method: str
    kind: str
    estimator: str


def bootstrap_vector(
    boot: Any,
    encodings: Sequence[Any],
    *,
    kind: str = "scale_optimal",
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
    level: float = 0.95,
    method: str = "bias_aware",
    bootstrap_truth: Any = "estimate",
) -> VectorIntervals:
    """Intervals of the score ``kind`` (a registered score with an interval; a stress kind by
    default) of each of ``L`` encodings (e.g. one per layer of a model).

    ``boot``: ``BootstrapCounts`` or a :class:`ReplicateGeometry`; ``encodings``: ``L`` encodings
    (vectors, distances, or objects with ``.distances``) of the geometry's positions.
    """
    if kind not in registry.available() or not registry.get(kind).interval:
        raise PosgeomError(f"kind must be one of {_with_interval()}, got {kind!r}")
    (score,) = _interval_scores([kind])
    if isinstance(encodings, (str, bytes, Mapping)) or not isinstance(encodings, Sequence):
        raise PosgeomError(
            f"encodings must be a list (one per layer), not {type(encodings).__name__}"
        )
    if len(encodings) < 1:
        raise PosgeomError("give at least one encoding (one per layer)")

    def scores(mats: dict[str, np.ndarray], target: np.ndarray) -> np.ndarray:
        return np.array([score.value(d, target) for d in mats.values()])

    layers = {f"layer {i}": e for i, e in enumerate(encodings)}
    settings = (estimator, estimator_options, level, method, bootstrap_truth)
    geo, point, _, (low, high, bias, se) = _replicates(boot, layers, scores, settings)
    low, high = np.maximum(low, score.bounds[0]), np.minimum(high, score.bounds[1])
    return VectorIntervals(point, low, high, bias, se, level, method, kind, geo.estimator)
