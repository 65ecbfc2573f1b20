"""The one-line verdict of ``posgeom score`` (bare score rows: no corpus, so no noise floor;
rules: :func:`posgeom.text.verdict.one_line`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from posgeom._errors import printable


def verdict_line(
    rows: Mapping[str, Mapping[str, Any]], *, target: Mapping[str, Any] | None = None
) -> str:
    """``verdict: ...`` for score rows ``{encoding: scores}``; ``target``: the stored verdict
    inputs of the target's results folder when known (its ``TARGET_FIELDS`` and
    ``noise_share``), else the target is "as given" and its noise floor "not estimated"."""
    import dataclasses

    from posgeom.text.verdict import one_line
    from posgeom.text.verdict_inputs import TARGET_FIELDS, verdict_inputs

    vi = verdict_inputs("score", {"scores": dict(rows)})
    # the target's own facts: what it is and, from its folder, how much of it is above the noise
    named = {k: target[k] for k in (*TARGET_FIELDS, "noise_share") if k in (target or {})}
    return one_line(dataclasses.replace(vi, **named))


def print_hints(result: Any) -> None:
    """Print ``hint: ...`` lines after a command's verdict (rerun with ``--no-special`` when a
    ``[CLS]``-like position 0 stands apart: :func:`posgeom.text.hints.special_token_hint` of
    the result's :class:`~posgeom.text.report_input.ReportInput`)."""
    from posgeom.text.hints import special_token_hint

    hint = special_token_hint(result.report_input)
    if hint:
        print(f"hint: {printable(hint)}")
