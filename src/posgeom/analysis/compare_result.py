"""Deprecated module: the result of a comparison is :class:`posgeom.pipeline.result.GeometryResult`
(``ComparisonResult`` is its old name); the stationarity diagnostic is in
:mod:`posgeom.pipeline.stationarity`."""

from posgeom.pipeline.result import GeometryResult
from posgeom.pipeline.stationarity import StationarityResult, stationarity

ComparisonResult = GeometryResult

__all__ = ["ComparisonResult", "StationarityResult", "stationarity"]
