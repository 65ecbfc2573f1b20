"""Where the reports register their renderers for the results (the results import none):
``"html"``: result -> HTML fragment (Jupyter's ``_repr_html_``); ``"report"``: ``(folder,
title)`` -> ``report.html`` drawn into a results folder (``save(report=True)``). Filled by
:mod:`posgeom.reports` when it is imported (``import posgeom`` loads it with the results)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RENDERERS"]

RENDERERS: dict[str, Callable[..., Any]] = {}
