"""The whole geometry pipeline for one corpus: counts -> distributions -> D -> MDS -> scores.

:func:`analyze_counts` runs every step on a :class:`~posgeom.corpus.counting.PositionCounts` (or
any ``(n, V)`` count matrix) and returns a :class:`PipelineResult`, which writes a results
directory: ``summary.json`` (every number, every option, the conventions), ``arrays.npz`` (+ JSON
sidecar: distances, MDS embedding, eigenvalues, totals, Shepard pairs) and ``table.md``, through
:func:`posgeom.reports.results_folder` (atomic; optionally with ``report.html``). Score rows and
rank-curve rows follow :mod:`posgeom.pipeline.schema`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.analysis import pipeline_scale as scale
from posgeom.analysis.pipeline_result import PipelineResult
from posgeom.analysis.pipeline_scale import Scorer, blocks_target, draw_shepard_pairs
from posgeom.embed.mds import MDSResult, classical_mds
from posgeom.embed.refine import smacof_refine
from posgeom.estimators._pipeline import estimate_mds, pipeline_estimate
from posgeom.estimators.class_words import token_names as names_of
from posgeom.geometry.counts import CountMatrix, count_matrix
from posgeom.geometry.distributions import positional_distributions
from posgeom.geometry.divergences import HellingerBlocks, hellinger_distances
from posgeom.geometry.noise import noise_floor, sampled_noise_floor
from posgeom.pipeline.config import (
    BASELINES,
    DEFAULT_MODEL_DIM,
    GeometryConfig,
    config_fields,
    takes_geometry_config,
)
from posgeom.pipeline.markdown import score_table
from posgeom.scores import registry
from posgeom.scores._encoding import encoding_pairs, matched_distance_matrices

__all__ = [
    "DEFAULT_MODEL_DIM",
    "PipelineResult",
    "analyze_counts",
    "pair_distances",
    "rank_curve",
    "score_encoding",
    "score_table",
    "shepard_pairs",
]

log = logging.getLogger("posgeom")
BASELINE_FIELDS = tuple(f.name for f in config_fields(BASELINES))
SHEPARD_PAIRS = 1500  # pairs kept per encoding for the Shepard plots of a report


def score_encoding(encoding: Any, target: Any, *, seed: int = 0) -> dict[str, Any]:
    """Every registered score (:func:`posgeom.scores.available`) of one encoding against the
    target distances (an ``(n, n)`` matrix or an estimate), as a JSON-able dict."""
    delta, tgt = matched_distance_matrices(encoding, target)
    return registry.score_row(delta, tgt, seed=seed)


def rank_curve(
    mds: MDSResult, target: Any, *, max_rank: int, seed: int = 0
) -> list[dict[str, Any]]:
    """The rank experiment: per ``r = 1 .. min(max_rank, r_MDS)`` every registered score with
    ``rank_curve`` of the rank-``r`` MDS encoding ``P = A B^T`` (rows of
    :func:`posgeom.pipeline.schema.rank_columns`).
    ``target``: an ``(n, n)`` matrix or a :class:`~posgeom.analysis.pipeline_scale.Scorer` (sampled
    above ``SAMPLED_ABOVE`` positions)."""
    scorer = target if isinstance(target, Scorer) else Scorer(dense=np.asarray(target), seed=seed)
    n, d = scorer.n_positions, mds.model_dim
    names = [s.name for s in registry.scores() if s.rank_curve]
    curve = []
    for r in range(1, min(max_rank, mds.n_components) + 1):
        s = scorer.score(mds.truncate(r), names=names)
        curve.append(
            {
                "rank": r,
                **{k: s[k] for k in names if k in s},
                "explained_variance": float(np.sum(mds.explained_variance_ratio[:r])),
                "parameters": r * (n + d),
                "full_parameters": n * d,
                "parameter_reduction": 1.0 - r * (n + d) / (n * d),
                **({"sampled": True} if scorer.sampled else {}),
            }
        )
    return curve


def shepard_pairs(n: int, *, size: int = SHEPARD_PAIRS, seed: int = 0) -> np.ndarray:
    """``(2, m)`` pairs ``i < j`` for Shepard plots: all of them when there are at most ``size``,
    else ``size`` drawn without replacement (``default_rng(seed)``), sorted."""
    return draw_shepard_pairs(n, size, seed)


def pair_distances(encoding: Any, pairs: np.ndarray) -> np.ndarray:
    """``delta_ij`` of ``encoding`` at ``pairs`` (``(2, m)``): from its lag profile or vectors
    when it has them (no ``n x n`` matrix), else from its distance matrix."""
    return encoding_pairs(encoding, pairs[0], pairs[1])


def _empty_positions_hint(cm: CountMatrix) -> tuple[str | None, int | None]:
    """(warning, suggested n) when ``n`` leaves positions with fewer than 2 samples (only for
    counts whose provenance says how many sequences were counted)."""
    from posgeom.pipeline.lengths import empty_positions_hint, suggest_n

    n_sequences = cm.provenance.get("n_sequences")
    if not n_sequences:
        return None, None
    hint = empty_positions_hint(cm.totals, n_sequences)
    return hint, (None if hint is None else suggest_n(cm.totals, n_sequences))


@takes_geometry_config(exclude=BASELINE_FIELDS, defaults={"max_rank": 8})
def analyze_counts(
    counts: Any,
    *,
    encodings: Mapping[str, Any] | None = None,
    config: GeometryConfig,
) -> PipelineResult:
    """Run the geometry pipeline on counts and score the MDS encoding (and any ``encodings``).

    The keyword options are the fields of :class:`~posgeom.pipeline.config.GeometryConfig`
    (every group but ``baselines``; ``max_rank`` 8 here). ``encodings`` maps names to encodings
    (vectors, distance matrices or posgeom encodings) of
    the same positions; the MDS encoding is always scored as ``"mds"`` (and ``"mds+smacof"``
    when ``refine``). ``estimator`` (a name from :func:`posgeom.estimators.available`, or a
    :class:`~posgeom.estimators.GeometryEstimate` of the kept positions) makes the target
    ``D`` (and the MDS encoding) those of :func:`posgeom.estimate_geometry`; the plug-in
    distances and scores are kept beside it (``plugin_distances``, ``plugin_scores``).
    ``estimator_options`` go to ``estimate_geometry`` (e.g. ``{"pool": 4}``); ``resolution``
    (``"auto"``, ``"full"``, ``"top:K"``, ``"top:K+bands:B"``, ``"bins:B"`` or a class map, see
    :mod:`posgeom.estimators.resolution`) is the token classes of the estimate, the same at every
    position (``options["resolution"]`` records the one used; the plug-in's is ``"full"``).
    """
    c = config
    model_dim, n_components, smoothing, alpha = c.model_dim, c.n_components, c.smoothing, c.alpha
    min_samples, below_min, convention, solver = c.min_samples, c.below_min, c.convention, c.solver
    refine, noise, noise_repeats, max_rank = c.refine, c.noise, c.noise_repeats, c.max_rank
    seed, estimator = c.seed, c.estimator
    cm = count_matrix(counts)  # the one normalisation of this analysis's counts
    hint, suggested = _empty_positions_hint(cm)
    try:
        dist = positional_distributions(
            cm, smoothing=smoothing, alpha=alpha, min_samples=min_samples, below_min=below_min
        )
    except PosgeomError as exc:
        if suggested is None or "no samples" not in str(exc):
            raise
        raise PosgeomError(
            f"{exc}; n = {suggested} is reached by at least 5% of the sequences (`posgeom lengths "
            "CORPUS` shows the length profile)"
        ) from exc
    if hint:
        log.warning(hint)
    n = dist.n_positions
    if n < 3:
        raise PosgeomError(f"the geometry needs at least 3 positions with samples, got {n}")
    large = n > scale.SAMPLED_ABOVE
    est_options = c.estimate_options()
    kept = cm.counts if dist.n_positions == cm.n_positions else cm.counts[dist.positions]
    if large and isinstance(estimator, str) and estimator != "plugin":
        est_options.setdefault("dense", False)  # factored: distances served by blocks()
    estimate = pipeline_estimate(
        kept,
        np.arange(dist.n_positions),
        estimator=estimator,
        smoothing=smoothing,
        convention=convention,
        seed=seed,
        options=est_options,
        token_names=names_of(cm.provenance.get("tokenizer")),  # the words of the classes
    )
    log.info(
        "Hellinger %s for %d positions (vocabulary %d)",
        "distances on demand (blocks, no n x n matrix)" if large else "distances",
        n,
        dist.vocab_size,
    )
    plugin = HellingerBlocks(dist, convention=convention)
    if not large:
        plugin = hellinger_distances(dist, convention=convention)
    target: Any = plugin
    if estimate is not None:
        target = blocks_target(dist, estimate, convention) if large else estimate.distances
    r = min(n - 1, model_dim) if n_components is None else n_components
    log.info("classical MDS: rank %d in model width %d", r, model_dim)
    mds_args = {"model_dim": model_dim, "convention": convention, "solver": solver, "seed": seed}
    mds = (
        classical_mds(dist, r, **mds_args)
        if estimate is None
        else estimate_mds(estimate, r, **mds_args)
    )
    beside = {} if estimate is None else {"plugin": plugin}
    scorer = Scorer.for_target(target, n, beside=beside, seed=seed)
    named: dict[str, Any] = {"mds": mds}
    refined = None
    if refine and n <= scale.REFINE_MAX_N:
        log.info("SMACOF refinement from the MDS solution")
        refined = smacof_refine(scorer.dense, mds)
        named["mds+smacof"] = refined
    named.update(encodings or {})
    scores, plugin_beside = {}, {}
    for name, enc in named.items():
        scores[name], plugin_beside[name] = _split_beside(scorer.score(enc))
    curve = rank_curve(mds, scorer, max_rank=max_rank, seed=seed)
    pairs = shepard_pairs(n, seed=seed)
    shepard = {name: pair_distances(enc, pairs) for name, enc in named.items()}
    large_arrays = {} if not large else scale.long_context_arrays(target, beside, pairs)
    nf = _noise(_on_classes(kept, estimate), scorer, noise, noise_repeats, seed)
    options = {  # the config's fields (GeometryConfig.record), with what the stages resolved
        **{k: v for k, v in c.record().items() if k not in BASELINE_FIELDS},
        "n_components": r,
        "alpha": alpha if smoothing != "none" else 0.0,
        "solver": mds.solver,
        "estimator": "plugin" if estimate is None else estimate.estimator,
        "estimator_options": {
            k: v for k, v in est_options.items() if k != "resolution" or isinstance(v, (str, int))
        },
        "resolution": "full" if estimate is None else estimate.resolution,
    }
    return PipelineResult(
        distributions=dist,
        distances=scorer.dense,
        mds=mds,
        refined=refined,
        scores=scores,
        rank_curve=curve,
        noise=nf,
        options=options,
        counts_info=dict(cm.provenance),  # sequences, tokens, fingerprint, tokenizer, options
        shepard=shepard,
        shepard_pairs=pairs,
        estimate=estimate,
        plugin_distances=None if estimate is None or large else plugin,
        plugin_scores={k: v for k, v in plugin_beside.items() if v},
        scorer=scorer,
        large_arrays=large_arrays,
    )


def _split_beside(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """A scorer's row without the plug-in scores beside it, and those scores."""
    beside = {k[len("plugin_") :]: v for k, v in row.items() if k.startswith("plugin_")}
    return {k: v for k, v in row.items() if not k.startswith("plugin_")}, beside


def _on_classes(rows: Any, estimate: Any) -> Any:
    """The kept positions' counts on the estimate's token classes: the noise floor of the
    distances scored (``rows`` for the plug-in, whose classes are the tokens). The estimate's own
    coarsened counts, normalised once: no second coarsening, no second normalisation."""
    if estimate is None or estimate.class_map is None or estimate.resolution == "full":
        return rows
    return estimate.class_counts


def _noise(rows: Any, scorer: Any, noise: str | None, repeats: int, seed: int) -> Any:
    """The noise floor of the kept positions' counts ``rows`` (sampled pairs above
    ``SAMPLED_ABOVE``)."""
    if not noise:
        return None
    try:
        if not scorer.sampled:
            return noise_floor(rows, method=noise, n_repeats=repeats, seed=seed)
        if noise != "split_half":
            raise PosgeomError(
                f"the {noise} noise floor needs n x n replicate matrices; at n = "
                f"{scorer.n_positions} use noise='split_half'"
            )
        s = scorer.sample  # the floor's own plug-in D (on ``rows``' classes), as noise_floor
        plugin = HellingerBlocks(positional_distributions(rows)).pairs(s.i, s.j)
        return sampled_noise_floor(rows, (s.i, s.j), plugin, n_repeats=repeats, seed=seed)
    except PosgeomError as exc:
        log.warning("noise floor skipped: %s", exc)
        return None
