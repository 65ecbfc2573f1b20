"""One self-contained HTML report of a :class:`~posgeom.reports.view.ResultView`.

Figures are inline SVG data URIs (rasters inside them are PNG), styles are inline, there is no
script and no external resource: the file opens with no network. :func:`figures_of` is the one
list of figures a view gets; :func:`render_html` the page (or the fragment Jupyter shows).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom.pipeline.rows import MDS_ROW
from posgeom.reports import figures as F
from posgeom.reports._style import STYLE, scoped
from posgeom.reports.canvas import encode_png, encode_svg
from posgeom.text.markdown import cell
from posgeom.text.schema import (
    CONVENTIONS,
    HEAD_COLUMNS,
    HOW_TO_READ,
    Column,
    heads_by_family,
    layer_table,
    rank_columns,
    score_columns,
    score_conventions,
    with_interval_text,
)
from posgeom.text.verdict import rank_curve_caption, verdict
from posgeom.text.verdict_inputs import trusted_pairs

__all__ = ["RenderedFigure", "figure_groups", "figures_of", "html_table", "render_html"]


@dataclass(frozen=True, eq=False)
class RenderedFigure:
    """One figure: a file stem, a caption, its SVG bytes; :meth:`png` renders the PNG."""

    name: str
    caption: str
    svg: bytes
    figure: Any = field(repr=False)

    def png(self) -> bytes:
        return encode_png(self.figure)


def _heatmap_caption(view: Any) -> str:
    """The heatmap's caption: what the shading is, with the verdict's share of pairs."""
    vi = view.verdict
    head = "The target geometry D. Bright = far apart. The strip above counts samples per position"
    if trusted_pairs(view.arrays, vi) is None or vi is None or vi.noise_share is None:
        return head + "."
    classes = "" if vi.resolution in (None, "full") else f" of the {vi.resolution} token classes"
    return (
        f"{head}; pale cells are the {100 * (1 - vi.noise_share):.0f}% of pairs below twice their "
        f"noise floor{classes} (the verdict's {100 * vi.noise_share:.0f}% are above it)."
    )


def _target_at_pairs(a: Mapping[str, np.ndarray]) -> tuple[np.ndarray, Any] | None:
    """``(D, plug-in D or None)`` at the Shepard pairs: from the matrices, or as stored for a
    long context (``shepard_target``, ``shepard_plugin``)."""
    if "shepard_pairs" not in a:
        return None
    i, j = a["shepard_pairs"]
    if "hellinger" in a:
        plug = a["plugin_hellinger"][i, j] if "plugin_hellinger" in a else None
        return a["hellinger"][i, j], plug
    if "shepard_target" in a:
        return a["shepard_target"], a.get("shepard_plugin")
    return None


def _figure_specs(view: Any) -> Iterable[tuple[str, str, Any]]:
    """``(name, caption, thunk)`` of every figure the view's data allows, in reading order."""
    a, conv = view.arrays, view.convention
    if "hellinger" in a:
        n = a["hellinger"].shape[0]
        f = int(np.ceil(n / F.HEATMAP_MAX))
        b, caption = int(np.ceil(n / f)), _heatmap_caption(view)
        if f > 1:
            caption += f" Downsampled: n = {n} positions shown as {b} x {b} block means of {f} x "
            caption += f"{f} positions."
        yield (
            "heatmap",
            caption,
            lambda: F.heatmap(
                a["hellinger"],
                convention=conv,
                totals=a.get("totals"),
                trusted=trusted_pairs(a, view.verdict),  # the verdict's mask
                positions=a.get("positions"),
            ),
        )
    elif "hellinger_blocks" in a:  # a long context: sampled block means, no (n, n)
        f, pairs = (
            int(np.ravel(a[k])[0]) for k in ("hellinger_block_width", "hellinger_block_pairs")
        )
        b = a["hellinger_blocks"].shape[0]
        what = (
            f"as {b} x {b} block means of {f} x {f} consecutive positions, each estimated from "
            f"{pairs} sampled pairs"
            if f > 1
            else f"at every pair of its {b} positions"
        )
        yield (
            "heatmap",
            f"The target geometry D {what} (no n x n matrix was formed). Bright = far apart.",
            lambda: F.heatmap(
                a["hellinger_blocks"],
                convention=conv,
                block_width=f,
                pairs_per_block=pairs,
                n_positions=int(a["hellinger_grid_positions"][-1]) + 1,
            ),
        )
    elif "hellinger_grid" in a:  # a long context: D at a grid of positions, no (n, n)
        grid = a["hellinger_grid_positions"]
        yield (
            "heatmap",
            f"The target geometry D at {len(grid)} evenly spaced positions of {int(grid[-1]) + 1} "
            "(every pair of the grid; no n x n matrix was formed). Bright = far apart.",
            lambda: F.heatmap(a["hellinger_grid"], convention=conv, positions=grid),
        )
    if "eigenvalues" in a:
        ranks = (view.geometry.get(MDS_ROW) or {}).get("effective_rank")
        yield (
            "spectrum",
            "How many dimensions the geometry has: a fast drop means a few MDS coordinates hold it.",
            lambda: F.spectrum(a["eigenvalues"], ranks),
        )
    coords = a.get("mds_coordinates")
    if coords is not None and coords.shape[1] >= 2:
        yield (
            "mds_2d",
            "Positions placed by the MDS encoding of the target D above (the mds row); "
            "neighbours in the corpus are neighbours here.",
            lambda: F.mds_map(coords, a.get("positions"), dims=2),
        )
        if coords.shape[1] >= 3:
            yield (
                "mds_3d",
                "The same in three dimensions.",
                lambda: F.mds_map(coords, a.get("positions"), dims=3),
            )
    if view.rows:
        yield "stress", HOW_TO_READ["scale_optimal"], lambda: F.stress_bars(view.rows)
    if view.rank_curve:
        yield (
            "rank_curve",
            rank_curve_caption(view.rank_curve),
            lambda: F.rank_curve(view.rank_curve),
        )
    not_deltas = ("shepard_pairs", "shepard_target", "shepard_plugin")
    deltas = {k[8:]: v for k, v in a.items() if k.startswith("shepard_") and k not in not_deltas}
    at_pairs = _target_at_pairs(a)
    if deltas and at_pairs is not None:
        yield (
            "shepard",
            "A straight rising cloud is the right shape; a flat cloud is an encoding that does not "
            "see the corpus's distances.",
            lambda: F.shepard(at_pairs[0], deltas, convention=conv),
        )
    if at_pairs is not None and at_pairs[1] is not None:
        vi = view.verdict
        res = vi.resolution if vi else None
        coarser = f" or of the coarser {res} classes (the plug-in: full vocabulary)."
        yield (
            "estimators",
            "Sampling makes plug-in distances too large; the estimator used here corrects that. "
            "Points far below the diagonal are distances that are mostly sampling bias"
            + ("." if res in (None, "full") else coarser),
            lambda: F.estimators(
                at_pairs[1],
                at_pairs[0],
                name=str((vi.estimator if vi else None) or "estimate"),
                convention=conv,
            ),
        )
    for fam, rows in heads_by_family(view.heads).items():
        yield (
            f"{fam}_heads",
            f"Every head of {fam} scored on its own; the best head is the row in the table.",
            lambda fam=fam, rows=rows: F.heads(rows, fam),
        )
    if view.layers:
        yield "layers", HOW_TO_READ["layers"], lambda: F.layers(view.layers)
    if view.kind == "extend":
        from posgeom.reports.extend_parts import extend_figure_specs

        yield from extend_figure_specs(view, view.geometry)


def figures_of(view: Any, *, prefix: str = "") -> list[RenderedFigure]:
    """Every figure of ``view`` rendered to SVG and PNG (needs ``posgeom[plot]``)."""
    out = []
    for name, caption, thunk in _figure_specs(view):
        fig = thunk()
        out.append(RenderedFigure(prefix + name, caption, encode_svg(fig), fig))
    return out


def _esc(x: Any) -> str:
    return html.escape(str(x))


def html_table(rows: Sequence[Mapping[str, Any]], columns: Iterable[Column]) -> str:
    """An HTML table of ``rows`` in ``columns`` (same cells as the Markdown renderer)."""
    cols = [c for c in columns if any(c[0] in r for r in rows)]
    head = "".join(f"<th>{_esc(h)}</th>" for _, h, _ in cols)
    body = []
    for r in rows:
        tds = "".join(
            f"<td{'' if f == 's' else ' class=n'}>{_esc(cell(r.get(k), f))}</td>"
            for k, _, f in cols
        )
        body.append(f"<tr>{tds}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


_WIDE = ("stress", "shepard", "layers")


def _img(fig: RenderedFigure) -> str:
    data = base64.b64encode(fig.svg).decode("ascii")
    wide = ' class="wide"' if fig.name.endswith(_WIDE) else ""
    return (
        f'<figure id="fig-{_esc(fig.name)}"{wide}><img alt="{_esc(fig.name)}" '
        f'src="data:image/svg+xml;base64,{data}"><figcaption>{_esc(fig.caption)}</figcaption></figure>'
    )


def _tables(view: Any) -> list[str]:
    out = []
    if view.layers:
        level = view.verdict.layer_level if view.verdict else None
        out += ["<h2>Layer by layer</h2>", html_table(*layer_table(view.layers, level))]
    for heading, rows, columns in view.sections:  # a view's own tables (extend)
        out += [f"<h2>{_esc(heading)}</h2>", html_table(rows, columns)]
    if view.rows and not view.sections:
        against = view.verdict.estimator if view.verdict else None
        title = f"Scores against the {against} target" if against else "Scores"
        out += [
            f"<h2>{_esc(title)}</h2>",
            html_table(with_interval_text(view.rows), score_columns()),
        ]
    for fam, rows in heads_by_family(view.heads).items():
        out += [f"<h3>{_esc(fam)}, every head</h3>", html_table(rows, HEAD_COLUMNS)]
    if view.rank_curve:
        out += ["<h3>Rank experiment</h3>", html_table(view.rank_curve, rank_columns())]
    s = view.stationarity
    if s:
        out.append(
            f"<p>Stationarity: R² of D against the best function of |i - j| = "
            f"{s['toeplitz_r2']:.4f}; against the best non-decreasing one = {s['monotone_r2']:.4f}. "
            f"{_esc(HOW_TO_READ['stationarity'])}</p>"
        )
    return out


def _how_to_read() -> str:
    captions = ("rank_curve", "stationarity", "layers")  # said under their figures and tables
    keys = [k for k in HOW_TO_READ if k not in captions]
    text = {**score_conventions(), **HOW_TO_READ}  # a score without prose: its convention
    keys += [k for k in score_conventions() if k not in keys and k not in HOW_TO_READ]
    items = "".join(f"<dt>{_esc(k.replace('_', ' '))}</dt><dd>{_esc(text[k])}</dd>" for k in keys)
    conv = "".join(
        f"<dt>{_esc(k.replace('_', ' '))}</dt><dd><code>{_esc(v)}</code></dd>"
        for k, v in {**score_conventions(), **CONVENTIONS}.items()
    )
    return f"<h2>How to read this</h2><dl>{items}</dl><h3>Conventions</h3><dl>{conv}</dl>"


def _body(view: Any, figures: Sequence[RenderedFigure], level: int = 1) -> list[str]:
    parts = [f"<h{level}>{_esc(view.title)}</h{level}>"]
    words = verdict(view) or list(view.words)
    if words:
        parts.append(
            '<div class="verdict"><b>Verdict.</b> ' + " ".join(map(_esc, words)) + "</div>"
        )
    if view.missing:
        items = "".join(f"<li>{_esc(m)}</li>" for m in view.missing)
        present = ", ".join(view.present) or "nothing readable"
        parts.append(
            f'<div class="missing"><b>Not in this folder</b> (the report shows what is: '
            f"{_esc(present)}):<ul>{items}</ul></div>"
        )
    if view.notes:  # what the folder is, not what it lacks: plain text, no warning box
        parts.append("".join(f'<p class="note">{_esc(note)}</p>' for note in view.notes))
    for heading, header, rows in view.claims:  # a reproduction: REPRODUCTION.md's claim tables
        head = "".join(f"<th>{_esc(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
        parts.append(f"<h2>{_esc(heading)}</h2><table><tr>{head}</tr>{body}</table>")
    if view.settings:
        rows = "".join(
            f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in view.settings.items()
        )
        parts.append(f"<h2>Settings</h2><table>{rows}</table>")
    if figures:
        parts.append('<h2>Figures</h2><div class="figs">')
        parts += [_img(f) for f in figures]
        parts.append("</div>")
    parts += _tables(view)
    return parts


def figure_groups(view: Any) -> list[tuple[Any, list[RenderedFigure]]]:
    """``(view, figures)`` for the view and for every part it holds (a reproduce folder: one
    per comparison; their figure names are prefixed with the part's title)."""
    groups = [(view, figures_of(view))]
    groups += [(sub, figures_of(sub, prefix=f"{sub.title}_")) for sub in view.parts]
    return groups


def render_html(
    view: Any,
    groups: Sequence[tuple[Any, Sequence[RenderedFigure]]] | None = None,
    *,
    fragment: bool = False,
) -> str:
    """The report page of ``view`` (``fragment``: a ``<div>`` for Jupyter's ``_repr_html_``);
    ``groups`` defaults to :func:`figure_groups` ``(view)``."""
    if groups is None:
        groups = figure_groups(view)
    parts: list[str] = []
    for k, (sub, figs) in enumerate(groups):
        if k:
            parts.append("<hr>")
        parts += _body(sub, figs, level=1 if k == 0 else 2)
    parts.append(_how_to_read())
    body = "\n".join(parts)
    if fragment:
        return f'<div class="posgeom-report"><style>{scoped(STYLE)}</style>{body}</div>'
    return html_page(view.title, body)


def html_page(title: str, body: str) -> str:
    """A whole page: ``body`` (HTML) under ``title``, in posgeom's report style."""
    head = f'<meta charset="utf-8"><title>{_esc(title)}</title><style>{STYLE}</style>'
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head>\n<body>\n{body}\n</body></html>\n'
