"""Moved to :mod:`posgeom.pipeline.intervals` (a stage of the main job): this name is that module,
for the code that imports it from here."""

import sys

from posgeom.pipeline import intervals

sys.modules[__name__] = intervals
