"""Deprecated name (one release) of :mod:`posgeom.pipeline.scale` (a stage of the main job): importing
it warns once (:mod:`posgeom.analysis`) and gives that module itself, the same object in
``sys.modules``."""

import sys

from posgeom._errors import warn_moved_module
from posgeom.pipeline import scale

warn_moved_module(__name__, "posgeom.pipeline.scale")
sys.modules[__name__] = scale
