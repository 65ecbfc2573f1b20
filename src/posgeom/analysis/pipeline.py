"""Deprecated: :func:`analyze_counts`, the geometry pipeline with the MDS rows only.

It is :func:`posgeom.pipeline.job` (one release more under this name) scoring the MDS
encoding (``"mds"``, and ``"mds+smacof"`` when ``refine``) and the given ``encodings``, with a
rank curve of ``max_rank = 8``; it returns that :class:`~posgeom.pipeline.result.GeometryResult`
(``PipelineResult`` is its old name). Use ``posgeom.analyze(counts, config)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from posgeom._errors import PosgeomDeprecationWarning
from posgeom.pipeline.config import (
    BASELINES,
    DEFAULT_MODEL_DIM,
    GeometryConfig,
    config_fields,
    takes_geometry_config,
)
from posgeom.pipeline.job import analyze
from posgeom.pipeline.markdown import score_table
from posgeom.pipeline.result import GeometryResult
from posgeom.pipeline.rows import MDS_ROWS
from posgeom.pipeline.scale import (
    SHEPARD_PAIRS,
    pair_distances,
    rank_curve,
    score_encoding,
    shepard_pairs,
)

__all__ = [
    "DEFAULT_MODEL_DIM",
    "SHEPARD_PAIRS",
    "PipelineResult",
    "analyze_counts",
    "pair_distances",
    "rank_curve",
    "score_encoding",
    "score_table",
    "shepard_pairs",
]

PipelineResult = GeometryResult  # the old name of the one result type
BASELINE_FIELDS = tuple(f.name for f in config_fields(BASELINES))


@takes_geometry_config(exclude=BASELINE_FIELDS, defaults={"max_rank": 8, "intervals": False})
def analyze_counts(
    counts: Any,
    *,
    encodings: Mapping[str, Any] | None = None,
    config: GeometryConfig,
) -> GeometryResult:
    """Deprecated: ``posgeom.analyze(counts, config, encodings=encodings)`` with the MDS rows
    only (``families=("mds", "mds+smacof")``), ``max_rank`` 8 and no bootstrap intervals
    (module docstring).

    The keyword options are the fields of :class:`~posgeom.pipeline.config.GeometryConfig`
    (every group but ``baselines``). ``encodings`` maps names to encodings (vectors, distance
    matrices or posgeom encodings) of the kept positions.
    """
    warnings.warn(
        "analyze_counts is deprecated and goes in the next release; use posgeom.analyze(counts, "
        "GeometryConfig(...)) (the same numbers, with the baselines' rows)",
        PosgeomDeprecationWarning,
        stacklevel=3,  # the caller's line (this body runs inside takes_geometry_config's wrapper)
    )
    return analyze(counts, config.replace(families=MDS_ROWS), encodings=encodings, kind="run")
