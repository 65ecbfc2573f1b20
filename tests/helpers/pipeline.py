"""Pipeline configs the tests share: the MDS rows only (``families=MDS_ROWS``), or every default
row, each with a rank curve to 8 and no bootstrap intervals, spelled with :func:`posgeom.analyze`
and :class:`posgeom.GeometryConfig`; and the keyword-only options of a function, to check them
against a config's fields."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from posgeom.pipeline.config import GeometryConfig
from posgeom.pipeline.rows import MDS_ROWS


def keyword_options(func: Callable[..., Any], own: set[str]) -> dict[str, Any]:
    """name -> default of ``func``'s keyword-only parameters that are not in ``own``."""
    return {
        p.name: p.default
        for p in inspect.signature(func).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in own
    }


def mds_rows(**options: Any) -> GeometryConfig:
    """``GeometryConfig(families=MDS_ROWS, max_rank=8, intervals=False)`` changed by
    ``options``."""
    return GeometryConfig(**{"families": MDS_ROWS, "max_rank": 8, "intervals": False} | options)


def default_rows(**options: Any) -> GeometryConfig:
    """``GeometryConfig(max_rank=8, intervals=False)`` (every default row: the baselines and the
    MDS rows) changed by ``options``."""
    return GeometryConfig(**{"max_rank": 8, "intervals": False} | options)
