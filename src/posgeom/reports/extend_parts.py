"""What a report shows of an ``extend`` results folder, from its ``summary.json`` alone: the
verdict lines the command printed, the ranked table under its one named rule
(:data:`RANK_COLUMNS`, a part of ``table.md``'s :data:`EXTENSION_COLUMNS`), the measured table
(:data:`MEASURE_COLUMNS`) and lag stress against measured loss (:func:`score_vs_loss`). The
Markdown of ``extend`` (:mod:`posgeom.extension.markdown`) reads the same column lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "EXTENSION_COLUMNS",
    "MEASURE_COLUMNS",
    "RANK_COLUMNS",
    "extend_figure_specs",
    "extend_parts",
    "extend_settings",
    "measured_key",
    "ranked_columns",
    "score_vs_loss",
]

MEASURE_COLUMNS = (
    ("name", "strategy", "s"),
    ("within_loss", "mean loss within L0", ".4f"),
    ("beyond_loss", "mean loss beyond L0", ".4f"),
    ("beyond_perplexity", "perplexity beyond L0", ".2f"),
    ("tokens_beyond", "tokens beyond L0", "d"),
    ("key_token_loss", "key-token loss (LongPPL)", ".4f"),
    ("passkey_logprob", "passkey log p", ".3f"),
    ("passkey_retrieved", "passkey retrieved", ".0f"),
    ("windows", "windows", "d"),
)
#: the columns of ``table.md``'s ranked table (``posgeom extend``'s)
EXTENSION_COLUMNS = (
    ("rank", "rank", "d"),
    ("name", "strategy", "s"),
    ("predicted", "ranking predictor (larger = better)", ".4g"),
    ("model_aware", "model-aware (-score)", ".4g"),
    ("scale_optimal", "lag stress (scale-optimal)", ".4g"),
    ("scale_optimal_interval", "95% interval", "s"),
    ("paper", "lag stress (paper)", ".4g"),
    ("violation_rate", "violation rate", ".3f"),
    ("p_first", "P(first)", ".2f"),
    ("unseen_phase_fraction", "unseen phases", ".3f"),
    ("unseen_planes", "unseen planes", "d"),
    ("position_scale_optimal", "position stress", ".4g"),
    ("rope_type", "rope_type", "s"),
)
_NOT_IN_REPORT = (
    "model_aware",
    "paper",
    "violation_rate",
    "unseen_planes",
    "position_scale_optimal",
)
_KEPT = [c for c in EXTENSION_COLUMNS if c[0] not in _NOT_IN_REPORT]
#: the report's ranked table: :data:`EXTENSION_COLUMNS` less ``_NOT_IN_REPORT``, with the measured
#: loss after the ranking predictor
RANK_COLUMNS = (*_KEPT[:3], ("measured", "measured loss", ".4f"), *_KEPT[3:])
_LOSS = {"beyond_loss": "measured loss past L0", "within_loss": "measured in-window loss"}


def measured_key(measurements: Mapping[str, Any] | None) -> str | None:
    """``"beyond_loss"`` when a strategy has a loss past ``L0``, else ``"within_loss"`` when one
    has an in-window loss, else None."""
    rows = (measurements or {}).get("strategies") or []
    keys = ("beyond_loss", "within_loss")
    return next((k for k in keys if any(r.get(k) is not None for r in rows)), None)


def ranked_columns(
    columns: Sequence[tuple[str, str, str]], ranked_by: str | None, loss: str | None = None
) -> tuple[tuple[str, str, str], ...]:
    """``columns`` with the ranking predictor's header named after ``ranked_by`` (``"<rule>
    (larger = better)"``) and the measured loss's after ``loss`` (a :func:`measured_key`)."""
    names = {"predicted": f"{ranked_by} (larger = better)" if ranked_by else None}
    names["measured"] = _LOSS[loss] if loss else None
    return tuple((k, names.get(k) or h, f) for k, h, f in columns)


def _rank_rows(summary: Mapping[str, Any], by: str | None, key: str | None) -> list[dict]:
    values = (summary.get("predictors") or {}).get(by) or {}
    loss = {
        r["name"]: r.get(key) for r in (summary.get("measurements") or {}).get("strategies", [])
    }
    rows = []
    for s in summary.get("strategies", []):
        sc = s.get("scores") or {}
        ci = sc.get("scale_optimal_ci")
        rows.append(
            {
                "rank": s.get("rank"),
                "name": s.get("name"),
                "predicted": values.get(s.get("name")),
                "measured": loss.get(s.get("name")) if key else None,
                "scale_optimal": sc.get("scale_optimal"),
                "scale_optimal_interval": f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else None,
                "p_first": s.get("p_first"),
                "unseen_phase_fraction": s.get("unseen_phase_fraction"),
                "rope_type": (s.get("rope_parameters") or {}).get("rope_type"),
            }
        )
    return rows


def extend_parts(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``words`` (the verdict lines) and ``sections`` (``(heading, rows, columns)``) of an
    extend summary (module docstring)."""
    by = (summary.get("recommendation") or {}).get("ranked_by")
    m = summary.get("measurements") or {}
    key = measured_key(m)
    sections = [
        (
            f"Ranked by {summary.get('rank_by')}",
            _rank_rows(summary, by, key),
            ranked_columns(RANK_COLUMNS, by, key),
        )
    ]
    if m.get("strategies"):
        heading = f"Measured loss ({m.get('windows')} window(s) of {m.get('window_length')} tokens)"
        sections.append((heading, list(m["strategies"]), MEASURE_COLUMNS))
    return {"words": tuple(summary.get("verdict") or ()), "sections": tuple(sections)}


def extend_settings(summary: Mapping[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """An extend summary's own settings (model, lengths, lags, classes, estimator, the
    recommendation and its rule) first, then the other ``settings``."""
    counts = summary.get("lag_geometry", {}).get("counts", {})
    lags = counts.get("lags") or []
    extra = {
        "model": summary.get("model", {}).get("name"),
        "trained length L0": summary.get("trained_length"),
        "target length L": summary.get("target_length"),
        "lags": f"{len(lags)} from {lags[0]} to {lags[-1]}" if lags else None,
        "token classes": (counts.get("classes") or {}).get("kind"),
        "estimator": summary.get("estimator"),
        "recommended": summary.get("best"),
        "recommended by": (summary.get("recommendation") or {}).get("predictor"),
        "table ranked by": summary.get("rank_by"),
    }
    extra = {k: v for k, v in extra.items() if v is not None}
    return {**extra, **{k: v for k, v in settings.items() if k not in extra}}


def _points(summary: Mapping[str, Any]) -> tuple[list, str | None]:
    m = summary.get("measurements") or {}
    key = measured_key(m)
    if key is None:
        return [], None
    stress = {s["name"]: (s.get("scores") or {}) for s in summary.get("strategies", [])}
    pts = []
    for r in m.get("strategies", []):
        sc = stress.get(r["name"], {})
        if r.get(key) is not None and sc.get("scale_optimal") is not None:
            pts.append((r["name"], float(sc["scale_optimal"]), sc.get("scale_optimal_ci"), r[key]))
    return pts, key


def score_vs_loss(points: Sequence[tuple], key: str, recommended: str | None) -> Any:
    """Lag stress (x, with its interval) against the measured loss (y), one point per measured
    strategy; the recommended strategy is the filled square."""
    from posgeom.reports.canvas import figure

    fig = figure(6.4, 4.2)
    ax = fig.add_subplot()
    for name, x, ci, y in points:
        mine = name == recommended
        err = None if not ci else np.array([[x - ci[0]], [ci[1] - x]])
        ax.errorbar(
            x,
            y,
            xerr=err,
            fmt="s" if mine else "o",
            color="#c0392b" if mine else "#3b6fd8",
            ms=7 if mine else 5,
            capsize=2,
            lw=0.8,
        )
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("lag stress (scale-optimal; 95% half-sample interval)")
    ax.set_ylabel(_LOSS[key] + " (nats per token)")
    ax.set_title("Geometric score against measured loss (square: recommended)", fontsize=10)
    return fig


def extend_figure_specs(view: Any, summary: Mapping[str, Any]) -> Iterable[tuple[str, str, Any]]:
    """The score-vs-loss figure's ``(name, caption, thunk)`` when something was measured."""
    points, key = _points(summary)
    if len(points) < 2 or key is None:
        return
    rec = summary.get("best")
    caption = (
        f"Each measured strategy: its lag stress against its {_LOSS[key]} (lower is better on "
        "both). A rising cloud means the geometric score orders the strategies as the loss does; "
        "a flat or falling one means it does not on this model and text."
    )
    yield "score_vs_loss", caption, lambda: score_vs_loss(points, key, rec)
