"""Pipeline configs the tests share: the MDS rows only (``families=MDS_ROWS``), or every default
row, each with a rank curve to 8 and no bootstrap intervals, spelled with :func:`posgeom.analyze`
and :class:`posgeom.GeometryConfig`."""

from __future__ import annotations

from typing import Any

from posgeom.pipeline.config import GeometryConfig
from posgeom.pipeline.rows import MDS_ROWS


def mds_rows(**options: Any) -> GeometryConfig:
    """``GeometryConfig(families=MDS_ROWS, max_rank=8, intervals=False)`` changed by
    ``options``."""
    return GeometryConfig(**{"families": MDS_ROWS, "max_rank": 8, "intervals": False} | options)


def default_rows(**options: Any) -> GeometryConfig:
    """``GeometryConfig(max_rank=8, intervals=False)`` (every default row: the baselines and the
    MDS rows) changed by ``options``."""
    return GeometryConfig(**{"max_rank": 8, "intervals": False} | options)
