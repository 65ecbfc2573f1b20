"""Pure scores of an encoding against a target geometry: no corpus, no models.

Every score is a :class:`~posgeom.scores.registry.Score` in one registry
(:func:`available`, :func:`get`, :func:`register`): a module of this package that registers one
is found on import (every public module is imported), so a new score is one file.
"""

from posgeom._discovery import import_public_modules
from posgeom.scores._encoding import encoding_distances
from posgeom.scores.order import (
    ViolationRate,
    monotonicity_violation_rate,
    separation_margin,
    shepard_table,
)
from posgeom.scores.registry import Score, available, get, register, scores
from posgeom.scores.stress import (
    STRESS_KINDS,
    StressScores,
    scale_optimal_stress,
    stress,
    stress_scores,
)

import_public_modules(__name__, __path__)  # a new module is found: one file, no list

__all__ = [
    "STRESS_KINDS",
    "Score",
    "StressScores",
    "ViolationRate",
    "available",
    "encoding_distances",
    "get",
    "monotonicity_violation_rate",
    "register",
    "scale_optimal_stress",
    "scores",
    "separation_margin",
    "shepard_table",
    "stress",
    "stress_scores",
]
