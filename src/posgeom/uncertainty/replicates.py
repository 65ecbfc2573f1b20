"""Replicate geometries: the estimate of the observed counts and of every bootstrap replicate.

Used by :mod:`posgeom.uncertainty.bootstrap` (the centre and interval rules are explained there).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._distance_matrix import held_distances
from posgeom._errors import PosgeomError

__all__ = ["ReplicateGeometry", "as_replicate_geometry", "estimate_distances", "replicate_geometry"]

# options of estimate_geometry that define *what* is estimated (the plug-in truth shares them)
_TRANSFORMS = ("convention", "resolution", "coarsen", "pool", "equal_samples", "seed")


def _matrix(geometry: Any) -> np.ndarray:
    held = held_distances(geometry)
    return np.asarray(geometry if held is None else held, dtype=np.float64)


def _estimator(estimator: Any, options: Mapping[str, Any]) -> Callable[[Any], Any]:
    """``counts -> geometry`` (a matrix or an estimate with ``.distances``) for a name or callable."""
    from posgeom.estimators import estimate_geometry

    if callable(estimator):
        return lambda counts: estimator(counts, **options)
    return lambda counts: estimate_geometry(counts, estimator=estimator, **options)


def estimate_distances(counts: Any, estimator: Any = "recommended", **options: Any) -> np.ndarray:
    """The ``(m, m)`` distances of ``estimator`` on ``counts`` (a name, or ``counts -> geometry``)."""
    return _matrix(_estimator(estimator, options)(counts))


def _projection(raw: Any) -> dict[str, Any]:
    """The Euclidean estimate's projection diagnostics (empty without a projection)."""
    return (getattr(raw, "diagnostics", None) or {}).get("projection") or {}


def _name(estimator: Any, raw: Any) -> str:
    if getattr(raw, "estimator", None):
        return str(raw.estimator)
    if isinstance(estimator, str):
        return "plugin" if estimator == "recommended" else estimator
    return getattr(estimator, "__name__", "custom")


@dataclass(frozen=True)
class ReplicateGeometry:
    """Point, bootstrap-world and replicate geometries of one estimator.

    estimate : ``(m, m)`` ``est(C)``; truth : ``(m, m)`` the centre of the replicates;
    replicates : ``(B, m (m - 1) / 2)`` upper triangles (``numpy.triu_indices(m, 1)``) of
    ``est(C_b)``; scheme : ``"half"`` or ``"poisson"``; resolution, class_map : the token classes
    of the estimate and of every replicate (None for a bare matrix); kept_rank,
    replicate_kept_ranks : the Euclidean estimate's ``K'`` of ``est(C)`` and ``(B,)`` of every
    ``est(C_b)`` (None / -1 without a projection); resolved : whether ``est(C)`` has a direction
    above its noise edge (None: no projection).
    """

    estimator: str
    estimate: np.ndarray
    truth: np.ndarray
    replicates: np.ndarray = field(repr=False)
    scheme: str = "half"
    resolution: str | None = None
    class_map: np.ndarray | None = field(default=None, repr=False)
    kept_rank: int | None = None
    replicate_kept_ranks: np.ndarray | None = field(default=None, repr=False)
    resolved: bool | None = None

    @property
    def n_replicates(self) -> int:
        return int(self.replicates.shape[0])

    def distance_intervals(
        self, *, level: float = 0.95, method: str = "bias_aware"
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: intervals for every distance ``D_ij``, ``i < j`` (``(m (m - 1) / 2,)``
        each, upper-triangle order), clipped at 0; every lower bound is 0 when the estimate
        resolves no direction above its noise edge (``resolved`` False)."""
        from posgeom.uncertainty._intervals import _bounds, _check_level

        _check_level(level, method)
        iu = np.triu_indices(self.estimate.shape[0], 1)
        point = self.estimate[iu]
        low, high, _, _ = _bounds(point, self.replicates, self.truth[iu], level, method)
        low, high = np.maximum(low, 0.0), np.maximum(high, 0.0)
        if self.resolved is False:
            low = np.zeros_like(low)
        return low, high

    def replicate(self, b: int) -> np.ndarray:
        """``(m, m)`` distances of replicate ``b``."""
        m = self.estimate.shape[0]
        out = np.zeros((m, m))
        out[np.triu_indices(m, 1)] = self.replicates[b]
        return out + out.T


@contextlib.contextmanager
def _quiet_estimates() -> Iterator[None]:
    """posgeom's warnings off while the replicates are estimated (a half-sample repeats the
    point estimate's "not resolved" once per replicate)."""
    log = logging.getLogger("posgeom")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def replicate_geometry(
    boot: Any,
    *,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
    bootstrap_truth: Any = "estimate",
    n_replicates: int | None = None,
) -> ReplicateGeometry:
    """Re-estimate the geometry on every replicate of ``boot`` (a ``BootstrapCounts``).

    ``estimator``: a name of :func:`posgeom.estimators.available` (default ``"recommended"``) or
    ``counts -> geometry``; ``estimator_options``: keyword options of ``estimate_geometry``;
    ``bootstrap_truth``: ``"estimate"`` (default, ``est(C)``), ``"plugin"`` (the plug-in with the
    same transforms) or ``counts -> geometry``; ``n_replicates``: the first so many (default all).
    """
    reps_total = getattr(boot, "n_replicates", None)
    if reps_total is None:
        raise PosgeomError(
            "uncertainty needs bootstrap counts; count with bootstrap=B (CLI: count --bootstrap B)"
        )
    use = reps_total if n_replicates is None else int(n_replicates)
    if not 2 <= use <= reps_total:
        raise PosgeomError(f"n_replicates must be in [2, {reps_total}], got {n_replicates!r}")
    opts = dict(estimator_options or {})
    raw = _estimator(estimator, opts)(boot.base)
    estimate = _matrix(raw)
    if getattr(raw, "class_map", None) is not None and not callable(estimator):
        # every replicate on the point estimate's classes (an "auto" rule rerun on a half-sample
        # would pick a coarser resolution: a different geometry, not a replicate of this one)
        opts = {**opts, "resolution": raw.class_map, "coarsen": None}
    slope = (getattr(raw, "diagnostics", None) or {}).get("smoothing", {}).get("slope")
    if slope is not None and not callable(estimator):
        # the same bandwidth in every replicate (smooth="auto" rerun on a half-sample picks its
        # own: a different smoother, not a replicate of this estimate)
        opts = {**opts, "smooth": float(slope)}
    est = _estimator(estimator, opts)
    if bootstrap_truth == "estimate" or (
        bootstrap_truth == "plugin" and _name(estimator, raw) == "plugin"
    ):
        truth = estimate
    elif bootstrap_truth == "plugin":
        shared = {k: v for k, v in opts.items() if k in _TRANSFORMS and not callable(estimator)}
        shared.setdefault("resolution", "full")  # the paper's plug-in, unless classes are given
        truth = _matrix(_estimator("plugin", shared)(boot.base))
    elif callable(bootstrap_truth):
        truth = _matrix(bootstrap_truth(boot.base))
    else:
        raise PosgeomError(
            f"bootstrap_truth must be 'plugin', 'estimate' or a callable, got {bootstrap_truth!r}"
        )
    if truth.shape != estimate.shape:
        raise PosgeomError(
            f"the plug-in geometry has shape {truth.shape} but the estimate {estimate.shape}; pass "
            "bootstrap_truth= a callable giving the plug-in on the same positions/classes"
        )
    iu, kept = np.triu_indices(estimate.shape[0], 1), int(_projection(raw).get("kept_rank", -1))
    reps, ranks = np.empty((use, len(iu[0]))), np.empty(use, dtype=np.int64)
    with _quiet_estimates():  # the point estimate has said what there is to say
        for b in range(use):
            rep = est(boot.replicate(b))
            reps[b], ranks[b] = _matrix(rep)[iu], int(_projection(rep).get("kept_rank", -1))
    resolved = _projection(raw).get("resolved")
    return ReplicateGeometry(
        _name(estimator, raw),
        estimate,
        truth,
        reps,
        getattr(boot, "scheme", "half"),
        resolution=getattr(raw, "resolution", None),
        class_map=getattr(raw, "class_map", None),
        kept_rank=kept if kept >= 0 else None,
        replicate_kept_ranks=ranks,
        resolved=None if resolved is None else bool(resolved),
    )


def as_replicate_geometry(boot: Any, **options: Any) -> ReplicateGeometry:
    """``boot`` itself when it is already a :class:`ReplicateGeometry` (the options are then
    ignored), else :func:`replicate_geometry` of the bootstrap counts with ``options``."""
    return boot if isinstance(boot, ReplicateGeometry) else replicate_geometry(boot, **options)
