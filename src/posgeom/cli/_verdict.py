"""The one-line verdict of ``posgeom score`` (bare score rows: no corpus, so no noise floor).

Commands with a result object print the verdict their result's summary stores (the last line of
its table); see :func:`posgeom.reports.verdict.one_line` for the rules and
:mod:`posgeom.reports.verdict_inputs` for what it reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def verdict_line(rows: Mapping[str, Mapping[str, Any]], *, estimator: str | None = None) -> str:
    """``verdict: ...`` for score rows ``{encoding: scores}`` (``estimator``: the target's, when
    known)."""
    from posgeom.reports.verdict import one_line
    from posgeom.reports.verdict_inputs import verdict_inputs

    summary = {"scores": dict(rows), "estimator": {"estimator": estimator} if estimator else {}}
    return one_line(verdict_inputs("score", summary))


def print_hints(result: Any) -> None:
    """Print ``hint: ...`` lines after a command's verdict (rerun with ``--no-special`` when a
    ``[CLS]``-like position 0 stands apart: :func:`posgeom.reports.verdict.special_token_hint`)."""
    from posgeom.reports.verdict import special_token_hint
    from posgeom.reports.view import view_of

    hint = special_token_hint(view_of(result))
    if hint:
        print(f"hint: {hint}")
