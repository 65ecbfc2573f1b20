"""``posgeom count``: a corpus and a tokenizer in, position counts out."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable

log = logging.getLogger("posgeom")


#: the text-decoding flags of every command that reads text (CountOptions' reader fields)
_TEXT_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "text_encoding",
        "text encoding of the corpus files: any Python codec (utf-8, latin-1, cp1252, ...)",
        {},
    ),
    (
        "encoding_errors",
        "what an undecodable byte does: strict (refuse, naming the line), replace, ...",
        {"choices": True},
    ),
    (
        "text_field",
        "text lines: the text starts at this whitespace-separated field (2 for 'label text')",
        {"type": int, "metavar": "N"},
    ),
)

#: the count options' flags (``--`` + the field name): defaults and choices from CountOptions
_COUNT_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "format",
        "input format (text, jsonl, csv, tsv, parquet, hf-disk, npy, npz, bin); default: from "
        "the file suffix",
        {},
    ),
    ("text_column", "column or field holding the text (jsonl/csv/tsv/parquet/datasets)", {}),
    *_TEXT_FLAGS,
    ("split", "split of a saved datasets folder", {}),
    ("align", "position 0 is the first token (start) or the last token (end)", {"choices": True}),
    (
        "special_ids",
        "comma-separated ids that --no-special removes (default: the tokenizer's)",
        {"type": "ids", "metavar": "IDS"},
    ),
    (
        "vocab_size",
        "vocabulary size V, the counts' width (default: the tokenizer's, else max id + 1)",
        {"type": int},
    ),
    ("min_length", "skip sequences with fewer tokens than this", {"type": int}),
    ("max_sequences", "stop after counting this many sequences", {"type": int}),
    ("limit", "read at most this many records", {"type": int}),
    ("batch_size", "sequences tokenized per batch", {"type": int}),
    ("pad_id", "padding id to strip (token-id inputs)", {"type": int}),
    (
        "separator_id",
        "document separator id of a flat token stream (.bin, 1-D .npy)",
        {"type": int},
    ),
    (
        "token_dtype",
        "integer type of a .bin token stream (e.g. uint16, uint32; default: from the id range)",
        {},
    ),
)


_BOOTSTRAP_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "bootstrap",
        "also count B bootstrap replicates (each sequence weighted per replicate); 200 is a good "
        "choice for 95%% intervals",
        {"type": int, "metavar": "B"},
    ),
    (
        "bootstrap_scheme",
        "replicate weights: half-samples (Bernoulli 1/2, right for the bias-corrected "
        "estimators) or the Poisson(1) bootstrap (smooth estimators only)",
        {"choices": True},
    ),
    ("bootstrap_seed", "seed of the replicate weights", {"type": int}),
    (
        "bootstrap_stream",
        "stream of the replicate weights: give each part of a corpus counted separately its own "
        "stream, so the merged replicates stay independent (sharded counts do this)",
        {"type": int},
    ),
)


def add_option_flag(g: Any, name: str, help_text: str, **kw: Any) -> None:
    """The flag of the :class:`~posgeom.corpus.options.CountOptions` field ``name`` (two dashes,
    then the name with dashes for underscores), its default, and its allowed values as
    ``choices`` when asked."""
    if kw.pop("choices", False):
        kw["choices"] = _choices(name)
    if kw.get("type") == "ids":
        kw["type"] = _ids
    flag = "--" + name.replace("_", "-")
    g.add_argument(flag, dest=name, default=_default(name), help=help_text, **kw)


def add_text_arguments(p: Any) -> None:
    """``--text-encoding``, ``--encoding-errors`` and ``--text-field`` (declared once, as
    :class:`~posgeom.corpus.options.CountOptions` fields) for a command that reads text."""
    for name, help_text, kw in _TEXT_FLAGS:
        add_option_flag(p, name, help_text, **dict(kw))


def text_decoding(args: argparse.Namespace) -> dict[str, Any]:
    """The text flags (:func:`add_text_arguments`) as the readers' decoding keywords."""
    return {
        "encoding": args.text_encoding,
        "errors": args.encoding_errors,
        "text_field": args.text_field,
    }


def add_reader_arguments(p: Any) -> None:
    """``--format``, ``--text-column``, the text options (:func:`add_text_arguments`) and
    ``--split``: how a command that reads one corpus through a model (``analyze-model``,
    ``probe``) reads it."""
    p.add_argument("--format", default=None, help="corpus format (default: from the suffix)")
    p.add_argument("--text-column", default=None, help="column or field holding the text")
    add_text_arguments(p)
    p.add_argument("--split", default=None, help="split of a saved datasets folder")


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
        "--no-special",
        action="store_true",
        help="remove special tokens ([CLS], [SEP], BOS/EOS) before assigning positions",
    )
    p.add_argument("--lowercase", action="store_true", help="lowercase text (word tokenizer)")
    for name, help_text, kw in _COUNT_FLAGS:
        add_option_flag(p, name, help_text, **dict(kw))
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
        help="record finished shards here (a new or empty folder, or a job folder posgeom "
        "made; never inside an input); rerunning the same command resumes the job",
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
        help="discard what the job recorded in --job-dir (only the files posgeom wrote there) "
        "and start the job again",
    )


def corpus_inputs(args: argparse.Namespace) -> tuple[Path, ...]:
    """The files a count reads (corpus files, a tokenizer file or folder, the job folder)."""
    paths = [Path(c) for c in args.corpus]
    if args.tokenizer not in ("word", "whitespace") and Path(args.tokenizer).exists():
        paths.append(Path(args.tokenizer))
    if args.job_dir:
        paths.append(Path(args.job_dir))
    return tuple(paths)


def _default(name: str) -> Any:
    """The default of the :class:`~posgeom.corpus.options.CountOptions` field ``name`` (the CLI's
    defaults are the options', not a copy)."""
    from posgeom.corpus.options import CountOptions

    return CountOptions.__dataclass_fields__[name].default


def _choices(name: str) -> tuple[str, ...]:
    """The values the field ``name`` allows, its default first (read from its constraints)."""
    from posgeom._validation import Options
    from posgeom.corpus.options import CountOptions

    (allowed,) = (c for c in CountOptions.allowed(name) if isinstance(c, Options))
    return tuple(sorted(allowed.values, key=lambda v: (v != _default(name), v)))


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


#: the one count option whose flag is its negation
_NEGATED = {"include_special": "no_special"}


def count_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~posgeom.corpus.options.CountOptions` fields of the parsed flags: every flag
    named like a field fills it (``--no-special`` negates ``include_special``); fields without a
    flag in this command (the bootstrap ones outside ``count``) keep their defaults."""
    from posgeom.corpus.options import option_fields

    out: dict[str, Any] = {}
    for f in option_fields():
        if f.name in _NEGATED:
            out[f.name] = not getattr(args, _NEGATED[f.name])
        elif hasattr(args, f.name):
            out[f.name] = getattr(args, f.name)
    return out


def check_count_args(args: argparse.Namespace) -> None:
    """Refuse out-of-range count options before any work, by
    :class:`~posgeom.corpus.options.CountOptions`' own constraints (the counts of things, such as
    ``--workers 0`` or ``--batch-size 0``, are refused before the command by
    :func:`posgeom.cli._checks.check_common_args`), and a corpus that does not exist."""
    from posgeom.corpus.options import CountOptions

    if getattr(args, "max_positions", None) is not None:
        CountOptions(**count_options_from_args(args))
    for corpus in getattr(args, "corpus", None) or ():
        if not Path(corpus).exists():
            raise PosgeomError(f"corpus {corpus} does not exist; check the path")


def counts_from_args(args: argparse.Namespace) -> Any:
    from posgeom.corpus.counting import count_corpus
    from posgeom.corpus.tokenize import WordLevelTokenizer, load_tokenizer

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
    for name, help_text, kw in _BOOTSTRAP_FLAGS:
        add_option_flag(b, name, help_text, **kw)
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing counts file (only a file posgeom wrote)",
    )
