"""Geometry in, encodings out: Algorithm 1 (classical MDS), rank, refinement."""

from posgeom.embed.mds import MDSResult, classical_mds
from posgeom.embed.rank import LowRankFactors, effective_rank, effective_ranks, low_rank_factors
from posgeom.embed.refine import RefinedEmbedding, smacof_refine

__all__ = [
    "LowRankFactors",
    "MDSResult",
    "RefinedEmbedding",
    "classical_mds",
    "effective_rank",
    "effective_ranks",
    "low_rank_factors",
    "smacof_refine",
]
