"""Bootstrap intervals for a comparison's rows (when its counts carry replicates).

:func:`attach_intervals` runs :func:`posgeom.uncertainty.bootstrap.bootstrap_scores` on the fixed
encodings of a comparison and on the ``"fitted"`` families refitted per replicate
(:meth:`Family.refit <posgeom.encodings._registry.Family.refit>`: ``mds`` at rank
``min(n - 1, d)``, ``low_rank_mds`` at its rank; a fitted family without a refit gets no
interval), and writes into every row the schema's
``<key>_ci = [low, high]`` for every registered score with an interval
(:func:`posgeom.scores.available`: every stress kind, the order scores), plus, for the
candidates, ``p_first``: the share of replicates in which the encoding is ranked first by
scale-optimal stress among the candidates (:func:`posgeom.text.verdict_inputs.candidate_ranking`:
the MDS fits of ``D`` and the baselines aside), the very number of the summary's
``candidates.p_first``, which the verdict reads (the fits of ``D`` and the baselines have none).
The summary's ``ranking`` and ``ranking_stability`` are over every row. Counts: ``posgeom count --bootstrap B`` (or
``count_positions(..., bootstrap=B)``); the intervals are the module's default (bias-aware, 95%).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from posgeom.encodings._registry import Family
from posgeom.pipeline.target import PluginEstimate

__all__ = ["attach_intervals", "stage_intervals"]

log = logging.getLogger("posgeom")


def attach_intervals(
    counts: Any,
    names: Sequence[str],
    encodings: Mapping[str, Any],
    *,
    model_dim: int,
    low_rank: int,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any] | None:
    """``(uncertainty summary, cells)``: the bootstrap's cells of the rows ``names`` (encoding
    to ``{"<score>_ci": [low, high], "p_first": share}``, cells of the score table against its
    primary target), or ``(None, {})`` when ``counts`` has no replicates or the comparison
    dropped positions (the replicates' geometry must be the table's). ``encodings``: the rows'
    encodings by name; ``estimator``: the one the table's target was estimated with, so the
    replicates are re-estimated the same way."""
    from posgeom._distance_matrix import held_distances
    from posgeom.encodings import families
    from posgeom.uncertainty.bootstrap import bootstrap_scores

    if getattr(counts, "n_replicates", None) is None:
        return None, {}
    n = counts.counts.shape[0]
    fitted_families = {k: f for k, f in families().items() if f.role == "fitted"}
    fixed = {k: v for k, v in encodings.items() if k not in fitted_families}
    held = (held_distances(e) for e in fixed.values())
    if any(d is not None and d.shape[0] != n for d in held):
        log.warning("intervals skipped: the comparison dropped positions the replicates keep")
        return None, {}
    fitted = {
        k: partial(fam.refit, model_dim=model_dim, low_rank=low_rank)
        for k, fam in fitted_families.items()
        if k in names and type(fam).refit is not Family.refit
    }
    log.info("bootstrap intervals over %d replicates", counts.n_replicates)
    import warnings

    import numpy as np

    from posgeom._threads import blas_threads

    # nope's stress-1 is inf in every replicate; a replicate's D may be slightly non-Euclidean.
    # One BLAS thread: every replicate makes many small BLAS calls (the Gram matrix of m
    # positions, the scores), where a threaded BLAS spends more on synchronising than it gains
    # and collapses on shared cores (SST-2, m = 33: 1.32 s per Gram matrix with OpenBLAS's
    # threads against 0.04 s with one, on a loaded 2-core machine).
    with np.errstate(invalid="ignore"), warnings.catch_warnings(), blas_threads(1):
        warnings.simplefilter("ignore", RuntimeWarning)
        bs = bootstrap_scores(
            counts,
            fixed,
            fitted_encodings=fitted,
            estimator=estimator,
            estimator_options=estimator_options,
            seed=seed,
        )
    cells: dict[str, dict[str, Any]] = {}
    for row in names:
        u = bs.encodings.get(row)
        if u is not None:  # every registered score with an interval
            cells[row] = {f"{name}_ci": [iv.low, iv.high] for name, iv in u.scores.items()}
    from posgeom.text.verdict_inputs import candidate_ranking

    scored = list(bs.encodings)
    point = np.array([bs.encodings[n].scores[bs.rank_by].estimate for n in scored])
    candidates = candidate_ranking(
        scored, point, bs.replicate_ranking, level=bs.level, method=bs.method
    )
    for row, share in candidates.get("p_first", {}).items():  # among the candidates
        cells.setdefault(row, {})["p_first"] = share
    return {
        "candidates": candidates,
        "n_replicates": bs.n_replicates,
        "level": bs.level,
        "method": bs.method,
        "rank_by": bs.rank_by,
        "ranking": list(bs.ranking),
        "ranking_stability": bs.ranking_stability,
    }, cells


def stage_intervals(counts: Any, stage: Any, rows: Any) -> tuple[dict[str, Any] | None, Any]:
    """Bootstrap intervals on the rows when the counts carry replicates (exact scores only:
    each replicate needs an ``(n, n)`` matrix): ``(uncertainty summary or None, rows with the
    intervals' cells)``. ``stage``: the job's stage (its options, score targets and target);
    ``rows``: its :class:`~posgeom.pipeline.rows.Rows`."""

    if not stage.options["intervals"] or getattr(counts, "n_replicates", None) is None:
        return None, rows
    if stage.targets.sampled:
        log.warning(
            "bootstrap intervals skipped: each replicate needs an (n, n) matrix at n = %d; the "
            "rows carry their sampling intervals (<score>_ci)",
            stage.distributions.n_positions,
        )
        return None, rows
    o, target = stage.options, stage.target
    same_classes = {} if isinstance(target, PluginEstimate) else {"resolution": target.class_map}
    summary, cells = attach_intervals(
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
