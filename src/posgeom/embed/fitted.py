"""The MDS family fitted to a target, in one record: :func:`fit_mds_family`.

Given Algorithm 1's classical MDS encoding of a target (rank ``r``), the encodings fitted from
it are made here once: its SMACOF refinement (when asked for and ``n <= REFINE_MAX_N``), its
rank-``low_rank`` truncation and the rank experiment
(:func:`rank_curve`). The frozen :class:`FittedMDS` also carries what
a result's summary and ``arrays.npz`` read of them.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._records import field_record
from posgeom.embed.mds import MDSResult
from posgeom.embed.rank import effective_ranks
from posgeom.embed.refine import REFINE_MAX_N, smacof_refine
from posgeom.scores.table import ScoreTargets

__all__ = ["FittedMDS", "fit_mds_family", "rank_curve"]

log = logging.getLogger("posgeom")


@dataclass(frozen=True, eq=False)
class FittedMDS:
    """The MDS family fitted to one target: ``mds``, Algorithm 1's encoding; ``refined``, its
    SMACOF refinement (:class:`~posgeom.embed.refine.RefinedEmbedding`) or None; ``low_rank``,
    ``mds`` truncated to rank ``min(low_rank, r)``; ``rank_curve``, one row per rank ``r = 1 ..
    min(max_rank, r_MDS)``; ``summary``, the summary's MDS block; ``arrays``, ``mds_embedding``
    ``(n, d)``, ``mds_coordinates`` ``(n, r+)``, ``eigenvalues``, ``rank`` and
    ``rank_paper_stress``, and ``refined_coordinates`` when refined.
    """

    mds: MDSResult
    refined: Any
    low_rank: MDSResult
    rank_curve: tuple[dict[str, Any], ...]
    summary: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray]


def fit_mds_family(
    mds: MDSResult,
    targets: Any,
    *,
    refine: bool,
    low_rank: int,
    max_rank: int,
    seed: int = 0,
) -> FittedMDS:
    """The :class:`FittedMDS` of ``mds`` against ``targets`` (the comparison's
    :class:`~posgeom.scores.table.ScoreTargets`); SMACOF only with ``refine``, up to
    ``REFINE_MAX_N`` positions and with an ``(n, n)`` target."""
    refined = None
    if refine and mds.n_positions <= REFINE_MAX_N and targets.matrix is not None:
        log.info("SMACOF refinement from the MDS solution")
        refined = smacof_refine(targets.matrix, mds)
    log.info("rank curve (r = 1 .. %d)", max_rank)
    curve = tuple(rank_curve(mds, targets, max_rank=max_rank, seed=seed))
    arrays = {
        "mds_embedding": mds.embedding,
        "mds_coordinates": mds.nonzero_coordinates,
        "eigenvalues": mds.eigenvalues,
        "rank": np.array([c["rank"] for c in curve], dtype=np.int64),
        "rank_paper_stress": np.array([c["paper"] for c in curve]),
    }
    if refined is not None:
        arrays["refined_coordinates"] = refined.coordinates
    return FittedMDS(
        mds=mds,
        refined=refined,
        low_rank=mds.truncate(min(int(low_rank), mds.n_components)),
        rank_curve=curve,
        summary=_summary(mds),
        arrays=arrays,
    )


def _summary(mds: MDSResult) -> dict[str, Any]:
    """The summary's MDS block; on a partial spectrum the effective ranks say so instead of
    warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ranks = effective_ranks(mds)
    return {
        **field_record(mds, ("n_components", "model_dim", "solver")),
        "eigenvalues": mds.eigenvalues[: min(64, len(mds.eigenvalues))].tolist(),
        "explained_variance_ratio": mds.explained_variance_ratio[:16].tolist(),
        "tie_groups": [list(g) for g in mds.tie_groups],
        "effective_rank": ranks,
        "spectrum_complete": bool(
            np.clip(mds.eigenvalues, 0, None).sum() >= (1 - 1e-9) * mds.total_variance
        ),
    }


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
