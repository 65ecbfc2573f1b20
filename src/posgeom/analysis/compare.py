"""Deprecated module (one release): the comparison is ``posgeom.analyze(counts, config,
kind="compare")`` (:mod:`posgeom.pipeline`). Importing it warns once (:mod:`posgeom.analysis`)
and gives the old names: the deprecated :func:`~posgeom.pipeline.deprecated.compare_encodings`
(which warns again at each call; its encodings are described there), ``ComparisonResult``, and
the helpers it re-exported."""

from typing import Any

from posgeom._errors import warn_moved_module
from posgeom.encodings import default_rope_head_dim, rope_heads
from posgeom.pipeline.config import comparable_encodings, default_encodings
from posgeom.pipeline.deprecated import ComparisonResult, compare_encodings
from posgeom.pipeline.rows import comparison_rows, with_baselines
from posgeom.pipeline.stationarity import StationarityResult, stationarity

__all__ = [
    "ComparisonResult",
    "StationarityResult",
    "comparable_encodings",
    "compare_encodings",
    "comparison_rows",
    "default_encodings",
    "default_rope_head_dim",
    "rope_heads",
    "stationarity",
    "with_baselines",
]


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_ENCODINGS":  # the registry read when used, not a snapshot at import
        return default_encodings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


warn_moved_module(__name__, "posgeom.pipeline (posgeom.analyze(..., kind='compare'))")
