"""The target of a model analysis: an estimate of the corpus geometry, and its uncertainty.

:func:`analysis_target` estimates the geometry with a named estimator (default
``"recommended"``; ``"plugin"`` is the paper's plug-in chord, biased upwards by sampling noise).
:func:`layer_intervals` turns bootstrap replicates of the counts into an interval for the stress
of every layer, re-estimating the target on each replicate with the same estimator
(:mod:`posgeom.uncertainty.bootstrap`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "AnalysisTarget",
    "analysis_target",
    "layer_intervals",
    "target_estimators",
    "target_name",
]

INTERVAL_KINDS = ("scale_optimal", "paper")


def target_estimators() -> tuple[str, ...]:
    """Names accepted as a target: ``"recommended"`` and every registered estimator."""
    from posgeom.estimators import available

    return ("recommended", *available())


@dataclass(frozen=True, eq=False)
class AnalysisTarget:
    """The ``(n, n)`` target distances and the estimator that made them (resolved name)."""

    distances: np.ndarray
    estimator: str
    estimate: Any  # the GeometryEstimate (its options and diagnostics)
    fallback: bool = False  # the recommended estimator could not run: the plug-in instead


def target_name(counts: Any, estimator: str, *, warn: bool = True) -> tuple[str, bool]:
    """``(name, fallback)``: the estimator a model analysis's target is made with. A named
    estimator is itself; ``"recommended"`` is :func:`posgeom.estimators.choose_estimator`'s
    choice, and where it cannot run on these counts (e.g. a position with one sample) the
    plug-in chord, ``fallback = True`` and a warning."""
    from posgeom.estimators import choose_estimator

    if estimator not in target_estimators():
        raise PosgeomError(
            f"unknown target estimator {estimator!r}; choose one of "
            f"{', '.join(target_estimators())} (plugin: the paper's plug-in chord)"
        )
    if estimator == "plugin":
        return "plugin", False
    base = getattr(counts, "base", counts)  # bootstrap counts: the counts themselves
    name, why = choose_estimator(estimator, base)  # the one "recommended" rule
    if why is None:
        return name, False
    if warn:
        warnings.warn(
            f"the recommended estimator does not apply to these counts ({why}); the target is "
            "the plug-in chord instead (pass --estimator plugin to say so, or more text)",
            RuntimeWarning,
            stacklevel=3,
        )
    return "plugin", True


def analysis_target(
    counts: Any,
    *,
    estimator: str,
    seed: int,
    plugin: np.ndarray | None = None,
    resolution: Any = "auto",
) -> AnalysisTarget:
    """Estimate the positional geometry of ``counts`` (chord convention, unpooled) at
    ``resolution`` (:mod:`posgeom.estimators.resolution`). ``plugin``: the plug-in matrix already
    computed, returned as is for ``estimator="plugin"``."""
    from posgeom.estimators import estimate_geometry

    name, fallback = target_name(counts, estimator, warn=plugin is not None)
    if name == "plugin" and plugin is not None:
        return AnalysisTarget(
            distances=plugin, estimator="plugin", estimate=None, fallback=fallback
        )
    base = getattr(counts, "base", counts)
    estimate = estimate_geometry(base, estimator=name, seed=seed, resolution=resolution)
    return AnalysisTarget(
        distances=np.asarray(estimate.distances, dtype=np.float64),
        estimator=estimate.estimator,
        estimate=estimate,
    )


def layer_intervals(
    boot: Any,
    distances: np.ndarray,
    *,
    estimator: str,
    seed: int,
    level: float = 0.95,
    kinds: Sequence[str] = INTERVAL_KINDS,
    resolution: Any = "auto",
) -> dict[str, Any]:
    """Kind -> :class:`~posgeom.uncertainty.bootstrap.VectorIntervals` of the stress of every layer
    (``distances`` ``(L+1, n, n)``) against the target re-estimated on each replicate; empty,
    with a warning, when a replicate is too thin for the estimator."""
    from posgeom.uncertainty.bootstrap import bootstrap_vector
    from posgeom.uncertainty.replicates import replicate_geometry

    try:
        geometry = replicate_geometry(
            boot, estimator=estimator, estimator_options={"seed": seed, "resolution": resolution}
        )
        layers = list(distances)
        return {kind: bootstrap_vector(geometry, layers, kind=kind, level=level) for kind in kinds}
    except PosgeomError as exc:  # a replicate too thin for the estimator or the stress
        warnings.warn(
            f"no per-layer intervals: the {estimator} target cannot be re-estimated and scored "
            f"on every bootstrap replicate ({exc}); use more text or a smaller -n",
            RuntimeWarning,
            stacklevel=3,
        )
        return {}
