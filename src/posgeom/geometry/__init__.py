"""Counts in, distances out: positional distributions and the distances between them. The two
entry points of the main job: :func:`kept_positions` (the counts recognised once, ``mu_i`` and
the kept positions) and :func:`analyse_target` (the stationarity and noise floor of a target)."""

from posgeom.geometry.distributions import (
    KeptPositions,
    PositionalDistributions,
    kept_positions,
    positional_distributions,
)
from posgeom.geometry.divergences import (
    bhattacharyya_coefficients,
    fisher_rao_distances,
    hellinger_distances,
)
from posgeom.geometry.target_analysis import TargetAnalysis, analyse_target

__all__ = [
    "KeptPositions",
    "PositionalDistributions",
    "TargetAnalysis",
    "analyse_target",
    "bhattacharyya_coefficients",
    "fisher_rao_distances",
    "hellinger_distances",
    "kept_positions",
    "positional_distributions",
]
