"""``posgeom lengths CORPUS``: the sequence-length profile of a corpus and the suggested ``n``."""

from __future__ import annotations

import argparse
from typing import Any

from posgeom.io.jsonfiles import json_text

CAP = 1024


def _lengths(args: argparse.Namespace) -> int:
    """sequence lengths of a corpus (histogram, percentiles) and the suggested n

    Tokenizes the corpus as `posgeom count` does and prints the histogram of sequence lengths, its
    percentiles and the suggested n: the positions reached by at least 5% of the sequences (the rule
    of `posgeom reproduce`). Positions beyond it hold few samples and mostly sampling noise."""
    from posgeom._validation import check_param
    from posgeom.cli.corpus_commands import counts_from_args
    from posgeom.corpus.lengths import QUANTILE_RANGE, length_profile

    check_param("--quantile", args.quantile, [QUANTILE_RANGE])  # before the corpus is read
    counts = counts_from_args(args)
    profile = length_profile(counts.totals, counts.n_sequences, quantile=args.quantile)
    if args.json:
        print(json_text(profile.summary(), indent=2))
    else:
        print(profile.text())
    return 0


def register(sub: Any) -> None:
    from posgeom.cli._count_flags import add_count_arguments
    from posgeom.cli._options import add_command

    p = add_command(sub, "lengths", _lengths)
    add_count_arguments(p)
    for action in p._actions:
        if action.dest == "max_positions":
            action.required = False
            action.default = CAP
            action.help = f"longest length measured (default {CAP}; longer ones are binned there)"
    p.add_argument(
        "--quantile",
        type=float,
        default=0.95,
        help="the suggested n is this quantile of the lengths, in (0, 1] (default 0.95)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


__all__ = ["register"]
