"""Bootstrap intervals for a comparison's rows, and the ranking statistics of its candidates.

:func:`row_intervals` runs :func:`posgeom.uncertainty.bootstrap.bootstrap_scores` on the fixed
encodings of a comparison and on the ``"fitted"`` families refitted per replicate
(:meth:`Family.refit <posgeom.encodings._registry.Family.refit>`: ``mds`` at rank
``min(n - 1, d)``, ``low_rank_mds`` at its rank; a fitted family without a refit gets no
interval), and returns, per row, cells of the comparison's score table: ``<key>_ci = [low,
high]`` for every registered score with an interval, plus, for the candidates
(:func:`posgeom.encodings.is_candidate`), ``p_first``: the share of replicates in which the
encoding is ranked first by scale-optimal stress among the candidates (:func:`candidate_ranking`).
The summary's ``ranking`` and ``ranking_stability`` are over every row.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from posgeom._records import field_record
from posgeom._threads import blas_threads
from posgeom.encodings._registry import Family, is_candidate
from posgeom.uncertainty._intervals import bootstrap_interval
from posgeom.uncertainty.bootstrap import _RECORD

__all__ = ["candidate_ranking", "row_intervals"]

log = logging.getLogger("posgeom")


def row_intervals(
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
    to ``{"<score>_ci": [low, high], "p_first": share}``), or ``(None, {})`` when ``counts`` has
    no replicates or the comparison dropped positions. ``estimator``: the one the table's target
    was estimated with."""
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
    # nope's stress-1 is inf in every replicate; a replicate's D may be slightly non-Euclidean.
    # One BLAS thread: many small BLAS calls per replicate, where threads only synchronise.
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
    scored = list(bs.encodings)
    point = np.array([bs.encodings[n].scores[bs.rank_by].estimate for n in scored])
    candidates = candidate_ranking(
        scored, point, bs.replicate_ranking, level=bs.level, method=bs.method
    )
    for row, share in candidates.get("p_first", {}).items():  # among the candidates
        cells.setdefault(row, {})["p_first"] = share
    return {"candidates": candidates, **field_record(bs, _RECORD[1:])}, cells  # no estimator


def candidate_ranking(
    names: Sequence[str],
    point: np.ndarray,
    replicates: np.ndarray,
    *,
    level: float = 0.95,
    method: str = "bias_aware",
) -> dict[str, Any]:
    """Bootstrap ranking statistics over the candidates of ``names``.

    ``point``: ``(E,)`` scores (lower is better), ``replicates``: ``(B, E)`` the same per
    replicate. Returns ``ranking``, ``p_first`` (share of replicates in which each candidate is
    the lowest), ``stability`` (mean Kendall tau-b between replicate and point scores) and
    ``neighbours``: for each neighbour pair ``(a, b)`` of the ranking, ``share`` (replicates
    ordering them alike), ``difference`` (the interval of ``s_b - s_a`` from the paired
    replicate differences) and ``separated`` (that interval lies above 0)."""
    from scipy.stats import kendalltau

    keep = [k for k, n in enumerate(names) if is_candidate(n)]
    if not keep:
        return {}
    p, r = np.asarray(point, dtype=float)[keep], np.asarray(replicates, dtype=float)[:, keep]
    cand = [str(names[k]) for k in keep]
    order = np.argsort(p, kind="stable")
    first = np.bincount(np.argmin(r, axis=1), minlength=len(cand)) / max(len(r), 1)
    taus = [kendalltau(p, row).statistic for row in r] if len(cand) > 1 else [1.0]
    taus = [t for t in taus if np.isfinite(t)]
    neighbours = []
    for a, b in itertools.pairwise(order):
        diff = bootstrap_interval(p[b] - p[a], r[:, b] - r[:, a], level=level, method=method)
        neighbours.append(
            {
                "pair": [cand[a], cand[b]],
                "share": float(np.mean(r[:, a] < r[:, b])),
                "difference": [diff.low, diff.high],
                "separated": bool(diff.low > 0),
            }
        )
    return {
        "ranking": [cand[k] for k in order],
        "p_first": {cand[k]: float(first[k]) for k in order},
        "stability": float(np.mean(taus)) if taus else float("nan"),
        "neighbours": neighbours,
    }
