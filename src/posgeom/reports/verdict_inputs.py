"""Deprecated name (one release) of :mod:`posgeom.pipeline.verdict_inputs` (a result's text is computed
with it, below the reports): importing it warns once (:func:`posgeom._errors.warn_moved_module`)
and gives that module itself, the same object in ``sys.modules``."""

import sys

from posgeom._errors import warn_moved_module
from posgeom.pipeline import verdict_inputs

warn_moved_module(__name__, "posgeom.pipeline.verdict_inputs")
sys.modules[__name__] = verdict_inputs
