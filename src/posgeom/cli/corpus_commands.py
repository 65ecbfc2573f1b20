"""``posgeom count``: a corpus and a tokenizer in, position counts out (its flags:
:mod:`posgeom.cli._count_flags`); the count behind ``run`` and ``lengths`` too."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom.cli._count_flags import (
    BOOTSTRAP_FLAGS,
    add_count_arguments,
    add_option_flag,
    count_options_from_args,
)

log = logging.getLogger("posgeom")


def corpus_inputs(args: argparse.Namespace) -> tuple[Path, ...]:
    """The files a count reads (corpus files, a tokenizer file or folder, the job folder)."""
    paths = [Path(c) for c in args.corpus]
    if args.tokenizer not in ("word", "whitespace") and Path(args.tokenizer).exists():
        paths.append(Path(args.tokenizer))
    if args.job_dir:
        paths.append(Path(args.job_dir))
    return tuple(paths)


def check_count_args(args: argparse.Namespace) -> None:
    """Refuse out-of-range count options before any work, by
    :class:`~posgeom.corpus.options.CountOptions`' own constraints, and a missing corpus."""
    from posgeom.corpus.options import CountOptions

    if getattr(args, "max_positions", None) is not None:
        CountOptions(**count_options_from_args(args))
    for corpus in getattr(args, "corpus", None) or ():
        if not Path(corpus).exists():
            raise PosgeomError(f"corpus {corpus} does not exist; check the path")


def counts_from_args(args: argparse.Namespace) -> Any:
    from posgeom.corpus.counting import count_corpus
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    check_count_args(args)
    corpora = [Path(c) for c in args.corpus]
    suffixes = "".join(corpora[0].suffixes)
    ids = ("npy", "npz", "bin")
    is_ids = args.format in ids or any(f".{x}" in suffixes for x in ids)
    options = count_options_from_args(args)
    scaled = args.scheduler or (args.workers or 1) > 1 or args.job_dir or args.shard_lines
    log.info("counting %s (n = %d)", ", ".join(map(str, corpora)), args.max_positions)
    if scaled:
        if args.max_sequences is not None or args.limit is not None:
            raise PosgeomError(
                "--max-sequences and --limit cannot be combined with --scheduler/--workers/"
                "--job-dir/--shard-lines (a global cap cannot be split across shards); cut the "
                "corpus file instead"
            )
        for name in ("max_sequences", "limit"):
            del options[name]
        from posgeom.corpus.distributed import count_distributed

        tok: Any = None
        if not is_ids:
            tok = (
                WordLevelTokenizer(lowercase=True)
                if args.tokenizer in ("word", "whitespace") and args.lowercase
                else args.tokenizer
            )
        counts = count_distributed(
            corpora,
            tok,
            scheduler=args.scheduler,
            n_workers=args.workers,
            job_dir=args.job_dir,
            shard_lines=args.shard_lines,
            overwrite=args.restart_job,
            progress=not args.quiet,
            **options,
        )
    else:
        if len(corpora) > 1:
            raise PosgeomError(
                "several corpus files need --job-dir or --shard-lines (sharded counting)"
            )
        tokenizer = None if is_ids else load_tokenizer(args.tokenizer, lowercase=args.lowercase)
        counts = count_corpus(corpora[0], tokenizer, progress=not args.quiet, **options)
    log.info("%d sequences, %d tokens counted", counts.n_sequences, counts.n_tokens)
    return counts


def _say_size(counts: Any, output: Any) -> None:
    """Log the size of the counts file about to be written (its arrays, stored uncompressed):
    ``nnz`` counts with their column indices, the row pointers and, with replicates, ``B nnz``
    more integers."""
    matrix = counts.counts
    size = matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
    reps = getattr(counts, "replicates", None)
    detail = ""
    if reps is not None:
        size += reps.nbytes
        detail = (
            f": {reps.shape[0]:,} non-zero counts x {reps.shape[1]} replicates x "
            f"{reps.dtype.itemsize} bytes"
        )
    log.info("writing %s, about %.1f MB%s", output, size / 1e6, detail)


def _count(args: argparse.Namespace) -> int:
    """count tokens per position in a corpus

    Count C[i, t], the number of sequences with token t at position i, and save it as one file (.npz
    or .safetensors) that carries every option and a corpus fingerprint."""
    from posgeom.io.artifacts import check_output_file

    check_count_args(args)
    output = check_output_file(  # before the work: posgeom's own counts only, never an input
        args.output,
        overwrite=args.overwrite,
        kinds=("position_counts", "bootstrap_counts"),
        inputs=corpus_inputs(args),
    )
    if args.bootstrap:
        log.info(
            "--bootstrap %d: the counts file stores %d integers per non-zero count (hundreds of "
            "MB for a large corpus); its size is said before it is written",
            args.bootstrap,
            args.bootstrap,
        )
    counts = counts_from_args(args)
    _say_size(counts, output)
    path = counts.save(output, overwrite=args.overwrite)
    reps = getattr(counts, "n_replicates", None)
    print(
        f"wrote {printable(path)} ({printable(counts.n_sequences)} sequences, {printable(counts.max_positions)} positions, "
        f"vocabulary {printable(counts.vocab_size)}"
        + (f", {printable(reps)} bootstrap replicates)" if reps else ")")
    )
    return 0


def register(sub: Any) -> None:
    from posgeom.cli._options import add_command

    p = add_command(sub, "count", _count)
    add_count_arguments(p)
    p.add_argument(
        "-o", "--output", required=True, help="output file: counts.npz or counts.safetensors"
    )
    b = p.add_argument_group("uncertainty: bootstrap replicates over sequences (same pass)")
    for name, help_text, kw in BOOTSTRAP_FLAGS:
        add_option_flag(b, name, help_text, **kw)
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing counts file (only a file posgeom wrote)",
    )
