"""Corpus readers: texts or token ids in, lazy iterators out.

Text formats (:func:`read_texts`, one string per sequence):

===========  ====================================  =============================================
format       suffixes                              text taken from
===========  ====================================  =============================================
``text``     ``.txt`` ``.text``                    each line (trailing newline removed)
``jsonl``    ``.jsonl`` ``.ndjson``                field ``text_column`` (default ``"text"``)
``csv``      ``.csv``                              column ``text_column`` of the header row
``tsv``      ``.tsv``                              same, read with ``csv.QUOTE_NONE`` (SST-2)
``parquet``  ``.parquet`` ``.pq``                  column ``text_column``, row group by row group
``hf-disk``  folder from ``Dataset.save_to_disk``  column ``text_column`` of ``split``
``hf-hub``   only with ``format="hf-hub"``         ``load_dataset(path, streaming=True)``
===========  ====================================  =============================================

Any file format may be gzip-compressed with an extra ``.gz`` suffix (``train.tsv.gz``). Text is
decoded as strict UTF-8 line by line, so an undecodable byte is reported with its file and line.
A gzip-compressed Parquet file is decompressed into memory (Parquet needs random access).

Token-id formats (:func:`read_token_ids`, one 1-D ``int64`` array per sequence): an in-memory
sequence of sequences or 2-D array; ``.npy`` (2-D, rows stripped of ``pad_id``; or 1-D, one stream
split on ``separator_id``); ``.npz`` (the array under ``key``, default ``"input_ids"`` or the only
array; an optional ``"lengths"`` array cuts each row); ``.bin`` (a flat ``uint16``/``uint32`` token
stream as nanoGPT writes it, memory-mapped, split on ``separator_id``, e.g. GPT-2's ``50256``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require

__all__ = ["TEXT_FORMATS", "TOKEN_FORMATS", "detect_format", "read_texts", "read_token_ids"]

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
            f"cannot tell the format of {path} from its suffix; pass format= one of "
            f"{list(TEXT_FORMATS + TOKEN_FORMATS)} or rename the file (.txt, .jsonl, .csv, .tsv, "
            ".parquet, .npy, .npz, .bin, optionally + .gz)"
        )
    return fmt


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise PosgeomError(f"corpus file {path} does not exist; check the path")


def _open_binary(path: Path | str):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def _lines(
    path: Path | str, start: int = 0, stop: float = float("inf"), first_line: int = 1
) -> Iterator[tuple[int, str]]:
    """(1-based line number, decoded line with its newline); strict UTF-8 with a located error.

    ``start``/``stop`` restrict reading to the bytes ``[start, stop)`` (a shard of a file; for
    gzip the stream is decompressed forward to ``start``), ``first_line`` is the number of the
    line at ``start``.
    """
    lineno = first_line - 1
    try:
        with _open_binary(path) as fh:
            if start:
                fh.seek(start)
            pos = start
            while pos < stop and (raw := fh.readline()):
                pos += len(raw)
                lineno += 1
                try:
                    yield lineno, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise PosgeomError(
                        f"{path}, line {lineno}: bytes cannot be decoded as UTF-8 ({exc.reason} at "
                        f"byte {exc.start}); re-encode the file as UTF-8"
                    ) from None
    except (OSError, EOFError, zlib.error) as exc:
        raise PosgeomError(
            f"{path}: cannot read the file after line {lineno} ({exc}); is it a damaged or "
            "non-gzip file with a .gz suffix?"
        ) from exc


def _read_text(path: Path) -> Iterator[str]:
    for _, line in _lines(path):
        yield line.rstrip("\r\n")


def _read_jsonl(
    path: Path | str, column: str, lines: Iterable[tuple[int, str]] | None = None
) -> Iterator[str]:
    """Texts of field ``column``, from ``lines`` (a shard's lines) or the whole file."""
    for lineno, line in _lines(path) if lines is None else lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise PosgeomError(f"{path}, line {lineno}: invalid JSON ({exc})") from None
        if not isinstance(record, dict) or column not in record:
            keys = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise PosgeomError(
                f"{path}, line {lineno}: no field {column!r}; fields present: {keys}; "
                "pass text_column= one of them"
            )
        yield _as_text(record[column], path, lineno, column)


def _as_text(value: Any, path: Path, where: Any, column: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PosgeomError(
            f"{path}, {where}: column {column!r} holds {type(value).__name__}, not text; "
            "pass the text column (or read token ids with read_token_ids)"
        )
    return value


def _read_delimited(path: Path, column: str | None, delimiter: str) -> Iterator[str]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    quoting = {"quoting": csv.QUOTE_NONE} if delimiter == "\t" else {}
    current = [0]

    def feed() -> Iterator[str]:
        for n, line in _lines(path):
            current[0] = n
            yield line

    reader = csv.reader(feed(), delimiter=delimiter, **quoting)
    header = next(reader, None)
    if header is None:
        return
    column = column or "text"
    if column not in header:
        raise PosgeomError(
            f"{path}: no column {column!r}; columns present: {header}; "
            "pass text_column= one of them"
        )
    idx = header.index(column)
    try:
        for row in reader:
            if not row:
                continue
            if idx >= len(row):
                raise PosgeomError(
                    f"{path}, line {current[0]}: {len(row)} fields, expected {len(header)}; "
                    f"check the delimiter ({delimiter!r}) and quoting"
                )
            yield row[idx]
    except csv.Error as exc:
        raise PosgeomError(f"{path}, line {current[0]}: malformed {exc}") from None


def _read_parquet(path: Path, column: str) -> Iterator[str]:
    pq = require("pyarrow.parquet", "hf")
    source: Any = path
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            source = io.BytesIO(fh.read())
    pf = pq.ParquetFile(source)
    names = pf.schema_arrow.names
    if column not in names:
        raise PosgeomError(
            f"{path}: no column {column!r}; columns present: {names}; pass text_column= one of them"
        )
    for i in range(pf.num_row_groups):
        for value in pf.read_row_group(i, columns=[column]).column(0).to_pylist():
            yield _as_text(value, path, f"row group {i}", column)


def _hf_split(ds: Any, split: str | None, where: Any) -> Any:
    if hasattr(ds, "column_names") and not isinstance(ds.column_names, dict):
        return ds
    splits = list(ds.keys())
    if split is None and len(splits) == 1:
        split = splits[0]
    if split not in splits:
        raise PosgeomError(f"{where} has splits {splits}; pass split= one of them")
    return ds[split]


def _read_hf(ds: Any, column: str, where: Any) -> Iterator[str]:
    names = list(ds.column_names)
    if column not in names:
        raise PosgeomError(
            f"{where}: no column {column!r}; columns present: {names}; "
            "pass text_column= one of them"
        )
    for batch in ds.select_columns([column]).iter(batch_size=1000):
        for value in batch[column]:
            yield _as_text(value, Path(str(where)), "row", column)


def read_texts(
    path: str | os.PathLike,
    *,
    format: str | None = None,
    text_column: str | None = None,
    limit: int | None = None,
    split: str | None = None,
) -> Iterator[str]:
    """Stream the texts of a corpus lazily, one string per sequence.

    ``format`` defaults to the suffix (see the module table); ``text_column`` defaults to
    ``"text"`` for column formats; ``limit`` stops after that many records; ``split`` picks a split
    of a saved ``DatasetDict`` (or of a hub dataset). The path and format are checked at once;
    column and decoding problems are raised while iterating, as :class:`PosgeomError`.
    A Hugging Face hub dataset is read only with ``format="hf-hub"`` (``path`` is then its name).
    """
    if limit is not None and limit < 0:
        raise PosgeomError(f"limit must be >= 0, got {limit}")
    if format == "hf-hub":
        datasets = require("datasets", "hf")
        ds = datasets.load_dataset(str(path), split=split or "train", streaming=True)
        it: Iterable[str] = (
            _as_text(r.get(text_column or "text"), Path(str(path)), "row", text_column or "text")
            for r in ds
        )
        return islice(it, limit)
    path = Path(path)
    _check_exists(path)
    fmt = format or detect_format(path)
    column = text_column or "text"
    if fmt == "text":
        it = _read_text(path)
    elif fmt == "jsonl":
        it = _read_jsonl(path, column)
    elif fmt in ("csv", "tsv"):
        it = _read_delimited(path, text_column, "\t" if fmt == "tsv" else ",")
    elif fmt == "parquet":
        it = _read_parquet(path, column)
    elif fmt == "hf-disk":
        datasets = require("datasets", "hf")
        try:
            ds = datasets.load_from_disk(str(path))
        except FileNotFoundError as exc:
            raise PosgeomError(
                f"{path} is not a saved Hugging Face dataset ({exc}); pass a folder written by "
                "Dataset.save_to_disk"
            ) from exc
        it = _read_hf(_hf_split(ds, split, path), column, path)
    elif fmt in TOKEN_FORMATS:
        raise PosgeomError(f"{path} holds token ids ({fmt}); read it with read_token_ids")
    else:
        raise PosgeomError(f"unknown format {fmt!r}; use one of {list(TEXT_FORMATS)}")
    return islice(it, limit)


# ----------------------------------------------------------------------------- token ids
def _strip(row: np.ndarray, pad_id: int | None) -> np.ndarray:
    row = np.asarray(row, dtype=np.int64)
    return row if pad_id is None else row[row != pad_id]


def _rows(arr: np.ndarray, pad_id: int | None, lengths: np.ndarray | None) -> Iterator[np.ndarray]:
    for i in range(arr.shape[0]):
        row = arr[i] if lengths is None else arr[i, : int(lengths[i])]
        yield _strip(row, pad_id)


def _split_stream(
    stream: np.ndarray, separator_id: int, chunk: int = 1 << 24
) -> Iterator[np.ndarray]:
    """Split a 1-D stream on ``separator_id`` (separators dropped), chunk by chunk."""
    start = 0
    for lo in range(0, len(stream), chunk):
        for pos in np.flatnonzero(np.asarray(stream[lo : lo + chunk]) == separator_id) + lo:
            yield np.asarray(stream[start:pos], dtype=np.int64)
            start = int(pos) + 1
    if start < len(stream):
        yield np.asarray(stream[start:], dtype=np.int64)


def _check_int(arr: np.ndarray, where: Any) -> None:
    if arr.dtype.kind not in "iu":
        raise PosgeomError(f"{where}: token ids must be integers, got dtype {arr.dtype}")


def _array_ids(
    arr: np.ndarray,
    where: Any,
    pad_id: int | None,
    separator_id: int | None,
    lengths: np.ndarray | None = None,
) -> Iterator[np.ndarray]:
    _check_int(arr, where)
    if arr.ndim == 2:
        return _rows(arr, pad_id, lengths)
    if arr.ndim == 1:
        if separator_id is None:
            return iter([_strip(arr, pad_id)])
        return _split_stream(arr, separator_id)
    raise PosgeomError(f"{where}: expected a 1-D or 2-D array of token ids, got shape {arr.shape}")


def read_token_ids(
    source: str | os.PathLike | np.ndarray | Iterable[Iterable[int]],
    *,
    format: str | None = None,
    pad_id: int | None = None,
    separator_id: int | None = None,
    dtype: str | np.dtype | None = None,
    key: str | None = None,
    limit: int | None = None,
) -> Iterator[np.ndarray]:
    """Stream pre-tokenized sequences as 1-D ``int64`` arrays.

    ``source``: an in-memory sequence of sequences / 2-D array, or a ``.npy``, ``.npz`` or nanoGPT
    ``.bin`` path (see the module docstring). ``pad_id``: every occurrence of it is removed from
    2-D rows (left or right padding), so padding is never counted. ``separator_id``: splits 1-D
    streams into documents; the separator itself is dropped; required for ``.bin``. ``dtype``: of
    a ``.bin`` file (``uint16`` default, ``uint32`` for vocabularies over 65535). ``key``: the
    array in an ``.npz``. ``limit``: stop after that many sequences.
    """
    if not isinstance(source, (str, os.PathLike)):
        if isinstance(source, np.ndarray):
            return islice(_array_ids(source, "array", pad_id, separator_id), limit)
        return islice((_strip(s, pad_id) for s in source), limit)
    path = Path(source)
    _check_exists(path)
    fmt = format or detect_format(path)
    if fmt == "npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            raise PosgeomError(
                f"{path}: cannot load without pickle ({exc}); save token ids as an integer array"
            ) from exc
        it = _array_ids(arr, path, pad_id, separator_id)
    elif fmt == "npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                names = list(z.files)
                name = key or (
                    "input_ids" if "input_ids" in names else names[0] if len(names) == 1 else None
                )
                if name not in names:
                    raise PosgeomError(
                        f"{path}: arrays present: {names}; pass key= the array of token ids"
                    )
                arr = z[name]
                lengths = z["lengths"] if "lengths" in names and name != "lengths" else None
        except ValueError as exc:
            if isinstance(exc, PosgeomError):
                raise
            raise PosgeomError(f"{path}: cannot load without pickle ({exc})") from exc
        it = _array_ids(arr, path, pad_id, separator_id, lengths)
    elif fmt == "bin":
        dt = np.dtype(dtype or np.uint16)
        if dt not in (np.dtype(np.uint16), np.dtype(np.uint32)):
            raise PosgeomError(f"{path}: dtype must be uint16 or uint32, got {dt}")
        if separator_id is None:
            raise PosgeomError(
                f"{path}: a .bin token stream needs separator_id (the end-of-document id; "
                "50256 for GPT-2 / nanoGPT)"
            )
        size = path.stat().st_size
        if size % dt.itemsize:
            raise PosgeomError(
                f"{path}: size {size} bytes is not a multiple of {dt} ({dt.itemsize} bytes); "
                "pass the dtype the file was written with"
            )
        if size == 0:
            return iter([])
        it = _split_stream(np.memmap(path, dtype=dt, mode="r"), separator_id)
    else:
        raise PosgeomError(
            f"{path}: format {fmt!r} is not a token-id format {list(TOKEN_FORMATS)}; "
            "read texts with read_texts and a tokenizer"
        )
    return islice(it, limit)
