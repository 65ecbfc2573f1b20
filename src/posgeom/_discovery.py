"""Registries find their entries by importing every public module of their package."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

__all__ = ["import_public_modules"]


def import_public_modules(package: str, path: Iterable[str]) -> None:
    """Import every module of ``package`` (its ``__path__``) whose name has no leading ``_``,
    so that a module registering an entry (a family, an estimator, a score) is found without a
    list of names: a new one is one new file."""
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
