"""What a result hands to its text and its report, built once: :class:`ReportInput`.

A result of the geometry pipeline builds one :class:`ReportInput` when it is made (its JSON
summary with the verdict and its inputs, the arrays of ``arrays.npz``, its text) and the text
(``posgeom.text``) and the HTML report (:func:`posgeom.reports.view.view_of`) read its fields:
no method of the result, no registry, is called back to draw it.

This module imports only the standard library at top level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReportInput"]


@dataclass(frozen=True, eq=False)
class ReportInput:
    """The report's input (module docstring).

    ``kind``: the report's kind (``"compare"`` or ``"run"``, :mod:`posgeom.reports.view`);
    ``title``: its title; ``summary``: the result's JSON summary (``verdict`` included; read
    it, do not change it: the result's ``summary()`` hands out copies); ``arrays``: the arrays
    of ``arrays.npz`` (``hellinger`` ``(n, n)``, ``totals`` ``(n,)``, ...); ``markdown``: the
    result's text (``table.md`` / ``comparison.md``, what the command prints), rendered once.
    """

    kind: str
    title: str
    summary: dict[str, Any]
    arrays: dict[str, Any]
    markdown: str = ""
