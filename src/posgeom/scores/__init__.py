"""Pure scores of an encoding against a target geometry: no corpus, no models."""

from posgeom.scores.order import (
    ViolationRate,
    monotonicity_violation_rate,
    separation_margin,
    shepard_table,
)
from posgeom.scores.stress import (
    STRESS_KINDS,
    StressScores,
    encoding_distances,
    scale_optimal_stress,
    stress,
    stress_scores,
)

__all__ = [
    "STRESS_KINDS",
    "StressScores",
    "ViolationRate",
    "encoding_distances",
    "monotonicity_violation_rate",
    "scale_optimal_stress",
    "separation_margin",
    "shepard_table",
    "stress",
    "stress_scores",
]
