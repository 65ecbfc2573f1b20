"""The pipeline config of the MDS rows only (``families=MDS_ROWS``, a rank curve to 8, no
bootstrap intervals): what the deprecated ``analyze_counts`` ran, spelled with
:func:`posgeom.analyze` and :class:`posgeom.GeometryConfig` by the tests that check the
pipeline's numbers without the baselines' rows."""

from __future__ import annotations

from typing import Any

from posgeom.pipeline.config import GeometryConfig
from posgeom.pipeline.rows import MDS_ROWS


def mds_rows(**options: Any) -> GeometryConfig:
    """``GeometryConfig(families=MDS_ROWS, max_rank=8, intervals=False)`` changed by
    ``options``."""
    return GeometryConfig(**{"families": MDS_ROWS, "max_rank": 8, "intervals": False} | options)
