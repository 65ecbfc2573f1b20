"""Figures of a results view, as matplotlib :class:`~matplotlib.figure.Figure` objects.

Every function takes plain arrays and rows (a live result and a results folder alike), never
calls pyplot (:mod:`posgeom.reports.canvas`: the figure and its SVG and PNG bytes) and names
the convention on an axis or in the title.

Conventions in the labels: ``D_ij`` is the Hellinger distance (chord: ``||sqrt mu_i - sqrt mu_j||``
in ``[0, sqrt 2]``; normalized: divided by ``sqrt 2``); ``delta_ij`` the encoding's distance;
paper stress ``sum (delta - D)^2 / sum D^2``; scale-optimal stress the same after the best
rescaling ``alpha*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom.reports.canvas import figure
from posgeom.text.schema import interval

__all__ = [
    "HEATMAP_MAX",
    "block_mean",
    "estimators",
    "heads",
    "heatmap",
    "layers",
    "mds_map",
    "rank_curve",
    "shepard",
    "spectrum",
    "stress_bars",
]

HEATMAP_MAX = 512  # larger matrices are shown as block means (and the figure says so)
RANK_LABELS = 8  # parameter labels on a rank curve (more overlap at the figure's width)
_RANGE = {"chord": "chord, in [0, √2]", "normalized": "normalized, in [0, 1]"}


def block_mean(matrix: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """``matrix`` as ``ceil(n / f)`` square blocks of ``f = ceil(n / size)`` rows: block means.

    Returns the reduced matrix and ``f`` (1: unchanged)."""
    n = matrix.shape[0]
    f = int(np.ceil(n / size))
    if f <= 1:
        return matrix, 1
    starts = np.arange(0, n, f)
    sums = np.add.reduceat(np.add.reduceat(matrix, starts, axis=0), starts, axis=1)
    widths = np.diff(np.append(starts, n)).astype(np.float64)
    return sums / np.outer(widths, widths), f


def heatmap(
    distances: np.ndarray,
    *,
    convention: str = "chord",
    totals: np.ndarray | None = None,
    trusted: np.ndarray | None = None,
    positions: np.ndarray | None = None,
    max_size: int = HEATMAP_MAX,
    block_width: int = 1,
    pairs_per_block: int | None = None,
    n_positions: int | None = None,
) -> Any:
    """The Hellinger matrix ``D`` (``(n, n)``), a samples-per-position strip above it and the
    untrusted pairs (``trusted`` False: below twice their noise floor) shaded. Above ``max_size``
    positions the matrix is shown as block means and the title says so. ``distances`` may be block
    means already (``block_width`` positions a side, each from ``pairs_per_block`` sampled pairs:
    :func:`posgeom.scores.long_context.sampled_block_means`) of ``n_positions``, for a long
    context."""
    if block_width > 1:
        d, f = np.asarray(distances, dtype=np.float64), int(block_width)
        n = int(n_positions or d.shape[0] * f)
    else:
        d, f = block_mean(np.asarray(distances, dtype=np.float64), max_size)
        n = distances.shape[0]
    fig = figure(6.4, 6.6 if totals is not None else 5.6)
    if totals is not None:
        top, ax = fig.subplots(2, 1, height_ratios=[1, 5], sharex=True)
        t = np.asarray(totals, dtype=np.float64)
        if f > 1:  # one bar per block of f positions (their mean), as in the matrix below
            starts = np.arange(0, len(t), f)
            t = np.add.reduceat(t, starts) / np.diff(np.append(starts, len(t)))
        top.bar(np.arange(len(t)), t, width=1.0, color="0.35")
        top.set_ylabel("samples T_i")
        top.set_yscale("log" if t.max() > 20 * max(t.min(), 1) else "linear")
        _few_ticks(top)  # the strip is short: more labels would overlap
        top.set_title("samples per position")
    else:
        ax = fig.subplots()
    im = ax.imshow(d, cmap="viridis", interpolation="nearest", origin="upper", aspect="auto")
    cbar = fig.colorbar(im, ax=ax, shrink=0.85)
    cbar.set_label(f"Hellinger distance D_ij ({_RANGE.get(convention, convention)})")
    if trusted is not None:
        untrusted = ~np.asarray(trusted, dtype=bool)
        np.fill_diagonal(untrusted, False)
        shade, _ = block_mean(untrusted.astype(np.float64), max_size)
        overlay = np.zeros((*shade.shape, 4))
        overlay[..., :3] = 1.0
        overlay[..., 3] = 0.55 * shade
        ax.imshow(overlay, interpolation="nearest", origin="upper", aspect="auto")
        share = untrusted.sum() / max(1, n * (n - 1))
        ax.set_xlabel(f"position j (pale: untrusted pair, {100 * share:.0f}% of pairs)")
    else:
        ax.set_xlabel("position j")
    ax.set_ylabel("position i")
    _position_ticks(ax, positions, n, f)
    title = f"Hellinger distances, n = {n}"
    if f > 1:
        title += f"\ndownsampled: {d.shape[0]} x {d.shape[0]} block means of {f} x {f} positions"
        if pairs_per_block:
            title += f" ({pairs_per_block} sampled pairs each)"
    ax.set_title(title)
    return fig


def _few_ticks(ax: Any) -> None:
    """At most three labelled ticks on the y axis of a short strip (no minor labels)."""
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    if ax.get_yscale() == "log":
        ax.yaxis.set_major_locator(LogLocator(numticks=3))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_major_locator(MaxNLocator(3))


def _position_ticks(ax: Any, positions: np.ndarray | None, n: int, f: int) -> None:
    if positions is None:
        if f > 1:
            ticks = np.linspace(0, (n - 1) / f, 5)
            ax.set_xticks(ticks, [str(round(t * f)) for t in ticks])
            ax.set_yticks(ticks, [str(round(t * f)) for t in ticks])
        return
    pos = np.asarray(positions)
    ticks = np.unique(np.linspace(0, len(pos) - 1, min(len(pos), 6)).round().astype(int))
    ax.set_xticks(ticks / f, [str(pos[t]) for t in ticks])
    ax.set_yticks(ticks / f, [str(pos[t]) for t in ticks])


def spectrum(eigenvalues: np.ndarray, ranks: Mapping[str, Any] | None = None) -> Any:
    """Eigenvalues ``lambda_k`` of ``B = -1/2 J (D∘D) J`` (log scale) with the effective ranks
    (``tolerance``, ``energy``, ``entropy``, ``participation``) as vertical marks."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    k = np.arange(1, len(lam) + 1)
    fig = figure(6.4, 3.8)
    ax = fig.subplots()
    positive = lam > 0
    ax.semilogy(k[positive], lam[positive], "o-", ms=3, label="eigenvalue λ_k")
    for i, (name, value) in enumerate((ranks or {}).items()):
        if value is None or not np.isfinite(value):
            continue
        ax.axvline(float(value), ls="--", c=f"C{i + 1}", label=f"{name} rank {value:.3g}")
    ax.set_xlabel("component k")
    ax.set_ylabel("λ_k of B = -½ J (D∘D) J (log)")
    ax.set_title("MDS eigen-spectrum and effective ranks")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def mds_map(coordinates: np.ndarray, positions: np.ndarray | None = None, *, dims: int = 2) -> Any:
    """The first ``dims`` (2 or 3) MDS coordinates of the positions, coloured by index."""
    x = np.asarray(coordinates, dtype=np.float64)
    pos = np.arange(len(x)) if positions is None else np.asarray(positions)
    x = np.pad(x, ((0, 0), (0, max(0, dims - x.shape[1]))))
    many = len(x) > 1000  # thousands of markers: a raster inside the SVG keeps the file small
    fig = figure(5.6, 4.6)
    if dims == 3:
        ax = fig.add_subplot(projection="3d")
        sc = ax.scatter(x[:, 0], x[:, 1], x[:, 2], c=pos, cmap="plasma", s=14, rasterized=many)
        ax.plot(x[:, 0], x[:, 1], x[:, 2], c="0.6", lw=0.6, rasterized=many)
        ax.set_zlabel("MDS 3")
    else:
        ax = fig.subplots()
        ax.plot(x[:, 0], x[:, 1], c="0.6", lw=0.6, zorder=1, rasterized=many)
        sc = ax.scatter(x[:, 0], x[:, 1], c=pos, cmap="plasma", s=16, zorder=2, rasterized=many)
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
    ax.set_xlabel("MDS 1")
    ax.set_ylabel("MDS 2")
    fig.colorbar(sc, ax=ax, shrink=0.8).set_label("position i")
    title = f"positions in the MDS encoding ({dims}-D, Hellinger geometry)"
    (fig.suptitle if dims == 3 else ax.set_title)(title)
    return fig


def _finite_or_nan(v: Any) -> float:
    return float("nan") if v is None else float(v)


def stress_bars(rows: Sequence[Mapping[str, Any]]) -> Any:
    """One horizontal bar per encoding for paper stress (log), scale-optimal stress and the
    violation rate; error bars wherever a row has an interval (``<key>_ci``)."""
    names = [str(r["encoding"]) for r in rows]
    y = np.arange(len(rows))
    panels = (
        ("paper", "paper stress Σ(δ-D)²/ΣD² (log)", True),
        ("scale_optimal", "scale-optimal stress (after α*)", False),
        ("violation_rate", "violation rate (triples; random ≈ 0.5)", False),
    )
    fig = figure(11.5, 1.2 + 0.32 * len(rows))
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (key, label, log) in zip(axes, panels, strict=False):
        values = np.array([_finite_or_nan(r.get(key)) for r in rows])
        shown = np.where(values > 0, values, np.nan) if log else values
        ax.barh(y, np.nan_to_num(shown, nan=0.0), color="C0", alpha=0.8)
        cis = [interval(r, key) for r in rows]
        have = [i for i, ci in enumerate(cis) if ci is not None]
        if have:
            lo = np.array([values[i] - cis[i][0] for i in have])
            hi = np.array([cis[i][1] - values[i] for i in have])
            ax.errorbar(
                values[have],
                y[have],
                xerr=np.clip(np.vstack([lo, hi]), 0, None),
                fmt="none",
                ecolor="k",
                capsize=3,
                lw=1,
            )
        if log and np.any(np.isfinite(shown)):
            ax.set_xscale("log")
            floor = max(np.nanmin(shown), 1e-6 * np.nanmax(shown))
            ax.set_xlim(left=floor / 2)
            for yi in np.flatnonzero(shown < floor):
                ax.text(floor / 2, yi, " ≈ 0", va="center", fontsize=7)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, names)
    axes[0].invert_yaxis()
    fig.suptitle("stress per encoding against D (lower is closer; bars show intervals if computed)")
    return fig


def _label_every(count: int, most: int) -> set[int]:
    """Indices of at most ``most`` evenly spaced points out of ``count`` (first and last kept),
    so that labels of neighbouring points never overlap."""
    if count <= most:
        return set(range(count))
    return {round(float(x)) for x in np.linspace(0, count - 1, most)}


def rank_curve(curve: Sequence[Mapping[str, Any]]) -> Any:
    """Paper and scale-optimal stress of the rank-``r`` MDS encoding against ``r``; at most
    :data:`RANK_LABELS` evenly spaced points are labelled with their parameter count
    ``r (n + d)`` (``n d`` for the full table), so the labels do not overlap."""
    r = np.array([c["rank"] for c in curve])
    fig = figure(6.4, 4.0)
    ax = fig.subplots()
    for key, label, style in (
        ("paper", "paper stress", "o-"),
        ("scale_optimal", "scale-optimal stress", "s--"),
    ):
        v = np.array([_finite_or_nan(c.get(key)) for c in curve])
        if np.any(v > 0):
            ax.semilogy(r, np.where(v > 0, v, np.nan), style, ms=4, label=label)
    paper = np.array([_finite_or_nan(c.get("paper")) for c in curve])
    labelled = _label_every(len(curve), RANK_LABELS)
    for k, (ri, p, c) in enumerate(zip(r, paper, curve, strict=False)):
        if k in labelled and p > 0 and "parameters" in c:
            ax.annotate(
                f"{c['parameters']:,}",
                (ri, p),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=7,
            )
    full = curve[0].get("full_parameters") if curve else None
    ax.set_xlabel("rank r of P = A Bᵀ (labels: parameters r(n+d))")
    ax.set_ylabel("stress against D (log)")
    ax.set_title("rank curve" + (f" (full table n d = {full:,})" if full else ""))
    if ax.lines:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def shepard(target: np.ndarray, deltas: Mapping[str, np.ndarray], *, convention: str) -> Any:
    """Shepard plots: per encoding, its distance ``delta_ij`` against ``D_ij`` over the same
    pairs (``target`` and every ``deltas[name]`` are 1-D arrays of those pairs)."""
    names = list(deltas)
    cols = min(4, max(1, len(names)))
    rows = int(np.ceil(len(names) / cols))
    fig = figure(3.0 * cols, 2.7 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, name in zip(axes, names, strict=False):
        ax.scatter(target, deltas[name], s=3, alpha=0.4, rasterized=True)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"D_ij ({convention})", fontsize=8)
        ax.set_ylabel("encoding δ_ij", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    fig.suptitle("Shepard plots: encoding distance against Hellinger distance (sampled pairs)")
    return fig


def heads(heads: Sequence[Mapping[str, Any]], family: str = "alibi") -> Any:
    """Paper and scale-optimal stress of every head of a per-head family (ALiBi: the distance
    ``m_h |i - j|``, the slope under each head's number)."""
    h = np.array([x["head"] for x in heads])
    fig = figure(6.4, 3.6)
    ax = fig.subplots()
    ax.semilogy(h, [x["paper"] for x in heads], "o-", label="paper stress")
    ax.semilogy(h, [max(x["scale_optimal"], 1e-300) for x in heads], "s--", label="scale-optimal")
    slopes = all("slope" in x for x in heads)
    labels = [f"{x['head']}\n{x['slope']:.3g}" if slopes else str(x["head"]) for x in heads]
    ax.set_xticks(h, labels, fontsize=7)
    ax.set_xlabel("head (slope m_h); distance m_h |i - j|" if slopes else "head")
    ax.set_ylabel("stress against D (log)")
    ax.set_title(f"{family} per head")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def layers(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Per layer: scale-optimal and paper stress of the mean states against ``D`` (shaded: the
    rows' intervals ``<key>_low/high``) and ``R^2``, the variance share explained by position."""
    names = [str(r["layer"]) for r in rows]
    x = np.arange(len(rows))
    fig = figure(11.5, 3.6)
    axes = fig.subplots(1, 3)
    panels = (
        ("stress_scale_optimal", "scale-optimal stress (shape)", False),
        ("stress_paper", "paper stress (shape and scale, log)", True),
        ("variance_explained", "R² explained by position", False),
    )
    for ax, (key, label, log) in zip(axes, panels, strict=False):
        v = np.array([_finite_or_nan(r.get(key)) for r in rows])
        (ax.semilogy if log else ax.plot)(x, v, "o-", ms=4)
        lo = np.array([_finite_or_nan(r.get(f"{key}_low")) for r in rows])
        if np.isfinite(lo).any():  # the stored per-layer intervals, as the tables show them
            ax.fill_between(x, lo, [_finite_or_nan(r.get(f"{key}_high")) for r in rows], alpha=0.2)
        ax.set_title(label, fontsize=10)
        ax.set_xticks(x, ["emb" if n == "embeddings" else n for n in names], fontsize=7)
        ax.set_xlabel("layer")
        ax.grid(alpha=0.3)
    fig.suptitle("layer-wise positional signal against the Hellinger geometry D")
    return fig


def estimators(plugin: np.ndarray, recommended: np.ndarray, *, name: str, convention: str) -> Any:
    """Pairs ``D_ij`` of the plug-in estimator (x) against the recommended estimator (y), with
    the diagonal ``y = x``: points below it are distances the plug-in overstates (its bias
    from sampling)."""
    fig = figure(5.2, 4.4)
    ax = fig.subplots()
    ax.scatter(plugin, recommended, s=4, alpha=0.4, rasterized=True)
    top = float(max(np.max(plugin, initial=0), np.max(recommended, initial=0)))
    ax.plot([0, top], [0, top], c="0.3", lw=1, ls="--", label="y = x")
    ax.set_xlabel(f"plug-in D_ij ({convention})")
    ax.set_ylabel(f"{name} D_ij ({convention})")
    ax.set_title("plug-in against the recommended estimator")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
