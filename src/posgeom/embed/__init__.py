"""Geometry in, encodings out: Algorithm 1 (classical MDS), rank, refinement; the MDS family
fitted to a target in one call (:func:`fit_mds_family`: refinement, low rank, rank curve)."""

from posgeom.embed.fitted import FittedMDS, fit_mds_family
from posgeom.embed.mds import MDSResult, classical_mds
from posgeom.embed.rank import LowRankFactors, effective_rank, effective_ranks, low_rank_factors
from posgeom.embed.refine import RefinedEmbedding, smacof_refine

__all__ = [
    "FittedMDS",
    "LowRankFactors",
    "MDSResult",
    "RefinedEmbedding",
    "classical_mds",
    "effective_rank",
    "effective_ranks",
    "fit_mds_family",
    "low_rank_factors",
    "smacof_refine",
]
