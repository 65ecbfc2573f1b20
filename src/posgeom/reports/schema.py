"""Deprecated name (one release) of :mod:`posgeom.pipeline.schema` (a result's text is computed
with it, below the reports): importing it warns once (:func:`posgeom._errors.warn_moved_module`)
and gives that module itself, the same object in ``sys.modules``."""

import sys

from posgeom._errors import warn_moved_module
from posgeom.pipeline import schema

warn_moved_module(__name__, "posgeom.pipeline.schema")
sys.modules[__name__] = schema
