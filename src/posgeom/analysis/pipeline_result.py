"""Deprecated module (one release): the result of the pipeline is
:class:`posgeom.pipeline.result.GeometryResult` (``PipelineResult`` is its old name). Importing
it warns once (:mod:`posgeom.analysis`)."""

from posgeom._errors import warn_moved_module
from posgeom.pipeline.deprecated import PipelineResult
from posgeom.pipeline.markdown import sampled_note

__all__ = ["PipelineResult", "sampled_note"]

warn_moved_module(__name__, "posgeom.pipeline.result (GeometryResult)")
