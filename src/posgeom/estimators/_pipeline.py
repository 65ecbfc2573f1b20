"""What the pipeline and the comparison need from the estimators: the target they score against,
the MDS of an estimate, and the plug-in scores shown beside the estimate's."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.estimators._core import GeometryEstimate, as_count_matrix, choose_estimator, get
from posgeom.estimators.api import estimate_geometry
from posgeom.estimators.class_words import token_names as names_of
from posgeom.geometry.counts import count_matrix

__all__ = ["PLUGIN_COLUMNS", "estimate_mds", "pipeline_estimate", "plugin_scores"]

PLUGIN_COLUMNS = (
    ("encoding", "encoding", "s"),
    ("paper", "paper stress (plug-in D)", ".4g"),
    ("scale_optimal", "scale-optimal stress (plug-in D)", ".4g"),
)


def pipeline_estimate(
    counts: Any,
    rows: np.ndarray,
    *,
    estimator: str | GeometryEstimate,
    smoothing: str,
    convention: str,
    seed: int,
    options: dict[str, Any] | None = None,
    token_names: Any = None,
) -> GeometryEstimate | None:
    """The estimate a pipeline scores against, or None for the plug-in (its own distances).

    ``rows``: the kept positions (indices into ``counts``). ``"recommended"`` falls back to the
    plug-in where no sampling model applies (:func:`posgeom.estimators.choose_estimator`, the
    one rule: exact distributions, add-alpha smoothing, too few samples); asking for another estimator with
    smoothing is an error. Pooling is refused: the pipeline scores encodings position by position.
    ``estimator`` may also be a ready :class:`GeometryEstimate` of the kept positions (e.g. from
    a bootstrap replicate), used as it is. ``token_names``: token id -> text for the words of
    the estimate's classes (default: the tokenizer ``counts`` records, when at hand).
    """
    if isinstance(estimator, GeometryEstimate):
        if estimator.pooled or estimator.n_positions != len(rows):
            raise PosgeomError(
                f"the estimate has {estimator.n_positions} "
                f"{'buckets' if estimator.pooled else 'positions'} but the counts keep "
                f"{len(rows)} positions; estimate the geometry of the same positions, unpooled"
            )
        return estimator
    spec = get(estimator)
    opts = dict(options or {})
    if "pool" in opts:
        raise PosgeomError(
            "pooling changes the positions; use posgeom.estimate_geometry(counts, pool=...) and "
            "score encodings against the estimate"
        )
    cm = count_matrix(counts)
    if token_names is None:
        token_names = names_of(cm.provenance.get("tokenizer"))
    if choose_estimator(estimator, cm, smoothing=smoothing)[1] is not None:
        return None  # "recommended" where no sampling model applies: the plug-in
    if spec.name != "plugin" and smoothing != "none":
        raise PosgeomError(
            f"smoothing={smoothing!r} is a plug-in option; use estimator='plugin' with smoothing, "
            f"or no smoothing with estimator={estimator!r}"
        )
    if spec.name == "plugin" and not {
        k: v for k, v in opts.items() if not (k == "resolution" and _is_label(v, "auto", "full"))
    }:
        return None  # the paper's plug-in on the full vocabulary: the pipeline's own distances
    rows = np.asarray(rows, dtype=np.int64)
    c = as_count_matrix(cm)
    if not np.array_equal(rows, np.arange(c.shape[0])):
        c = c[rows]
    return estimate_geometry(
        c, estimator=spec.name, convention=convention, seed=seed, token_names=token_names, **opts
    )


def _is_label(value: Any, *labels: str) -> bool:
    return isinstance(value, str) and value in labels


def estimate_mds(estimate: Any, rank: int, **options: Any) -> Any:
    """Classical MDS of an estimate: of its Euclidean form by default (``B+ = X X^T``, the
    coordinates themselves; :mod:`posgeom.estimators.euclidean`), so full-rank MDS reproduces
    the target and explained variance stays at most 1. A raw estimate (``euclidean=False``) or
    a distance matrix goes through the exact solver; its negative eigenvalues are in the
    estimate's diagnostics, so the MDS warning is not repeated."""
    from posgeom.embed.mds import classical_mds

    options.pop("convention", None)
    if getattr(estimate, "coordinates", None) is None:
        options["solver"] = "exact"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="B has negative eigenvalues")
        return classical_mds(estimate, rank, **options)


def plugin_scores(encodings: Mapping[str, Any], plugin: np.ndarray) -> dict[str, dict[str, float]]:
    """Paper and scale-optimal stress of each encoding against the plug-in distances."""
    from posgeom.scores.stress import stress_scores

    out = {}
    for name, enc in encodings.items():
        s = stress_scores(enc, plugin)
        out[name] = {"paper": s.paper, "scale_optimal": s.scale_optimal, "stress1": s.stress1}
    return out
