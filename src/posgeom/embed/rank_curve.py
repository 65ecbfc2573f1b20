"""The rank experiment: the rank-``r`` MDS encoding ``P = A B^T`` scored at every ``r``."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.scores.table import ScoreTargets

__all__ = ["rank_curve"]


def rank_curve(mds: Any, target: Any, *, max_rank: int, seed: int = 0) -> list[dict[str, Any]]:
    """The rank experiment: per ``r = 1 .. min(max_rank, r_MDS)`` every registered score with
    ``rank_curve`` of the rank-``r`` MDS encoding ``P = A B^T`` (rows of
    :func:`posgeom.text.schema.rank_columns`), with its explained variance and its
    parameters ``r (n + d)`` against ``n d``. ``target``: an ``(n, n)`` matrix or the
    :class:`~posgeom.scores.table.ScoreTargets` of a comparison (sampled above
    :data:`~posgeom.scores.table.SAMPLED_ABOVE` positions; its primary target is scored)."""
    targets = target
    if not isinstance(target, ScoreTargets):
        targets = ScoreTargets.for_target(np.asarray(target), len(target), seed=seed)
    n, d = targets.n_positions, mds.model_dim
    curve = []
    for r in range(1, min(max_rank, mds.n_components) + 1):
        rank_r = mds.truncate(r)  # built here, then scored (its (n, n) distances when exact)
        built = rank_r if targets.sampled else rank_r.typed_distances
        curve.append(
            {
                "rank": r,
                **targets.rank_scores(built),
                "explained_variance": float(np.sum(mds.explained_variance_ratio[:r])),
                "parameters": r * (n + d),
                "full_parameters": n * d,
                "parameter_reduction": 1.0 - r * (n + d) / (n * d),
                **({"sampled": True} if targets.sampled else {}),
            }
        )
    return curve
