"""Moved to :mod:`posgeom.pipeline.verdict_inputs` (a result's text is computed with it, below the
reports): this name is that module, for the code that imports it from here."""

import sys

from posgeom.pipeline import verdict_inputs

sys.modules[__name__] = verdict_inputs
