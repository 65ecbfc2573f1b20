"""A result type's JSON-ready record: its fields (or named attributes) in order, arrays and tuples
as lists. Below every folder: the results of corpus, geometry, scores, encodings and the
intervals build their ``as_dict`` / ``summary`` with it; ``io.jsonfiles.json_text`` writes them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

import numpy as np

__all__ = ["FieldRecord", "field_record"]


def field_record(obj: Any, names: Iterable[str] | None = None) -> dict[str, Any]:
    """``{name: obj.name}`` over ``names`` in their order (default: ``obj``'s dataclass fields in
    declaration order), arrays and tuples as lists, every other value as it is: the JSON-ready
    record (``as_dict``) of a result type, its keys in the order its file shows them."""
    keys = [f.name for f in fields(obj)] if names is None else names
    return {k: _listed(getattr(obj, k)) for k in keys}


class FieldRecord:
    """Mixed into a result dataclass whose JSON record is its fields in order:
    ``as_dict()`` is :func:`field_record` of it."""

    def as_dict(self) -> dict[str, Any]:
        return field_record(self)


def _listed(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value.tolist() if isinstance(value, np.ndarray) else value
