"""Deprecated module (one release): the result of a comparison is
:class:`posgeom.pipeline.result.GeometryResult` (``ComparisonResult`` is its old name); the
stationarity diagnostic is in :mod:`posgeom.pipeline.stationarity`. Importing it warns once
(:mod:`posgeom.analysis`)."""

from posgeom._errors import warn_moved_module
from posgeom.pipeline.deprecated import ComparisonResult
from posgeom.pipeline.stationarity import StationarityResult, stationarity

__all__ = ["ComparisonResult", "StationarityResult", "stationarity"]

warn_moved_module(__name__, "posgeom.pipeline.result (GeometryResult)")
