"""Deprecated name (one release) of :mod:`posgeom.pipeline.stationarity` (a stage of the main job): importing
it warns once (:mod:`posgeom.analysis`) and gives that module itself, the same object in
``sys.modules``."""

import sys

from posgeom._errors import warn_moved_module
from posgeom.pipeline import stationarity

warn_moved_module(__name__, "posgeom.pipeline.stationarity")
sys.modules[__name__] = stationarity
