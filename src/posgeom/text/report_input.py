"""What a result hands to its text and its report, built once: :class:`ReportInput`.

A result of the geometry pipeline builds one :class:`ReportInput` when it is made (its JSON
summary with the verdict and its inputs, the arrays of ``arrays.npz``, its text) and the text
(``posgeom.text``) and the HTML report (:func:`posgeom.reports.view.view_of`) read its fields:
no method of the result, no registry, is called back to draw it.

This module imports only the standard library at top level (:func:`render_report` imports
the text's renderers when it runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReportInput", "render_report"]


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


def render_report(
    kind: str, title: str, summary: dict[str, Any], arrays: dict[str, Any], result: Any
) -> ReportInput:
    """The text of a geometry result, rendered once: ``summary`` (the result's JSON summary
    without its verdict) completed with the ``verdict`` block (:func:`~posgeom.text.verdict.
    verdict_block` of ``kind``, its last key), the Markdown text
    (:func:`~posgeom.text.markdown.result_markdown` of ``result`` and that summary), as one
    :class:`ReportInput` with ``arrays``."""
    from posgeom.text.markdown import result_markdown
    from posgeom.text.verdict import verdict_block

    full = {**summary, "verdict": verdict_block(kind, summary)}
    return ReportInput(kind, title, full, arrays, result_markdown(result, full))
