"""The one-line verdict every command that prints scores ends with (see
:func:`posgeom.reports.verdict.one_line` for the rules)."""

from __future__ import annotations

from typing import Any


def verdict_line(result: Any) -> str:
    """``verdict: ...`` for a result object (pipeline, comparison, model analysis) or for bare
    score rows (``posgeom score``: no corpus, so no noise floor)."""
    from posgeom.reports.verdict import one_line
    from posgeom.reports.view import ResultView, view_of

    if isinstance(result, list):
        return one_line(ResultView("score", "scores", rows=result))
    return one_line(view_of(result))
