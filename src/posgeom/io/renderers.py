"""Where the results find their renderers without importing them: results compute, reports
render (``tests/project/test_layers.py::test_results_import_no_renderer``).

A result (:class:`~posgeom.pipeline.result.GeometryResult`) asks :func:`renderer` for
``"html"`` (result -> HTML fragment: Jupyter's ``_repr_html_``) or ``"report"`` (``(folder,
title)`` -> ``report.html`` drawn into a results folder: ``save(report=True)``). The module that
draws them registers them when it is imported (:func:`register`; :mod:`posgeom.reports` does).

So that a result displays however it was reached (``posgeom.analyze``,
``posgeom.pipeline.job.analyze``) and without the user importing the
reports first, the module that registers them is named once as a *provider* (:func:`provide`)
by the package root, ``posgeom/__init__``: the composition root, which runs before any
submodule and is the one place allowed to know every layer. :func:`renderer` imports the
providers the first time a renderer is missing. So no module of ``pipeline/``
names the reports (``test_results_name_no_renderer``), ``import posgeom`` stays light (the
reports and matplotlib load when something is first drawn), and a renderer registered by hand
(a test's, another front end's) is used as it is.
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
