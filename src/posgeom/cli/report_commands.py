"""``posgeom report RESULTS_DIR``: the self-contained HTML report of a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from posgeom._errors import printable
from posgeom.cli._options import add_command


def _report(args: argparse.Namespace) -> int:
    """a self-contained HTML report of a results folder (run, compare, analyze-model, reproduce)

    Reads the results folder written by run, geometry, demo -o, compare, analyze-model or reproduce
    and writes one HTML file that opens with no network: the verdict in plain words, the settings,
    figures (Hellinger heatmap, MDS spectrum and maps, stress per encoding, rank curve, Shepard
    plots, ALiBi heads, layers), the tables and how to read each number. Parts missing from the
    folder are named in the report."""
    from posgeom.reports import REPORT_NAME, report
    from posgeom.reports.view import load_folder

    view = load_folder(args.results)  # a folder that cannot be reported is refused first
    out = Path(args.output) if args.output else Path(args.results) / REPORT_NAME
    path = report(args.results, out, figures=not args.no_figures, overwrite=args.overwrite)
    for item in view.missing:
        print(f"not in {printable(args.results)}: {printable(item)}")
    size = path.stat().st_size / 1e6
    figures = "" if args.no_figures else f" and figures in {path.stem}_figures/"
    print(f"report in {printable(path)} ({size:.2f} MB){printable(figures)}")
    return 0


def register(sub: Any) -> None:
    p = add_command(sub, "report", _report)
    p.add_argument("results", metavar="RESULTS_DIR", help="the folder given to -o of that command")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="HTML file to write (default: RESULTS_DIR/report.html); figures go to "
        "<name>_figures/ beside it as PNG and SVG",
    )
    p.add_argument(
        "--no-figures", action="store_true", help="do not write the PNG and SVG files beside it"
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing report (only a report posgeom wrote, unchanged since)",
    )


__all__ = ["register"]
