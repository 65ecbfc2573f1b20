"""``posgeom probe SOURCE [CORPUS]``: where a model keeps position (:func:`posgeom.probe`).

Without CORPUS, SOURCE is a position table and the table probes run; with CORPUS, SOURCE is a
model and every layer is probed, beside the corpus geometry.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom.cli import _options as options
from posgeom.cli._count_flags import add_reader_arguments
from posgeom.corpus.bootstrap_weights import PROBE_REPLICATES

_CORPUS_FLAGS = ("format", "text_column", "split", "max_sequences", "shuffle_seed")  # their dests


def _probe(args: argparse.Namespace) -> int:
    """where a model keeps position: table probes, layer probes and the geometry

    Probe a position table (absolute position and order, PE-Study's protocol, intervals over seeds
    and folds) or, with CORPUS, every layer of a model (linear and MLP probes on held-out sequences,
    the positional part's rank and share, monotone channels) beside its stress against the corpus
    geometry."""
    import posgeom

    out = None
    inputs = [p for p in (args.source, args.corpus) if p and Path(p).exists()]
    if args.output:
        from posgeom.io.outputs import check_output

        out = Path(args.output)
        check_output(out, kinds=(), overwrite=args.overwrite, inputs=inputs, folder=True)
    where = options.placement(args)  # a device this machine lacks: refused before anything is read
    corpus = None
    if args.corpus is None:  # without CORPUS the corpus-reading flags would be ignored
        given = [f"--{d.replace('_', '-')}" for d in _CORPUS_FLAGS if getattr(args, d) is not None]
        if given:
            raise PosgeomError(
                f"{', '.join(given)} read a corpus, but none is given (SOURCE alone is a table); "
                "give CORPUS after SOURCE, or drop them"
            )
    else:
        if args.max_positions is None:
            raise PosgeomError("probing a model's layers needs -n/--max-positions N")
        corpus = options.sample_texts(args)
    options.apply_threads(args)
    result = posgeom.probe(
        args.source,
        corpus,
        n=args.max_positions,
        tokenizer=args.tokenizer,
        gguf_file=args.gguf_file,
        **where,
        key=args.key,
        start=args.start,
        pairs=args.pairs,
        seeds=args.seeds,
        folds=args.folds,
        per_position=args.per_position,
        kinds=tuple(args.kinds.split(",")),
        geometry=args.geometry,
        estimator=args.estimator,
        bootstrap=args.bootstrap or None,
        include_special=args.include_special,
        batch_size=args.batch_size,
        level=args.level,
        seed=args.seed,
        progress=not args.quiet,
    )
    print(result.markdown(), end="")
    if out is not None:
        _write(result, out, args, inputs)
    return 0


def _write(result: Any, out: Path, args: argparse.Namespace, inputs: list[str]) -> None:
    from posgeom.probes.report import write_report
    from posgeom.reports import results_folder

    with results_folder(out, overwrite=args.overwrite, inputs=inputs, content="probe") as tmp:
        result.save(tmp, plot=not args.no_plot)
        if args.report:
            write_report(tmp, result.summary())
    print(
        f"results in {printable(os.fspath(out))}/ (summary.json, table.md"
        + (", report.html" if args.report else "")
        + ")"
    )


def register(sub: Any) -> None:
    p = options.add_command(sub, "probe", _probe)
    p.add_argument(
        "source", help="table file (.npy/.npz/.safetensors), decoder file, or model folder/name"
    )
    p.add_argument("corpus", nargs="?", default=None, help="corpus file (then SOURCE is a model)")
    p.add_argument(
        "-n",
        "--max-positions",
        type=int,
        default=None,
        help="positions 0 .. n-1 (default for a table: all rows)",
    )
    p.add_argument("--key", default=None, help="the array of a file holding several")
    p.add_argument("--start", type=int, default=0, help="table row of position 0")
    p.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="pairs of the order probe (default max(4n, 2048); PE-Study: n)",
    )
    p.add_argument("--seeds", type=int, default=5, help="repetitions of the table probes")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    p.add_argument(
        "--per-position", type=int, default=64, help="sampled tokens per position (layer probes)"
    )
    p.add_argument(
        "--probes", dest="kinds", default="linear,mlp", help="layer probes, comma-separated"
    )
    p.add_argument(
        "--no-geometry",
        dest="geometry",
        action="store_false",
        help="skip the stress against the corpus",
    )
    options.add_estimator_argument(
        p, what="estimator of the corpus geometry the layers are scored against"
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=PROBE_REPLICATES,
        help="half-sample replicates of the counts for a per-layer stress interval, as "
        "analyze-model's (0: none; analyze-model's default is 100)",
    )
    options.add_tokenizer_argument(p)
    options.add_gguf_argument(p, inside="SOURCE")
    add_reader_arguments(p)
    options.add_sample_arguments(p)
    p.add_argument(
        "--no-special",
        dest="include_special",
        action="store_false",
        help="skip special tokens and re-index positions",
    )
    p.add_argument("--batch-size", type=int, default=32, help="sequences per forward pass")
    options.add_threads_argument(p)
    options.add_placement_arguments(p)
    p.add_argument("--level", type=float, default=0.95, help="coverage of the intervals")
    options.add_seed_argument(p, what="seed of the layer sample and folds")
    p.add_argument("--no-plot", action="store_true", help="do not draw probe_layers.png")
    options.add_results_folder_arguments(
        p, required=False, report="also write report.html into the folder"
    )
