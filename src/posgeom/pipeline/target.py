"""The target of the pipeline: an estimate of ``D``, the plug-in one of them.

:func:`estimate_target` gives every estimator's result through one interface (``estimator``,
``resolution``, ``class_map``, ``distances``, ``blocks()``, ``summary()``, and :func:`embed`), so
no later stage asks whether the target is the plug-in: a :class:`PluginEstimate` (the paper's
Eq. 3, smoothing included) or a :class:`~posgeom.estimators.GeometryEstimate` of the kept
positions.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.corpus.token_names import token_names as names_of
from posgeom.embed.mds import classical_mds
from posgeom.estimators import GeometryEstimate, choose_estimator, estimate_geometry
from posgeom.geometry.counts import CountMatrix
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.divergences import HellingerBlocks, hellinger_distances

__all__ = ["PluginEstimate", "blocks_target", "embed", "estimate_target"]

_FULL = ("auto", "full")  # resolutions of the plug-in's own: the full vocabulary


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
    kept: CountMatrix,
    distributions: PositionalDistributions,
    *,
    estimator: Any,
    smoothing: str,
    convention: str,
    seed: int,
    options: dict[str, Any],
    provenance: dict[str, Any],
) -> Any:
    """The target of ``kept`` (the kept positions' counts): ``estimator`` a ready unpooled
    :class:`~posgeom.estimators.GeometryEstimate` of the kept positions, used as it is; or a
    registry name, estimated by :func:`posgeom.estimate_geometry` with ``options``
    (``"recommended"``: the plug-in where :func:`posgeom.estimators.choose_estimator` says no
    sampling model applies). The plug-in on the full vocabulary is a :class:`PluginEstimate` of
    ``distributions``. Another estimator with smoothing, or pooling, is refused. ``provenance``:
    the counts' (its tokenizer names the classes in words)."""
    if isinstance(estimator, GeometryEstimate):
        if estimator.pooled or estimator.n_positions != distributions.n_positions:
            raise PosgeomError(
                f"the estimate has {estimator.n_positions} "
                f"{'buckets' if estimator.pooled else 'positions'} but the counts keep "
                f"{distributions.n_positions} positions; estimate the geometry of the same "
                "positions, unpooled"
            )
        return estimator
    if "pool" in options:
        raise PosgeomError(
            "pooling changes the positions; use posgeom.estimate_geometry(counts, pool=...) and "
            "score encodings against the estimate"
        )
    plugin = PluginEstimate(distributions, convention)
    name, why_plugin = choose_estimator(estimator, kept, smoothing=smoothing)  # the one rule
    if why_plugin is not None:
        return plugin  # "recommended" where no sampling model applies
    if name != "plugin" and smoothing != "none":
        raise PosgeomError(
            f"smoothing={smoothing!r} is a plug-in option; use estimator='plugin' with smoothing, "
            f"or no smoothing with estimator={estimator!r}"
        )
    coarse = {
        k: v
        for k, v in options.items()
        if not (k == "resolution" and isinstance(v, str) and v in _FULL)
    }
    if name == "plugin" and not coarse:
        return plugin  # the paper's plug-in on the full vocabulary
    return estimate_geometry(
        kept,  # the one CountMatrix of the run, passed down (not recognised again)
        estimator=name,
        convention=convention,
        seed=seed,
        token_names=names_of(provenance.get("tokenizer")),  # the words of the classes
        **options,
    )


def embed(
    target: Any, rank: int, *, model_dim: int, convention: str, solver: str, seed: int
) -> Any:
    """Classical MDS of the target at ``rank`` in width ``model_dim``: of the plug-in's
    distributions, else of the estimate's Euclidean form (``B+ = X X^T``); a raw estimate
    (``euclidean=False``) goes through the exact solver, its negative eigenvalues already in its
    diagnostics."""
    args = {"model_dim": model_dim, "solver": solver, "seed": seed}
    if isinstance(target, PluginEstimate):
        return classical_mds(target.distributions, rank, convention=convention, **args)
    if getattr(target, "coordinates", None) is None:
        args["solver"] = "exact"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="B has negative eigenvalues")
        return classical_mds(target, rank, **args)


def blocks_target(estimate: Any) -> Any:
    """The target as blocks (``n_positions``, ``block``, ``pairs``): the estimate's own
    (``estimate.blocks()``; the plug-in's are its Hellinger blocks) when it has them, else its
    dense matrix."""
    from posgeom.scores.large import DenseTarget

    blocks = getattr(estimate, "blocks", None)
    if callable(blocks):
        return blocks()
    return DenseTarget(np.asarray(estimate.distances))
