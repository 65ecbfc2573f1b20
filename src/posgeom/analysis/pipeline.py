"""Deprecated module (one release): the pipeline is :mod:`posgeom.pipeline` (``posgeom.analyze``,
``GeometryConfig``, ``GeometryResult``). Importing it warns once (:mod:`posgeom.analysis`) and
gives the old names: the deprecated :func:`~posgeom.pipeline.deprecated.analyze_counts` (which
warns again at each call) and ``PipelineResult``, and the scorer's helpers from
:mod:`posgeom.pipeline.scale` and :mod:`posgeom.pipeline.markdown`."""

from posgeom._errors import warn_moved_module
from posgeom.pipeline.config import DEFAULT_MODEL_DIM
from posgeom.pipeline.deprecated import PipelineResult, analyze_counts
from posgeom.pipeline.markdown import score_table
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

warn_moved_module(__name__, "posgeom.pipeline (posgeom.analyze, GeometryConfig)")
