"""The main job, typed and run once: :class:`~posgeom.pipeline.config.GeometryConfig` (every
option of the geometry pipeline, declared once)."""

from posgeom.pipeline.config import DEFAULT_MODEL_DIM, GeometryConfig

__all__ = ["DEFAULT_MODEL_DIM", "GeometryConfig"]
