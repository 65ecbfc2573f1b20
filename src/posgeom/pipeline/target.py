"""The target of the pipeline: an estimate of ``D``, the plug-in one of them.

:func:`estimate_target` gives every estimator's result through one interface, so no later stage
asks whether the target is the plug-in: ``estimator`` (the name used), ``resolution``,
``class_map``, ``distances`` (dense ``(n, n)``), ``blocks()`` (distances on demand), ``summary()``
and :func:`embed` (classical MDS of the target). The plug-in (the paper's Eq. 3,
``D_ij = ||sqrt(mu_i) - sqrt(mu_j)||`` of the positional distributions, smoothing included) is a
:class:`PluginEstimate`; any other estimator is a :class:`~posgeom.estimators.GeometryEstimate`
of :func:`posgeom.estimate_geometry` on the kept positions.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom.embed.mds import classical_mds
from posgeom.estimators._pipeline import estimate_mds, pipeline_estimate
from posgeom.estimators.class_words import token_names as names_of
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.divergences import HellingerBlocks, hellinger_distances

__all__ = ["PluginEstimate", "embed", "estimate_target"]


@dataclass(frozen=True, eq=False)
class PluginEstimate:
    """The plug-in estimate: Hellinger distances of the positional distributions ``mu_i`` (the
    pipeline's own, so add-alpha smoothing and the sample floor apply), on the full vocabulary.
    ``convention``: ``"chord"`` (``[0, sqrt 2]``) or ``"normalized"`` (``/ sqrt 2``)."""

    distributions: PositionalDistributions
    convention: str

    estimator = "plugin"
    resolution = "full"
    class_map = None

    @functools.cached_property
    def distances(self) -> np.ndarray:
        """The ``(n, n)`` plug-in ``D`` (computed once, on first use)."""
        return hellinger_distances(self.distributions, convention=self.convention)

    def blocks(self) -> HellingerBlocks:
        """The plug-in ``D`` on demand (``pairs``, ``block``): no ``(n, n)`` matrix."""
        return HellingerBlocks(self.distributions, convention=self.convention)

    def summary(self) -> dict[str, Any]:
        return {"estimator": "plugin", "convention": self.convention, "resolution": "full"}


def estimate_target(
    kept: Any,
    distributions: PositionalDistributions,
    *,
    estimator: Any,
    smoothing: str,
    convention: str,
    seed: int,
    options: dict[str, Any],
    provenance: dict[str, Any],
) -> Any:
    """The target of ``kept`` (the counts of the kept positions): the estimate of
    ``estimator`` (:func:`posgeom.estimators._pipeline.pipeline_estimate`: a name, with
    ``"recommended"`` falling back to the plug-in where no sampling model applies, or a ready
    estimate), the plug-in as a :class:`PluginEstimate` of ``distributions``."""
    estimate = pipeline_estimate(
        kept,
        np.arange(distributions.n_positions),
        estimator=estimator,
        smoothing=smoothing,
        convention=convention,
        seed=seed,
        options=options,
        token_names=names_of(provenance.get("tokenizer")),  # the words of the classes
    )
    return PluginEstimate(distributions, convention) if estimate is None else estimate


def embed(
    target: Any, rank: int, *, model_dim: int, convention: str, solver: str, seed: int
) -> Any:
    """Classical MDS of the target at ``rank`` in width ``model_dim``: of the plug-in's
    distributions (the implicit centred square-root solver when ``solver`` allows), else of the
    estimate (:func:`posgeom.estimators._pipeline.estimate_mds`: its Euclidean form)."""
    args = {"model_dim": model_dim, "convention": convention, "solver": solver, "seed": seed}
    if isinstance(target, PluginEstimate):
        return classical_mds(target.distributions, rank, **args)
    return estimate_mds(target, rank, **args)
