"""Deprecated names (one release): ``posgeom.experiments.training`` is :mod:`posgeom.training`
and ``posgeom.experiments.reproduce`` is :mod:`posgeom.reproduction`.

Importing an old name (a submodule included, e.g. ``posgeom.experiments.training.config``) warns
once with a :class:`~posgeom._errors.PosgeomDeprecationWarning` and gives the new module itself
(the same object in ``sys.modules``, so classes, ``isinstance`` checks and monkeypatching agree).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

from posgeom._errors import warn_moved_module

#: old package name -> new package name
MOVED = {
    "posgeom.experiments.training": "posgeom.training",
    "posgeom.experiments.reproduce": "posgeom.reproduction",
}

__all__ = ["reproduce"]


def _new_name(fullname: str) -> str | None:
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _MovedLoader(importlib.abc.Loader):
    """Loads an old name as the module of its new name (no second copy)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = _new_name(spec.name)
        warn_moved_module(spec.name, new)  # the importing line (the import system's skipped)
        module = importlib.import_module(new)
        self._spec = module.__spec__  # the import system sets the old spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the new module is already imported): its own spec back."""
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED` (and of their submodules)."""

    def find_spec(self, fullname, path=None, target=None):
        new = _new_name(fullname)
        if new is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _MovedLoader())
        spec.submodule_search_locations = getattr(
            importlib.util.find_spec(new), "submodule_search_locations", None
        )
        return spec


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())


def __getattr__(name: str):
    if name == "reproduce":
        from posgeom.reproduction import reproduce

        return reproduce
    raise AttributeError(f"module 'posgeom.experiments' has no attribute {name!r}")
