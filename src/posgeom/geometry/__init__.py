"""Counts in, distances out: positional distributions and the distances between them."""

from posgeom.geometry.distributions import PositionalDistributions, positional_distributions
from posgeom.geometry.divergences import (
    bhattacharyya_coefficients,
    fisher_rao_distances,
    hellinger_distances,
)

__all__ = [
    "PositionalDistributions",
    "bhattacharyya_coefficients",
    "fisher_rao_distances",
    "hellinger_distances",
    "positional_distributions",
]
