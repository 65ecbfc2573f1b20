"""The HTML page of probe results (one result, or several side by side: the atlas).

:func:`render_page`: one self-contained page (figures inline as SVG) of any number of
``summary.json`` dictionaries, with the tables of :mod:`posgeom.probes.result` rendered by
:func:`posgeom.reports.html.html_table`, the style of posgeom's other reports, and the stamp
:func:`posgeom.io._claims.stamp` puts on every report.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["render_page", "write_report"]


def _svg(fig: Any) -> str:
    from posgeom.reports.canvas import encode_svg

    data = base64.b64encode(encode_svg(fig)).decode("ascii")
    return f'<figure><img alt="figure" src="data:image/svg+xml;base64,{data}"></figure>'


def _section(summary: dict[str, Any], title: str | None, level: int) -> list[str]:
    from posgeom.probes.result import LAYER_COLUMNS, TABLE_COLUMNS, layer_row, table_row
    from posgeom.reports.html import html_table

    esc = html.escape
    parts = [] if title is None else [f"<h{level}>{esc(title)}</h{level}>"]
    if summary.get("verdict"):
        parts.append(
            '<div class="verdict"><b>Verdict.</b> ' + esc(" ".join(summary["verdict"])) + "</div>"
        )
    tp = summary.get("table_probes")
    if tp:
        parts += [
            "<h3>Table probes (PE-Study protocol)</h3>",
            html_table([table_row(tp)], TABLE_COLUMNS),
        ]
    if summary.get("layers"):
        from posgeom.probes.result import layer_figure

        parts.append(_svg(layer_figure(summary)))
        parts += [
            "<h3>Layer by layer</h3>",
            html_table([layer_row(r) for r in summary["layers"]], LAYER_COLUMNS),
        ]
    opts = {k: v for k, v in summary.get("options", {}).items() if isinstance(v, (str, int, float))}
    if opts:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in opts.items())
        parts.append(f"<details><summary>Settings</summary><table>{rows}</table></details>")
    return parts


def render_page(
    sections: Sequence[tuple[str, dict[str, Any]]], *, title: str, intro: Sequence[str] = ()
) -> str:
    """One HTML page of ``(title, summary)`` sections (module docstring)."""
    from posgeom.io._claims import stamp
    from posgeom.reports.html import html_page

    body = [f"<h1>{html.escape(title)}</h1>", *(f"<p>{html.escape(p)}</p>" for p in intro)]
    for name, summary in sections:  # one section: the page's title is its heading (said once)
        body += _section(summary, name, 2) if len(sections) > 1 else _section(summary, None, 1)
    return stamp(html_page(title, "\n".join(body)), "report")


def write_report(folder: Path, summary: dict[str, Any]) -> Path:
    """``report.html`` of one probe folder (inside :func:`posgeom.reports.results_folder`)."""
    from posgeom._paths import portable_path

    path = Path(folder) / "report.html"
    name = portable_path(summary["source"])  # never an absolute path
    path.write_text(
        render_page([(name, summary)], title=f"Position probes: {name}"), encoding="utf-8"
    )
    return path
