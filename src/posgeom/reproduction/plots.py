"""Figures of the reproduction (matplotlib, optional)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.reproduction.settings import NEAR_ZERO

log = logging.getLogger("posgeom")


def _save(fig: Any, path: Path, **savefig: Any) -> Path:
    """Lay out ``fig``, write it to ``path`` at 110 dpi (``savefig``: more options) atomically,
    close it."""
    import matplotlib.pyplot as plt

    from posgeom.io._atomic import atomic_path

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png", **savefig)
    plt.close(fig)
    return path


def plots(results: dict[str, Any], angles: dict[str, Any], folder: Path, seed: int) -> list[Path]:
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - optional
        log.warning("matplotlib missing: no plots")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posgeom.embed.mds import classical_mds
    from posgeom.synthetic import synthetic_corpus

    files = []
    keys = [k for k in results if k != "synthetic_exact"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in keys:
        curve = results[key].rank_curve
        ax.semilogy(
            [c["rank"] for c in curve],
            [max(c["paper"], 1e-16) for c in curve],
            marker=".",
            label=key,
        )
    ax.axhline(NEAR_ZERO, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("rank r of the MDS encoding")
    ax.set_ylabel("paper stress")
    ax.set_title("Rank experiment")
    ax.legend(fontsize=8)
    files.append(_save(fig, folder / "rank_curves.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    for key in keys:
        s = results[key].stationarity
        k = np.arange(1, len(s.diagonal_mean) + 1)
        ax.plot(k, s.diagonal_mean, label=f"{key} (Toeplitz R² {s.toeplitz_r2:.2f})")
        ax.fill_between(
            k, s.diagonal_mean - s.diagonal_std, s.diagonal_mean + s.diagonal_std, alpha=0.15
        )
    ax.set_xscale("log")
    ax.set_xlabel("|i - j|")
    ax.set_ylabel("Hellinger D_ij (chord)\nmean ± sd over the diagonal |i - j|")
    ax.set_title("Stationarity: D as a function of |i - j|")
    ax.legend(fontsize=7)
    files.append(_save(fig, folder / "stationarity.png", bbox_inches="tight"))  # the labels fit

    from posgeom.corpus.counting import count_positions

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=False)
    n, vocab = angles["n"], angles["vocab"]
    for ax, kind in zip(axes, ("drifting", "three_regimes"), strict=True):
        seqs = synthetic_corpus(10_000, n, vocab, kind=kind, seed=seed)
        mds = classical_mds(count_positions(seqs, max_positions=n, vocab_size=vocab), 4)
        for c in range(4):
            ax.plot(mds.coordinates[:, c], marker=".", label=f"MDS coordinate {c + 1}")
        ax.set_title(f"{kind} (10,000 sequences)")
        ax.set_xlabel("position i")
    axes[0].legend(fontsize=7)
    files.append(_save(fig, folder / "mds_coordinates_synthetic.png"))
    return files
