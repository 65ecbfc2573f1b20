"""The per-layer figure of a model analysis (matplotlib, Agg backend)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.reports.canvas import pyplot

__all__ = ["layers_figure", "plot_layers"]


def plot_layers(analysis: Any, path: str | os.PathLike, *, title: str | None = None) -> Path:
    """PNG of a :class:`~posgeom.models.result.ModelAnalysis` (:func:`layers_figure`), written
    atomically."""
    fig = layers_figure(analysis, title=title)
    path = Path(path)
    from posgeom.io._atomic import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    pyplot().close(fig)
    return path


def layers_figure(analysis: Any, *, title: str | None = None) -> Any:
    """The per-layer figure: scale-optimal stress per layer against the target (its bootstrap
    interval, the plug-in curve, the learned table's and the MDS encoding's scores as lines),
    paper stress (log) and R^2 per layer."""
    from posgeom.pipeline.rows import MDS_ROW

    sig = analysis.signal
    x = np.arange(sig.n_layers)
    fig, axes = pyplot().subplots(1, 3, figsize=(13, 3.8))
    stress = sig.stress or {}
    ax = axes[0]
    if "scale_optimal" in stress:
        label = f"layer signal (target: {analysis.target_estimator})"
        ax.plot(x, stress["scale_optimal"], "o-", label=label)
    interval = (analysis.layer_intervals or {}).get("scale_optimal")
    if interval is not None:
        ax.fill_between(x, interval.low, interval.high, alpha=0.2, color="C0", lw=0)
    plugin = (analysis.plugin_stress or {}).get("scale_optimal")
    if plugin is not None:
        ax.plot(x, plugin, "s--", c="C7", ms=4, label="layer signal (plug-in)")
    against = f"target: {analysis.target_estimator}"  # the same D as the layer signal
    table = analysis.geometry.scores.get("learned")
    if table is not None:
        ax.axhline(
            table["scale_optimal"], ls="--", c="C1", label=f"learned position table ({against})"
        )
    mds = analysis.geometry.scores.get(MDS_ROW)
    if mds is not None:
        ax.axhline(mds["scale_optimal"], ls=":", c="C2", label=f"MDS encoding of D ({against})")
    ax.set_title("scale-optimal stress (lower = closer to D)")
    ax.legend(fontsize=8)
    ax = axes[1]
    if "paper" in stress:
        ax.semilogy(x, stress["paper"], "o-", c="C3")
    ax.set_title("paper stress (no rescaling, log scale)")
    ax = axes[2]
    ax.plot(x, sig.variance_explained, "o-", c="C4")
    ax.set_title("variance explained by position (R^2)")
    for ax in axes:
        ax.set_xticks(x)
        ax.set_xticklabels(["emb", *sig.layer_names[1:]], fontsize=8)
        ax.set_xlabel("layer")
        ax.grid(alpha=0.3)
    fig.suptitle(
        title
        or f"{_short(analysis.model_name)} on {_short(analysis.corpus_name)}, "
        f"n = {sig.n_positions}, special tokens "
        + ("counted" if analysis.options.get("include_special", True) else "excluded")
    )
    fig.tight_layout()
    return fig


def _short(name: str, parts: int = 2) -> str:
    """The last ``parts`` components of a path-like name (titles stay readable)."""
    pieces = [p for p in str(name).replace("\\", "/").split("/") if p]
    return "/".join(pieces[-parts:]) if pieces else str(name)
