"""Moved to :mod:`posgeom.pipeline.rows` (a stage of the main job): this name is that module,
for the code that imports it from here."""

import sys

from posgeom.pipeline import rows

sys.modules[__name__] = rows
