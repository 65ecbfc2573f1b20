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
from collections.abc import Mapping
from functools import partial
from typing import Any

from posgeom.encodings._registry import Family
from posgeom.pipeline.target import PluginEstimate

__all__ = ["attach_intervals", "stage_intervals"]

log = logging.getLogger("posgeom")


def attach_intervals(
    counts: Any,
    table: list[dict[str, Any]],
    encodings: Mapping[str, Any],
    *,
    model_dim: int,
    low_rank: int,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Add intervals to ``table`` (in place) and return the uncertainty summary, or None when
    ``counts`` has no replicates or the comparison dropped positions (the replicates' geometry
    must be the table's). ``estimator``: the one the table's target was estimated with, so the
    replicates are re-estimated the same way."""
    from posgeom._distance_matrix import held_distances
    from posgeom.encodings import families
    from posgeom.uncertainty.bootstrap import bootstrap_scores

    if getattr(counts, "n_replicates", None) is None:
        return None
    n = counts.counts.shape[0]
    fitted_families = {k: f for k, f in families().items() if f.role == "fitted"}
    fixed = {k: v for k, v in encodings.items() if k not in fitted_families}
    held = (held_distances(e) for e in fixed.values())
    if any(d is not None and d.shape[0] != n for d in held):
        log.warning("intervals skipped: the comparison dropped positions the replicates keep")
        return None
    names = {r["encoding"] for r in table}
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
    for row in table:
        u = bs.encodings.get(row["encoding"])
        if u is None:
            continue
        for name, iv in u.scores.items():  # every registered score with an interval
            row[f"{name}_ci"] = [iv.low, iv.high]
    from posgeom.text.verdict_inputs import candidate_ranking

    names = list(bs.encodings)
    point = np.array([bs.encodings[n].scores[bs.rank_by].estimate for n in names])
    candidates = candidate_ranking(
        names, point, bs.replicate_ranking, level=bs.level, method=bs.method
    )
    first = candidates.get("p_first", {})
    for row in table:  # one P(first) per row: among the candidates, as the verdict reads it
        row.pop("p_first", None)
        if row["encoding"] in first:
            row["p_first"] = first[row["encoding"]]
    return {
        "candidates": candidates,
        "n_replicates": bs.n_replicates,
        "level": bs.level,
        "method": bs.method,
        "rank_by": bs.rank_by,
        "ranking": list(bs.ranking),
        "ranking_stability": bs.ranking_stability,
    }


def stage_intervals(
    counts: Any, stage: Any, table: list[dict[str, Any]], built: dict[str, Any]
) -> dict[str, Any] | None:
    """Bootstrap intervals on the rows when the counts carry replicates (exact scores only:
    each replicate needs an ``(n, n)`` matrix); ``stage``: the job's stage (its options,
    score targets and target), ``table`` / ``built``: its rows and the encodings they scored."""

    if not stage.options["intervals"] or getattr(counts, "n_replicates", None) is None:
        return None
    if stage.targets.sampled:
        log.warning(
            "bootstrap intervals skipped: each replicate needs an (n, n) matrix at n = %d; the "
            "rows carry their sampling intervals (<score>_ci)",
            stage.distributions.n_positions,
        )
        return None
    o, target = stage.options, stage.target
    same_classes = {} if isinstance(target, PluginEstimate) else {"resolution": target.class_map}
    return attach_intervals(
        counts,
        table,
        built,
        model_dim=int(o["model_dim"]),
        low_rank=int(o["low_rank"]),
        estimator=o["estimator"],  # the name actually used (a fallback included)
        estimator_options={**(o["estimator_options"] or {}), **same_classes},
        seed=o["seed"],
    )
