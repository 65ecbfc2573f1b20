"""The main job, run once: counts -> distributions -> target ``D`` -> MDS -> rows -> summary.

:func:`analyze` is what ``posgeom geometry``, ``run``, ``demo`` and ``compare`` run. Each stage
runs once, in data-flow order:

1. the counts are recognised once (:func:`~posgeom.geometry.counts.count_matrix`) and passed
   down, with the positional distributions ``mu_i`` (smoothing, sample floor);
2. the target ``D``: an estimate (:func:`~posgeom.pipeline.target.estimate_target`; the plug-in
   is one of them, a :class:`~posgeom.pipeline.target.PluginEstimate`);
3. the MDS encoding at rank ``r = min(n - 1, d)`` (or ``n_components``); above
   :data:`OVERLAP_ABOVE` positions on a :class:`~posgeom._threads.Background` thread beside the
   stages that do not read it, BLAS at one thread each (the same arithmetic on every run);
4. meanwhile the :class:`~posgeom.scores.table.ScoreTargets` (each target validated once; exact
   up to ``SAMPLED_ABOVE`` positions, one pair sample above), the stationarity of ``D``, the
   noise floor, a long context's drawn arrays, and the rows that do not read the MDS
   (:func:`~posgeom.pipeline.rows.comparison_rows`) with the caller's ``encodings``;
5. then the MDS family (:func:`~posgeom.embed.fitted.fit_mds_family`: SMACOF, low rank, rank
   curve), the fitted rows and bootstrap intervals when the counts carry replicates;
6. one frozen :class:`~posgeom.pipeline.result.GeometryResult` whose summary is built once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._threads import Background, blas_threads
from posgeom.embed import FittedMDS, fit_mds_family
from posgeom.geometry import KeptPositions, TargetAnalysis, analyse_target, kept_positions
from posgeom.geometry.counts import count_matrix
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.pipeline.config import DISTRIBUTIONS, GeometryConfig, config_fields
from posgeom.pipeline.keywords import takes_geometry_config
from posgeom.pipeline.result import KINDS, GeometryResult
from posgeom.pipeline.rows import SMACOF_ROW, comparison_rows, rows_in_order
from posgeom.pipeline.target import PluginEstimate, blocks_target, embed, estimate_target
from posgeom.scores import table as score_table
from posgeom.scores.long_context import long_context_arrays
from posgeom.scores.table import ScoreTargets

__all__ = ["analyze"]

#: above this many positions (the long contexts' sampled path) the MDS eigensolve runs on a
#: thread of its own beside the stages that do not read it, BLAS at one thread each; below, it
#: takes seconds and every stage keeps the machine's BLAS threads (SMACOF, the dense scores)
OVERLAP_ABOVE = score_table.SAMPLED_ABOVE

log = logging.getLogger("posgeom")


@takes_geometry_config()
def analyze(
    counts: Any,
    config: GeometryConfig | None = None,
    *,
    encodings: Mapping[str, Any] | None = None,
    kind: str = "run",
) -> GeometryResult:
    """The geometry of ``counts`` and every encoding scored against it (module docstring).

    Parameters
    ----------
    counts : :class:`~posgeom.corpus.counting.PositionCounts`, an ``(n, V)`` count matrix or
        exact probabilities (sparse or dense), a :class:`~posgeom.geometry.counts.CountMatrix`,
        or :class:`~posgeom.geometry.distributions.PositionalDistributions` (small only).
    config : a :class:`~posgeom.pipeline.config.GeometryConfig`; its fields are also keyword
        options here (``analyze(counts, model_dim=64)``), which change ``config``.
    encodings : more encodings ``name -> (n, d) vectors | (n, n) distances | encoding`` of the
        kept positions, scored as they are (rows ``"user encoding"``).
    kind : the command the result is for (``geometry``, ``run``, ``demo``, ``compare``): the
        summary's ``kind`` and the names of the files :meth:`GeometryResult.write` writes.
    """
    assert config is not None  # the decorator passes the validated config
    if kind not in KINDS:
        raise PosgeomError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    families = config.row_families()  # each family looked up once, handed down
    positions = _kept_positions(counts, config)  # the counts recognised once, mu_i, kept rows
    cm = positions.input
    names = list(families)
    refine = SMACOF_ROW in names
    fitted = {x: f for x, f in families.items() if f.role == "fitted"}  # rows reading the MDS
    overlap = cm.n_positions > OVERLAP_ABOVE  # the eigensolve long enough to run beside
    with blas_threads(1) if overlap else contextlib.nullcontext():  # one core each
        stage, mds_job = _geometry(positions, config, refine=refine, overlap=overlap)
        rows = dict(
            n_heads=config.n_heads,
            rope_head_dim=stage.options["rope_head_dim"],
            rope_base=config.rope_base,
            low_rank=config.low_rank,
            learned_model=config.learned_model,
            seed=config.seed,
            skip_unbuildable=config.families is None,
            keep_encodings=not stage.targets.sampled,  # for the intervals; not a long context's
        )
        first = {x: f for x, f in families.items() if x not in fitted}
        early = comparison_rows(stage, first, extra_encodings=encodings, **rows)
        mds = mds_job.result()
    fit = fit_mds_family(  # SMACOF with every BLAS thread
        mds,
        stage.targets,
        refine=refine,
        low_rank=config.low_rank,
        max_rank=config.max_rank,
        seed=config.seed,
    )
    stage.options["solver"] = mds.solver
    stage = dataclasses.replace(stage, fit=fit)
    made = rows_in_order(names, early, comparison_rows(stage, fitted, **rows))
    uncertainty, made = _stage_intervals(counts, stage, made)
    scored = list(made.table.encodings)
    return GeometryResult(
        kind=kind,
        config=config,
        options={
            **stage.options,
            "families": [x for x in scored if x in names],
            "encodings": scored,
        },
        positions=stage.positions,
        target=stage.target,
        fit=stage.fit,
        targets=stage.targets,
        score_table=made.table,
        rows=tuple(made.rows()),
        heads=tuple(made.heads),
        analysis=stage.analysis,
        uncertainty=uncertainty,
        counts_info=dict(cm.provenance),
        shepard=made.shepard,
        shepard_pairs=stage.targets.shepard_pairs,
        large_arrays=stage.large_arrays,
    )


@dataclass(frozen=True, eq=False)
class _Geometry:
    """The stages before the rows: what the rows read."""

    positions: KeptPositions  # the distributions mu_i and the counts of the kept positions
    target: Any  # the estimate (a PluginEstimate for the plug-in)
    scored: Any  # the (n, n) target, or its blocks above SAMPLED_ABOVE
    beside: dict[str, Any]
    fit: FittedMDS | None  # the MDS family, once the MDS encoding is computed
    targets: ScoreTargets
    options: dict[str, Any] = field(default_factory=dict)
    analysis: TargetAnalysis | None = None  # the stationarity of D and its noise floor
    large_arrays: dict[str, np.ndarray] = field(default_factory=dict)


def _kept_positions(counts: Any, config: GeometryConfig) -> KeptPositions:
    """The counts recognised once, ``mu_i`` (smoothing, sample floor) and the kept positions'
    counts (:func:`~posgeom.geometry.distributions.kept_positions`); too few positions refused
    with a suggested ``n`` when the counts say how many sequences they hold."""
    from posgeom.corpus.lengths import empty_positions_hint, suggest_n

    try:  # the options of the distributions group: smoothing, alpha, min_samples, below_min
        kept = kept_positions(
            counts, **{f.name: getattr(config, f.name) for f in config_fields(DISTRIBUTIONS)}
        )
    except PosgeomError as exc:
        if "no samples" not in str(exc) or isinstance(counts, PositionalDistributions):
            raise
        cm = count_matrix(counts)  # the same object for counts recognised before
        n_sequences = cm.provenance.get("n_sequences")
        if not n_sequences or empty_positions_hint(cm.totals, n_sequences) is None:
            raise
        raise PosgeomError(
            f"{exc}; n = {suggest_n(cm.totals, n_sequences)} is reached by at least 5% of the "
            "sequences (`posgeom lengths CORPUS` shows the length profile)"
        ) from exc
    cm = kept.input
    n_sequences = cm.provenance.get("n_sequences")
    hint = empty_positions_hint(cm.totals, n_sequences) if n_sequences else None
    if hint:
        log.warning(hint)
    n = kept.distributions.n_positions
    if n < 3:
        raise PosgeomError(f"the geometry needs at least 3 positions with samples, got {n}")
    return kept


def _geometry(
    positions: KeptPositions, config: GeometryConfig, *, refine: bool, overlap: bool
) -> tuple[_Geometry, Any]:
    """Target, score targets and the stages of :func:`_of_target`, with the MDS encoding job
    (a :class:`~posgeom._threads.Background` thread when ``overlap``, else run first)."""
    c = config
    cm, dist, kept = positions.input, positions.distributions, positions.counts
    n = dist.n_positions
    large = n > score_table.SAMPLED_ABOVE
    est_options = c.estimate_options()
    if large and isinstance(c.estimator, str) and c.estimator != "plugin":
        est_options.setdefault("dense", False)  # factored: distances served by blocks()
    target = estimate_target(
        kept,
        dist,
        estimator=c.estimator,
        smoothing=c.smoothing,
        convention=c.convention,
        seed=c.seed,
        options=est_options,
        provenance=cm.provenance,
    )
    plugin = target if isinstance(target, PluginEstimate) else PluginEstimate(dist, c.convention)
    beside = {} if target is plugin else {"plugin": plugin.blocks() if large else plugin.distances}
    scored = blocks_target(target) if large else target.distances
    log.info("target D: the %s estimate of %d positions", target.estimator, n)
    r = min(n - 1, c.model_dim) if c.n_components is None else c.n_components
    options = {  # the config's record, with what the stages resolved
        **c.record(),
        "n_positions": n,
        "input": "counts" if cm.integer else "distributions",
        "n_components": r,
        "alpha": c.alpha if c.smoothing != "none" else 0.0,
        "solver": None,  # the MDS's, below
        "noise": c.noise if cm.integer else None,
        "estimator": target.estimator,
        "estimator_options": {
            k: v for k, v in est_options.items() if k != "resolution" or isinstance(v, (str, int))
        },
        "resolution": target.resolution,
        "refine": refine,
        "rope_head_dim": c.resolved_rope_head_dim(),
    }
    where = ", beside the target's stages" if overlap else ""
    log.info("classical MDS: rank %d in model width %d%s", r, c.model_dim, where)
    mds_job = Background(
        lambda: embed(
            target, r, model_dim=c.model_dim, convention=c.convention, solver=c.solver, seed=c.seed
        ),
        name="posgeom-mds",
        inline=not overlap,
    )
    targets = ScoreTargets.for_target(scored, n, beside=beside, seed=c.seed, shepard=True)
    stage = _Geometry(positions, target, scored, beside, None, targets, options=options)
    return _of_target(stage, c), mds_job


def _of_target(stage: _Geometry, config: GeometryConfig) -> _Geometry:
    """The stages that read the target but not the MDS encoding (run while it is computed): the
    stationarity of ``D``, the noise floor, a long context's drawn arrays (at the score targets'
    Shepard pairs)."""
    large = {}
    if stage.targets.sampled:  # a long context: what a report draws, without (n, n)
        large = long_context_arrays(stage.scored, stage.beside, stage.targets.shepard_pairs)
    # the noise floor of the distances scored: the estimate's own coarsened counts, normalised
    # once (no second coarsening), or the kept counts for a full-vocabulary target
    target = stage.target
    full = target.class_map is None or target.resolution == "full"
    analysis = analyse_target(
        stage.targets.matrix,  # exact up to SAMPLED_ABOVE, else sampled from the blocks
        stage.scored,
        stage.positions.distributions.positions,
        noise_counts=(stage.positions.counts if full else target.class_counts)
        if stage.options["noise"]
        else None,
        noise=stage.options["noise"],
        n_repeats=config.noise_repeats,
        seed=config.seed,
        sample=stage.targets.sample,
    )
    return dataclasses.replace(stage, analysis=analysis, large_arrays=large)


def _stage_intervals(counts: Any, stage: Any, rows: Any) -> tuple[dict[str, Any] | None, Any]:
    """Bootstrap intervals on the rows when the counts carry replicates (exact scores only:
    each replicate needs an ``(n, n)`` matrix): ``(uncertainty summary or None, rows with the
    intervals' cells)``; the bootstrap's modules load here only."""
    if not stage.options["intervals"] or getattr(counts, "n_replicates", None) is None:
        return None, rows
    if stage.targets.sampled:
        log.warning(
            "bootstrap intervals skipped: each replicate needs an (n, n) matrix at n = %d; the "
            "rows carry their sampling intervals (<score>_ci)",
            stage.positions.distributions.n_positions,
        )
        return None, rows
    from posgeom.uncertainty.rows import row_intervals

    o, target = stage.options, stage.target
    same_classes = {} if isinstance(target, PluginEstimate) else {"resolution": target.class_map}
    summary, cells = row_intervals(
        counts,
        rows.table.encodings,
        rows.built,
        model_dim=int(o["model_dim"]),
        low_rank=int(o["low_rank"]),
        estimator=o["estimator"],  # the name actually used (a fallback included)
        estimator_options={**(o["estimator_options"] or {}), **same_classes},
        seed=o["seed"],
    )
    return summary, rows.with_cells(cells)
