"""What a result hands to its text and its report, built once: :class:`ReportInput`.

A result of the geometry pipeline builds one when it is made, and the HTML report
(:func:`posgeom.reports.view.view_of`) reads its fields: no method of the result, no registry,
is called back to draw it. Imports only the standard library at top level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReportInput", "render_report"]


@dataclass(frozen=True, eq=False)
class ReportInput:
    """``kind``: the report's kind (``"compare"`` or ``"run"``, :mod:`posgeom.reports.view`);
    ``title``; ``summary``: the result's JSON summary, ``verdict`` included (read it, do not
    change it); ``arrays``: those of ``arrays.npz`` (``hellinger`` ``(n, n)``, ``totals``
    ``(n,)``, ...); ``markdown``: the result's text (``table.md`` / ``comparison.md``)."""

    kind: str
    title: str
    summary: dict[str, Any]
    arrays: dict[str, Any]
    markdown: str = ""


def render_report(
    kind: str, title: str, summary: dict[str, Any], arrays: dict[str, Any], result: Any
) -> ReportInput:
    """The :class:`ReportInput` of a geometry result: ``summary`` (without its verdict) completed
    with the ``verdict`` block (:func:`~posgeom.text.verdict.verdict_block`, its last key) and
    the text (:func:`~posgeom.text.markdown.result_markdown` of ``result`` and that summary)."""
    from posgeom.text.markdown import result_markdown
    from posgeom.text.verdict import verdict_block

    full = {**summary, "verdict": verdict_block(kind, summary)}
    return ReportInput(kind, title, full, arrays, result_markdown(result, full))
