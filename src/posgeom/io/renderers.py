"""Where the results find their renderers without importing them: results compute, reports
render (``tests/project/test_layers.py::test_results_import_no_renderer``).

A result asks :func:`renderer` for ``"html"`` (result -> HTML fragment: Jupyter's
``_repr_html_``) or ``"report"`` (``(folder, title)`` -> ``report.html`` in a results folder).
The module that draws them registers them when imported (:func:`register`); the package root
names it once as a *provider* (:func:`provide`), imported the first time a renderer is missing:
no module of ``pipeline/`` names the reports, ``import posgeom`` stays light, and a renderer
registered by hand is used as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["RENDERERS", "provide", "register", "renderer"]

#: kind ("html", "report") -> the function that draws it
RENDERERS: dict[str, Callable[..., Any]] = {}
_PROVIDERS: list[str] = []  # modules that register renderers when imported, in order


def provide(module: str) -> None:
    """Name ``module`` (a dotted name) as one that registers renderers when it is imported: it
    is imported when a renderer is first asked for and missing (the package root names
    :mod:`posgeom.reports`)."""
    if module not in _PROVIDERS:
        _PROVIDERS.append(module)


def register(kind: str, draw: Callable[..., Any]) -> None:
    """Draw results of ``kind`` with ``draw`` (called by a provider when it is imported)."""
    RENDERERS[kind] = draw


def renderer(kind: str) -> Callable[..., Any] | None:
    """The function that draws ``kind``, the providers imported first when none is registered
    yet; None when no provider registers it."""
    if kind not in RENDERERS:
        for module in _PROVIDERS:
            importlib.import_module(module)
    return RENDERERS.get(kind)
