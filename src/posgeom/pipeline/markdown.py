"""Markdown tables: the one renderer of score rows, rank curves and per-layer rows.

Tables are described by columns ``(key, header, format)`` (:mod:`posgeom.pipeline.schema`); a
column whose key no row has is left out, so the same renderer serves ``run`` (no description),
``compare`` and ``analyze-model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from posgeom.pipeline.schema import Column, rank_columns, score_columns, with_interval_text

__all__ = ["PLUGIN_HEADING", "cell", "markdown_table", "plugin_lines", "rank_table", "score_table"]


def cell(value: Any, spec: str) -> str:
    """One table cell's text: ``n/a`` for a missing or non-finite number (stress-1 of NoPE is
    undefined; its JSON files hold null), the same in the terminal, tables and reports."""
    if value is None:
        return "n/a"
    if spec == "s":
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if x != x or x in (float("inf"), float("-inf")):
        return "n/a"
    if spec == "%":
        return f"{100 * x:.1f}%"
    if spec == "d":
        return f"{round(x)}"
    return format(x, spec)


def _present(rows: Sequence[Mapping[str, Any]], columns: Iterable[Column]) -> list[Column]:
    return [c for c in columns if any(c[0] in r for r in rows)]


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Iterable[Column]) -> list[str]:
    """Markdown lines (header and rule included) of ``rows`` in ``columns``; text left, numbers
    right-aligned."""
    cols = _present(rows, columns)
    lines = [
        "| " + " | ".join(h for _, h, _ in cols) + " |",
        "|" + "|".join("---" if f == "s" else "---:" for _, _, f in cols) + "|",
    ]
    for r in rows:
        cells = (cell(r.get(k), f).replace("|", "\\|") for k, _, f in cols)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def score_table(scores: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines of score rows: a list of rows with ``encoding``, or ``{name: scores}``."""
    if isinstance(scores, Mapping):
        rows = [{"encoding": name, **s} for name, s in scores.items()]
    else:
        rows = list(scores)
    return markdown_table(with_interval_text(rows), score_columns())


PLUGIN_HEADING = (
    "Against the plug-in geometry (the paper's estimator, full vocabulary: another target than "
    "the verdict's):"
)


def plugin_lines(
    scores: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
) -> list[str]:
    """The block of plug-in scores shown beside an estimate's (a blank line, the heading that
    labels them as another target, the table); empty without any. ``scores``: rows with
    ``encoding``, or ``{name: scores}``."""
    from posgeom.estimators._pipeline import PLUGIN_COLUMNS

    if isinstance(scores, Mapping):
        rows = [{"encoding": name, **s} for name, s in scores.items()]
    else:
        rows = list(scores)
    if not rows:
        return []
    return ["", PLUGIN_HEADING, "", *markdown_table(rows, PLUGIN_COLUMNS)]


def rank_table(curve: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines of a rank curve (:func:`posgeom.pipeline.schema.rank_columns`)."""
    return markdown_table(curve, rank_columns())
