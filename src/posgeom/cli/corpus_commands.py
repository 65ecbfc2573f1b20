"""``posgeom count``: a corpus and a tokenizer in, position counts out."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError

log = logging.getLogger("posgeom")


def add_count_arguments(p: argparse.ArgumentParser) -> None:
    """Corpus, tokenizer and counting options shared by ``count`` and ``run``."""
    p.add_argument(
        "corpus",
        nargs="+",
        help="corpus files or folder: .txt, .jsonl, .csv, .tsv, .parquet "
        "(each optionally .gz), a saved Hugging Face datasets folder, or token ids (.npy, "
        ".npz, .bin); several files are counted together",
    )
    p.add_argument(
        "-n",
        "--max-positions",
        type=int,
        required=True,
        help="number of positions n to count (positions 0 .. n-1)",
    )
    p.add_argument(
        "-t",
        "--tokenizer",
        default="word",
        help="tokenizer: a tokenizer.json file, a folder with one, a transformers model "
        "name or path (local only), or 'word' for the built-in word-level tokenizer "
        "(vocabulary built from the corpus); ignored for token-id inputs",
    )
    p.add_argument(
        "--format",
        default=None,
        help="input format (text, jsonl, csv, tsv, parquet, hf-disk, npy, npz, bin); "
        "default: from the file suffix",
    )
    p.add_argument(
        "--text-column",
        default=None,
        help="column or field holding the text (jsonl/csv/tsv/parquet/datasets)",
    )
    p.add_argument("--split", default=None, help="split of a saved datasets folder")
    p.add_argument(
        "--align",
        choices=("start", "end"),
        default="start",
        help="position 0 is the first token (start) or the last token (end)",
    )
    p.add_argument(
        "--no-special",
        action="store_true",
        help="remove special tokens ([CLS], [SEP], BOS/EOS) before assigning positions",
    )
    p.add_argument("--lowercase", action="store_true", help="lowercase text (word tokenizer)")
    p.add_argument(
        "--min-length", type=int, default=1, help="skip sequences with fewer tokens than this"
    )
    p.add_argument(
        "--max-sequences", type=int, default=None, help="stop after counting this many sequences"
    )
    p.add_argument("--batch-size", type=int, default=1024, help="sequences tokenized per batch")
    p.add_argument("--pad-id", type=int, default=None, help="padding id to strip (token-id inputs)")
    p.add_argument(
        "--separator-id",
        type=int,
        default=None,
        help="document separator id of a flat token stream (.bin, 1-D .npy)",
    )
    s = p.add_argument_group("scale: distributed and resumable counting")
    s.add_argument(
        "--scheduler",
        default=None,
        help="count on Dask: the address of a running scheduler (tcp://host:8786), or "
        "'local' for a local cluster",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=None,
        help="workers of a local Dask cluster (more than 1 starts one)",
    )
    s.add_argument(
        "--job-dir",
        default=None,
        help="record finished shards here; rerunning the same command resumes the job",
    )
    s.add_argument(
        "--shard-lines",
        type=int,
        default=None,
        help="split text/jsonl/csv/tsv files into shards of this many records",
    )
    s.add_argument(
        "--restart-job",
        action="store_true",
        help="discard the shards recorded in --job-dir and start the job again",
    )


def corpus_inputs(args: argparse.Namespace) -> tuple[Path, ...]:
    """The files a count reads (corpus files, a tokenizer file or folder, the job folder)."""
    paths = [Path(c) for c in args.corpus]
    if args.tokenizer not in ("word", "whitespace") and Path(args.tokenizer).exists():
        paths.append(Path(args.tokenizer))
    if args.job_dir:
        paths.append(Path(args.job_dir))
    return tuple(paths)


_BOUNDS = (  # (dest, flag, smallest value): refused before any work
    ("max_positions", "-n/--max-positions", 1),
    ("workers", "--workers", 1),
    ("shard_lines", "--shard-lines", 1),
    ("batch_size", "--batch-size", 1),
    ("min_length", "--min-length", 0),
    ("max_sequences", "--max-sequences", 1),
)


def check_count_args(args: argparse.Namespace) -> None:
    """Refuse out-of-range counting options (``--workers 0``, ``--shard-lines 0``, ...)."""
    for dest, flag, low in _BOUNDS:
        value = getattr(args, dest, None)
        if value is not None and value < low:
            raise PosgeomError(f"{flag} must be at least {low}, got {value}")
    for corpus in getattr(args, "corpus", None) or ():
        if not Path(corpus).exists():
            raise PosgeomError(f"corpus {corpus} does not exist; check the path")


def counts_from_args(args: argparse.Namespace) -> Any:
    from posgeom.corpus.counting import count_corpus
    from posgeom.corpus.tokenize import WordLevelTokenizer, load_tokenizer

    check_count_args(args)
    corpora = [Path(c) for c in args.corpus]
    suffixes = "".join(corpora[0].suffixes)
    is_ids = any(x in suffixes for x in (".npy", ".npz", ".bin")) or args.format in (
        "npy",
        "npz",
        "bin",
    )
    options = dict(
        format=args.format,
        text_column=args.text_column,
        split=args.split,
        pad_id=args.pad_id,
        separator_id=args.separator_id,
        include_special=not args.no_special,
        align=args.align,
        min_length=args.min_length,
        batch_size=args.batch_size,
    )
    if getattr(args, "bootstrap", None) is not None:  # ``count --bootstrap B``
        options.update(
            bootstrap=args.bootstrap,
            bootstrap_seed=args.bootstrap_seed,
            bootstrap_scheme=args.bootstrap_scheme,
        )
    scaled = args.scheduler or (args.workers or 1) > 1 or args.job_dir or args.shard_lines
    log.info("counting %s (n = %d)", ", ".join(map(str, corpora)), args.max_positions)
    if scaled:
        if args.max_sequences is not None:
            raise PosgeomError(
                "--max-sequences cannot be combined with --scheduler/--workers/--job-dir/--shard-lines "
                "(a global cap cannot be split across shards); cut the corpus file instead"
            )
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
            max_positions=args.max_positions,
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
        counts = count_corpus(
            corpora[0],
            tokenizer,
            max_positions=args.max_positions,
            max_sequences=args.max_sequences,
            progress=not args.quiet,
            **options,
        )
    log.info("%d sequences, %d tokens counted", counts.n_sequences, counts.n_tokens)
    return counts


def _count(args: argparse.Namespace) -> int:
    from posgeom.io.artifacts import check_output_file

    check_count_args(args)
    output = check_output_file(  # before the work: posgeom's own counts only, never an input
        args.output,
        overwrite=args.overwrite,
        kinds=("position_counts", "bootstrap_counts"),
        inputs=corpus_inputs(args),
    )
    counts = counts_from_args(args)
    path = counts.save(output, overwrite=args.overwrite)
    reps = getattr(counts, "n_replicates", None)
    print(
        f"wrote {path} ({counts.n_sequences} sequences, {counts.max_positions} positions, "
        f"vocabulary {counts.vocab_size}" + (f", {reps} bootstrap replicates)" if reps else ")")
    )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "count",
        help="count tokens per position in a corpus",
        description="Count C[i, t], the number of sequences with token t at position i, and save "
        "it as one file (.npz or .safetensors) that carries every option and a corpus fingerprint.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_count_arguments(p)
    p.add_argument(
        "-o", "--output", required=True, help="output file: counts.npz or counts.safetensors"
    )
    b = p.add_argument_group("uncertainty: bootstrap replicates over sequences (same pass)")
    b.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        metavar="B",
        help="also count B bootstrap replicates (each sequence weighted per replicate); 200 is "
        "a good choice for 95%% intervals",
    )
    b.add_argument(
        "--bootstrap-scheme",
        choices=("half", "poisson"),
        default="half",
        help="replicate weights: half-samples (Bernoulli 1/2, right for the bias-corrected "
        "estimators) or the Poisson(1) bootstrap (smooth estimators only)",
    )
    b.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the replicate weights")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing counts file (only a file posgeom wrote)",
    )
    p.set_defaults(handler=_count)
