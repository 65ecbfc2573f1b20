"""The flags of the counting options, declared once: each is a
:class:`~posgeom.corpus.options.CountOptions` field (``--`` + its name, dashes for underscores),
its default and allowed values read from the options, never copied; the corpus, tokenizer and
scale flags of ``count`` and ``run``; the text-decoding and reader flags of every command that
reads text; and the parsed flags back as the options' fields (:func:`count_options_from_args`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = [
    "BOOTSTRAP_FLAGS",
    "add_count_arguments",
    "add_option_flag",
    "add_reader_arguments",
    "add_text_arguments",
    "count_options_from_args",
]


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


BOOTSTRAP_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
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
    """The flag of the :class:`~posgeom.corpus.options.CountOptions` field ``name`` (underscores
    as dashes: ``--bootstrap-seed``), its default, and its allowed values as ``choices`` when
    asked."""
    if kw.pop("choices", False):
        kw["choices"] = _choices(name)
    if kw.get("type") == "ids":
        kw["type"] = _ids
    flag = "--" + name.replace("_", "-")
    g.add_argument(flag, dest=name, default=_default(name), help=help_text, **kw)


def add_text_arguments(p: Any) -> None:
    """``--text-encoding``, ``--encoding-errors`` and ``--text-field`` for a command that reads
    text (:func:`posgeom.corpus.options.text_decoding` reads them back)."""
    for name, help_text, kw in _TEXT_FLAGS:
        add_option_flag(p, name, help_text, **dict(kw))


def add_reader_arguments(p: Any) -> None:
    """``--format``, ``--text-column``, the text options and ``--split`` of a command that reads
    one corpus through a model."""
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


def _default(name: str) -> Any:
    """The default of the :class:`~posgeom.corpus.options.CountOptions` field ``name``."""
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
    named like a field fills it (``--no-special`` negates ``include_special``)."""
    from posgeom.corpus.options import option_fields

    out: dict[str, Any] = {}
    for f in option_fields():
        if f.name in _NEGATED:
            out[f.name] = not getattr(args, _NEGATED[f.name])
        elif hasattr(args, f.name):
            out[f.name] = getattr(args, f.name)
    return out
