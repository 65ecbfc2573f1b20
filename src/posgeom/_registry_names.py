"""Module attributes read from a registry when used, not snapshotted at import.

A name such as ``posgeom.training.ENCODINGS`` lists what a registry holds; a family registered
after the import must show in it, so the module serves the name through its ``__getattr__``
(PEP 562), which calls the registry's reader at every access."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def registry_getattr(module: str, readers: Mapping[str, Callable[[], Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves each name of ``readers`` by calling its reader;
    any other name raises :class:`AttributeError` as Python's own lookup does (naming
    ``module``)."""

    def __getattr__(name: str) -> Any:
        if name in readers:
            return readers[name]()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
