"""The one-line verdict every command that prints scores ends with (see
:func:`posgeom.reports.verdict.one_line` for the rules)."""

from __future__ import annotations

from typing import Any


def verdict_line(result: Any, *, estimator: str | None = None) -> str:
    """``verdict: ...`` for a result object (pipeline, comparison, model analysis) or for bare
    score rows (``posgeom score``: no corpus, so no noise floor; ``estimator``: the target's, when
    known)."""
    from posgeom.reports.verdict import one_line
    from posgeom.reports.view import ResultView, view_of

    if isinstance(result, list):
        geometry = {"estimator": {"estimator": estimator}} if estimator else {}
        return one_line(ResultView("score", "scores", rows=result, geometry=geometry))
    return one_line(view_of(result))
