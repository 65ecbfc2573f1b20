"""Compatibility module: the trainer lives in :mod:`posgeom.experiments.training`.

``from posgeom.experiments.train import train, TrainConfig, ...`` keeps working (every public name
of the package is re-exported); new code imports from :mod:`posgeom.experiments.training` (its
docstring describes the layout).
"""

from __future__ import annotations

from posgeom.experiments.training import *  # noqa: F403
from posgeom.experiments.training import __all__ as __all__
