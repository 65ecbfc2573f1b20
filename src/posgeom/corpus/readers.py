"""Corpus readers: texts or token ids in, lazy iterators out.

Text formats (:func:`read_texts`, one string per sequence):

===========  ====================================  =============================================
format       suffixes                              text taken from
===========  ====================================  =============================================
``text``     ``.txt`` ``.text``                    each line (trailing newline removed)
``jsonl``    ``.jsonl`` ``.ndjson``                field ``text_column`` (default ``"text"``)
``csv``      ``.csv``                              column ``text_column`` of the header row
``tsv``      ``.tsv``                              same, read with ``csv.QUOTE_NONE`` (SST-2)
``parquet``  ``.parquet`` ``.pq``                  column ``text_column``, in record batches
``hf-disk``  folder from ``Dataset.save_to_disk``  column ``text_column`` of ``split``
``hf-hub``   only with ``format="hf-hub"``         ``load_dataset(path, streaming=True)``
===========  ====================================  =============================================

Any file format may be gzip-compressed with an extra ``.gz`` suffix (``train.tsv.gz``); a file
with any other suffix is read with ``format=`` (``--format``). Text is decoded line by line with
``encoding`` (any Python codec, default UTF-8; ``--text-encoding``) and ``errors``
(:data:`~._decoding.ERRORS`, default ``strict``; ``--encoding-errors``); a UTF-8 byte-order mark at
the start of a file is dropped. For ``text``, ``text_field = N`` (``--text-field``) keeps each line
from its ``N``-th whitespace-separated field on (a line with fewer fields is empty). Parquet:
:mod:`posgeom.corpus._parquet`.

Token ids (``.npy``, ``.npz``, ``.bin``) are read by :mod:`posgeom.corpus.token_ids`.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom._validation import check_int, check_path
from posgeom.corpus._bounded import MAX_LINE_BYTES, Spooled
from posgeom.corpus._columns import as_text, check_column
from posgeom.corpus._decoding import check_encoding, text_from

__all__ = [
    "TEXT_FORMATS",
    "TOKEN_FORMATS",
    "batches",
    "detect_format",
    "is_stream",
    "open_binary",
    "read_delimited",
    "read_jsonl",
    "read_lines",
    "read_text_lines",
    "read_texts",
    "spool",
]

TEXT_FORMATS = ("text", "jsonl", "csv", "tsv", "parquet", "hf-disk", "hf-hub")
TOKEN_FORMATS = ("npy", "npz", "bin")
_SUFFIXES = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npy": "npy",
    ".npz": "npz",
    ".bin": "bin",
}


def detect_format(path: str | os.PathLike) -> str:
    """The format of ``path`` from its suffix (minus a final ``.gz``); a folder is ``"hf-disk"``."""
    path = Path(path)
    if path.is_dir():
        return "hf-disk"
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    fmt = _SUFFIXES.get(Path(name).suffix.lower())
    if fmt is None:
        raise PosgeomError(
            f"cannot tell the format of {path} from its suffix; pass --format (format= in "
            f"Python) one of {list(TEXT_FORMATS + TOKEN_FORMATS)} or rename the file (.txt, "
            ".jsonl, .csv, .tsv, .parquet, .npy, .npz, .bin, optionally + .gz)"
        )
    return fmt


def check_exists(path: Path) -> None:
    if not path.exists():
        raise PosgeomError(f"corpus file {path} does not exist; check the path")


def open_binary(path: Path | str):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def is_stream(path: Path | str) -> bool:
    """Whether ``path`` is a pipe, a device or a socket (``/dev/stdin``, ``<(cat f)``): readable
    once, from its start, with no size."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_lines(
    path: Path | str,
    start: int = 0,
    stop: float = float("inf"),
    first_line: int = 1,
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> Iterator[tuple[int, str]]:
    """(1-based line number, decoded line with its newline); an undecodable line is a located
    error. ``start``/``stop``: the bytes ``[start, stop)`` (a shard), ``first_line``: the number
    of the line at ``start``. A line longer than :data:`MAX_LINE_BYTES` is refused.
    """
    codec = check_encoding(encoding, errors)
    utf8 = codec == "utf-8"
    shown = "UTF-8" if utf8 else codec
    lineno = first_line - 1
    try:
        with open_binary(path) as fh:
            if start:
                fh.seek(start)
            pos = start
            while pos < stop and (raw := fh.readline(MAX_LINE_BYTES + 1)):
                if len(raw) > MAX_LINE_BYTES:
                    raise PosgeomError(
                        f"{path}, line {lineno + 1}: longer than {MAX_LINE_BYTES >> 20} MiB "
                        "without a newline (a binary file, or old Mac CR line ends?); pass a text "
                        "corpus with one sequence per line"
                    )
                if utf8 and pos == 0 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                    pos += 3
                pos += len(raw)
                lineno += 1
                try:
                    yield lineno, raw.decode(codec, errors)
                except UnicodeDecodeError as exc:
                    raise PosgeomError(
                        f"{path}, line {lineno}: bytes cannot be decoded as {shown} ({exc.reason} "
                        f"at byte {exc.start}); pass its --text-encoding (e.g. latin-1), "
                        "--encoding-errors replace, or re-encode the file as UTF-8"
                    ) from None
    except (OSError, EOFError, zlib.error) as exc:
        hint = (
            "is it a damaged or non-gzip file with a .gz suffix?"
            if str(path).endswith(".gz")
            else "check the file"
        )
        reason = getattr(exc, "strerror", None) or exc
        raise PosgeomError(
            f"{path}: cannot read the file after line {lineno} ({reason}); {hint}"
        ) from exc


def spool(path: Path | str) -> Spooled:
    """Copy a stream (:func:`is_stream`) into a temporary file (bounded, strict UTF-8,
    decompressed) for a reader needing two passes; keep the returned object while it is read."""
    out = Spooled(tempfile.mkdtemp(prefix="posgeom-stream-"), "stream")
    with open(out, "w", encoding="utf-8", newline="") as fh:
        for _, line in read_lines(path):
            fh.write(line)
    return out


def read_text_lines(lines: Iterable[tuple[int, str]], text_field: int = 1) -> Iterator[str]:
    """The texts of a text file's ``(line number, line)`` pairs (:func:`read_lines`; a shard's
    range or the whole file): lines ended by ``\n``, ``\r\n`` or a lone ``\r`` (old Mac
    files), as text mode does; ``text_field > 1``: from that whitespace-separated field on
    (module docstring)."""
    for _, raw in lines:
        raw = raw.rstrip("\r\n")
        for line in raw.split("\r") if "\r" in raw else (raw,):
            yield text_from(line, text_field)


def read_jsonl(
    path: Path | str,
    column: str,
    lines: Iterable[tuple[int, str]] | None = None,
    **decoding: str,
) -> Iterator[str]:
    """Texts of field ``column``, from ``lines`` (a shard's lines) or the whole file."""
    for lineno, line in read_lines(path, **decoding) if lines is None else lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise PosgeomError(f"{path}, line {lineno}: invalid JSON ({reason})") from None
        if not isinstance(record, dict) or column not in record:
            keys = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise PosgeomError(
                f"{path}, line {lineno}: no field {column!r}; fields present: {keys}; "
                "pass text_column= one of them"
            )
        yield as_text(record[column], path, lineno, column)


def read_delimited(
    path: Path | str,
    column: str | None,
    delimiter: str,
    lines: Iterable[tuple[int, str]] | None = None,
    **decoding: str,
) -> Iterator[str]:
    """Texts of column ``column`` (default ``"text"``) of a CSV (``","``) or TSV (``"\\t"``,
    ``csv.QUOTE_NONE``) file: of the whole file, or of ``lines`` (a shard's numbered lines; the
    header is still read from the file's start)."""
    csv.field_size_limit(MAX_LINE_BYTES)  # a quote left open stops here, not at the file's end
    opts: dict[str, Any] = {"delimiter": delimiter, "strict": True}
    if delimiter == "\t":
        opts["quoting"] = csv.QUOTE_NONE
    current = [0]

    def feed(numbered: Iterable[tuple[int, str]]) -> Iterator[str]:
        for n, line in numbered:
            current[0] = n
            yield line

    reader = csv.reader(feed(read_lines(path, **decoding)), **opts)
    start = 1  # the first line of the record being read
    try:
        header = next(reader, None)
        if header is None:
            return
        idx = _column_index(path, header, column or "text")
        if lines is not None:
            reader = csv.reader(feed(lines), **opts)
        start = current[0] + 1
        for row in reader:
            if row and len(row) != len(header):
                raise PosgeomError(
                    f"{path}, line {current[0]}: {len(row)} fields, expected {len(header)}; "
                    f"check the delimiter ({delimiter!r}) and quoting"
                )
            if row:
                yield row[idx]
            start = current[0] + 1
    except csv.Error as exc:
        where = f"line {current[0]}" if start >= current[0] else f"lines {start}-{current[0]}"
        if "field limit" in str(exc):
            raise PosgeomError(
                f"{path}, line {start}: a quote opened there is not closed within "
                f"{MAX_LINE_BYTES >> 20} MiB (read on to line {current[0]}); close the quote "
                '(a quote inside a quoted field is written "")'
            ) from None
        hint = " (a quote opened and never closed?)" if "end of data" in str(exc) else ""
        raise PosgeomError(f"{path}, {where}: malformed {exc}{hint}; fix the quoting") from None


def _column_index(path: Path | str, header: list[str], column: str) -> int:
    check_column(path, column, header)
    if header.count(column) > 1:
        raise PosgeomError(
            f"{path}: the header names column {column!r} {header.count(column)} times; rename "
            "the columns so that the text column is unique"
        )
    return header.index(column)


def read_texts(
    path: str | os.PathLike,
    *,
    format: str | None = None,
    text_column: str | None = None,
    limit: int | None = None,
    split: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
    text_field: int = 1,
) -> Iterator[str]:
    """Stream the texts of a corpus lazily, one string per sequence (module docstring).

    ``format`` defaults to the suffix; ``text_column`` to ``"text"``; ``limit`` stops after that
    many records; ``split`` picks a split of a saved ``DatasetDict`` (or of a hub dataset, read
    only with ``format="hf-hub"``). The path and format are checked at once; column and decoding
    problems are raised while iterating.
    """
    check_path(path, "read_texts: path")
    decoding = {"encoding": encoding, "errors": errors}
    check_encoding(encoding, errors)
    check_int(text_field, "--text-field", 1)
    if limit is not None:  # an integer >= 0 ('3' or 2.5 was a raw TypeError or islice's)
        limit = check_int(limit, "read_texts: limit", 0)
    if format == "hf-hub":
        from posgeom.corpus._columns import read_hf_hub

        return islice(read_hf_hub(str(path), text_column or "text", split), limit)
    path = Path(path)
    check_exists(path)
    fmt = format or detect_format(path)
    if path.is_dir() and fmt != "hf-disk":
        raise PosgeomError(
            f"{path} is a folder, but format {fmt!r} reads one file; pass a file, or "
            "format='hf-disk' (--format hf-disk) for a saved datasets folder"
        )
    column = text_column or "text"
    if fmt == "text":
        it = read_text_lines(read_lines(path, **decoding), text_field)
    elif fmt == "jsonl":
        it = read_jsonl(path, column, **decoding)
    elif fmt in ("csv", "tsv"):
        it = read_delimited(path, text_column, "\t" if fmt == "tsv" else ",", **decoding)
    elif fmt == "parquet":
        from posgeom.corpus._parquet import read_parquet

        it = read_parquet(path, column)
    elif fmt == "hf-disk":
        from posgeom.corpus._columns import read_hf_disk

        it = read_hf_disk(path, column, split)
    elif fmt in TOKEN_FORMATS:
        raise PosgeomError(
            f"{printable(path)} holds token ids ({fmt}), not text; this reader tokenizes text: "
            "give a text file (or, for counting token ids, posgeom count / read_token_ids)"
        )
    else:
        raise PosgeomError(f"unknown format {fmt!r}; use one of {list(TEXT_FORMATS)}")
    return islice(it, limit)


def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
