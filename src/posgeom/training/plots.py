"""Figures of experiment grids and of single run folders (matplotlib, Agg backend, 120 dpi)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.reports.canvas import pyplot
from posgeom.training.runfiles import read_log

__all__ = ["plot_run_logs", "plot_sweep"]


def _epoch_axes(axes: Sequence[Any], titles: Sequence[str]) -> None:
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)


def _save(plt: Any, fig: Any, path: Path, folder: Any = None) -> Path:
    """Save ``fig`` as a PNG at ``path`` atomically (recorded in the work ``folder`` if given)."""
    from posgeom.io._atomic import atomic_path

    fig.tight_layout()
    with folder.atomic(path.name) if folder is not None else atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return path


def plot_sweep(summary: dict[str, Any], output: Any) -> list[Path]:
    """``accuracy_vs_stress.png`` (both stress kinds) and ``curves.png`` (per-epoch tracking) in
    ``output``: a folder, or an experiment's :class:`~posgeom.io.workfolders.WorkFolder` (the
    figures are then recorded in it)."""
    plt = pyplot()
    folder = output if hasattr(output, "atomic") else None
    out = folder.path if folder is not None else Path(output)
    rows = summary["per_encoding"]
    paths = []
    if "spearman_accuracy_vs_stress" in summary:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, kind, logx in ((axes[0], "paper", True), (axes[1], "scale_optimal", False)):
            for enc, r in rows.items():
                x = np.mean(r[f"stress_{kind}"])
                ax.errorbar(x, r["accuracy_mean"], yerr=r["accuracy_sd"], fmt="o", capsize=3)
                ax.annotate(
                    enc,
                    (x, r["accuracy_mean"]),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=8,
                )
            c = summary["spearman_accuracy_vs_stress"][kind]["encoding_means"]
            ax.set_title(
                f"{kind} stress: Spearman rho = {c['rho']:.2f} "
                f"[{c['ci_low']:.2f}, {c['ci_high']:.2f}], p = {c['p_value']:.2f}",
                fontsize=9,
            )
            ax.set_xlabel(f"{kind} stress vs SST-2 Hellinger geometry (final epoch)")
            ax.set_ylabel("validation accuracy (mean ± sd over seeds)")
            if logx:
                ax.set_xscale("symlog", linthresh=1e-3)
            ax.grid(alpha=0.3)
        paths.append(_save(plt, fig, out / "accuracy_vs_stress.png", folder))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for enc, r in rows.items():
        curves = r["curves"]
        ep = [h["epoch"] for h in curves[0]]
        for ax, key in zip(axes, ("eval_accuracy", "separation", "stress"), strict=True):
            vals = np.array(
                [
                    [h[key]["scale_optimal"] if key == "stress" else h[key] for h in c]
                    for c in curves
                ]
            )
            ax.plot(ep, vals.mean(0), marker=".", label=enc)
    _epoch_axes(
        axes, ("validation accuracy", "separation margin min ||p_i - p_j||", "scale-optimal stress")
    )
    axes[1].set_yscale("symlog", linthresh=1e-2)
    axes[0].legend(fontsize=7)
    paths.append(_save(plt, fig, out / "curves.png", folder))
    return paths


def plot_run_logs(
    runs: dict[str, str | os.PathLike], path: str | os.PathLike, *, title: str = ""
) -> Path:
    """One PNG with per-epoch loss, eval accuracy, separation margin and stresses of run folders.

    ``runs`` maps a label to a :func:`train` output folder (its ``log.jsonl`` is read).
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for label, folder in runs.items():
        recs = read_log(folder)
        ep = [r["epoch"] for r in recs]
        for ax, key in zip(axes, ("eval_loss", "eval_accuracy", "separation"), strict=False):
            ax.plot(ep, [r[key] for r in recs], marker=".", label=label)
        axes[3].plot(
            ep,
            [r["stress"]["scale_optimal"] for r in recs],
            marker=".",
            label=f"{label} (scale-optimal)",
        )
        axes[3].plot(
            ep, [r["stress"]["paper"] for r in recs], ls="--", marker=".", label=f"{label} (paper)"
        )
    _epoch_axes(axes, ("eval loss", "eval accuracy", "separation min ||p_i - p_j||", "stress vs D"))
    axes[2].set_ylim(bottom=0)
    axes[3].set_yscale("log")
    axes[3].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return _save(plt, fig, out)
