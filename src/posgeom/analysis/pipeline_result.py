"""Deprecated module: the result of the pipeline is :class:`posgeom.pipeline.result.GeometryResult`
(``PipelineResult`` is its old name)."""

from posgeom.pipeline.markdown import sampled_note
from posgeom.pipeline.result import GeometryResult

PipelineResult = GeometryResult

__all__ = ["PipelineResult", "sampled_note"]
