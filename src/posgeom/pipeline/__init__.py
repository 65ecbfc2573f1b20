"""The main job, typed and run once: :class:`~posgeom.pipeline.config.GeometryConfig` (every
option of the geometry pipeline, declared once), :func:`~posgeom.pipeline.job.analyze` (each
stage run once) and :class:`~posgeom.pipeline.result.GeometryResult` (one result and one summary
for ``geometry``, ``run``, ``demo`` and ``compare``). The kitchen orchestrates the target
(:mod:`.target`) and the rows (:mod:`.rows`); the result's text lives in :mod:`posgeom.text`.
Names load lazily."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DEFAULT_MODEL_DIM", "GeometryConfig", "GeometryResult", "analyze"]

_EXPORTS = {
    "DEFAULT_MODEL_DIM": "posgeom.pipeline.config",
    "GeometryConfig": "posgeom.pipeline.config",
    "GeometryResult": "posgeom.pipeline.result",
    "analyze": "posgeom.pipeline.job",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'posgeom.pipeline' has no attribute {name!r}")
