"""Moved to :mod:`posgeom.pipeline.markdown` (a result's text is computed with it, below the
reports): this name is that module, for the code that imports it from here."""

import sys

from posgeom.pipeline import markdown

sys.modules[__name__] = markdown
