"""The per-layer figure of a probe summary: the linear and MLP probe errors with their intervals
(chance dashed) and, beside them, the scale-optimal stress against the corpus (left axis, its
interval shaded when the rows have one) and the R² of position (right axis): two quantities, two
axes (matplotlib ``Figure``, no pyplot; extra ``plot``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from posgeom.reports.canvas import figure

__all__ = ["layer_figure"]


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[np.ndarray, ...] | None:
    if not rows or key not in rows[0]:
        return None
    est = np.array([r[key]["estimate"] for r in rows])
    low = np.array([r[key]["low"] for r in rows])
    high = np.array([r[key]["high"] for r in rows])
    return est, low, high


def layer_figure(summary: dict[str, Any]) -> Any:
    """The per-layer figure of one summary (matplotlib ``Figure``, no pyplot)."""
    rows = summary["layers"]
    layers = np.array([r["layer"] for r in rows])
    fig = figure(7.5, 3.4)
    ax = fig.add_subplot(1, 2, 1)
    for key, label in (("linear_mae", "linear probe"), ("mlp_mae", "MLP probe")):
        s = _series(rows, key)
        if s is not None:
            ax.errorbar(
                layers,
                s[0],
                yerr=[s[0] - s[1], s[2] - s[0]],
                marker="o",
                ms=3,
                capsize=2,
                label=label,
            )
    chance = summary.get("options", {}).get("chance_mae")
    if chance is not None:
        ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    ax.set(xlabel="layer (0 = embeddings)", ylabel="MAE (positions)", title="position probes")
    ax.legend(fontsize=8)
    bx = fig.add_subplot(1, 2, 2)  # stress and R² on their own axes (different quantities)
    if "stress_scale_optimal" in rows[0]:
        stress = [r["stress_scale_optimal"] for r in rows]
        bx.plot(layers, stress, "o-", ms=3, color="C0", label="stress vs corpus")
        low = [r.get("stress_scale_optimal_low") for r in rows]
        if all(v is not None for v in low):
            high = [r["stress_scale_optimal_high"] for r in rows]
            bx.fill_between(layers, low, high, color="C0", alpha=0.2, lw=0)
        bx.set_ylabel("scale-optimal stress (vs corpus)", color="C0")
        rx = bx.twinx()
    else:
        rx = bx
    rx.plot(layers, [r["share"] for r in rows], "s-", ms=3, color="C1", label="R² of position")
    rx.set_ylabel("R² of position", color="C1")
    bx.set(xlabel="layer (0 = embeddings)", title="geometry")
    return fig
