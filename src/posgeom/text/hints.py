"""Hints printed beside a verdict: position 0 standing apart when special tokens were
counted."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["position0_hint", "special_token_hint"]


def special_token_hint(report: Any) -> str | None:
    """The hint "rerun with --no-special" (:func:`position0_hint`) of a result's
    :class:`~posgeom.text.report_input.ReportInput` (its ``hellinger`` array; its summary's
    ``corpus.options.include_special``) or of a results folder's
    :class:`~posgeom.reports.view.ResultView` (its settings' ``special tokens``)."""
    d = (getattr(report, "arrays", None) or {}).get("hellinger")
    summary = getattr(report, "summary", None)
    if isinstance(summary, dict):
        counting = (summary.get("corpus") or {}).get("options") or {}
        counted = bool(counting.get("include_special", False))
    else:
        counted = (getattr(report, "settings", None) or {}).get("special tokens") == "counted"
    return None if d is None else position0_hint(d, counted=counted)


def position0_hint(d: Any, *, counted: bool) -> str | None:
    """The hint "rerun with --no-special" when special tokens were ``counted`` and position 0 of
    the ``(n, n)`` distances ``d`` is at the largest distance from every other position
    (``min_j D[0, j] >= 0.99 max D``) while the others are not (their median mean distance is
    under 0.95 max D): a ``[CLS]`` or BOS token, the same in every sequence and nowhere else,
    makes position 0 an outlier in every map."""
    d = np.asarray(d, dtype=np.float64)
    if not counted or d.ndim != 2 or d.shape[0] < 4:
        return None
    top = float(d.max())
    means = (d.sum(axis=1) - np.diag(d)) / (d.shape[0] - 1)
    if not (top > 0 and d[0, 1:].min() >= 0.99 * top and np.median(means[1:]) < 0.95 * top):
        return None
    return "position 0 stands apart (a [CLS] or BOS token?): rerun with --no-special"
