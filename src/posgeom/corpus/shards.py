"""Shard plans: a corpus cut into whole files or record ranges of line files.

A shard is a whole file, or (with ``shard_lines=m``, for the line formats, optionally ``.gz``)
the data records ``[k*m, (k+1)*m)`` of one file, stored as the byte range ``[start, stop)`` of
those records in the (decompressed) file. A record is one line, except in ``csv`` where a newline
ends a record only after an even number of ``"`` (RFC 4180); the ``csv``/``tsv`` header is not
data. Shard ``k`` is named ``"<path> lines a-b"`` (1-based file lines).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.corpus.readers import (
    TOKEN_FORMATS,
    check_exists,
    detect_format,
    open_binary,
    read_delimited,
    read_jsonl,
    read_lines,
    read_text_lines,
)

__all__ = [
    "LINE_FORMATS",
    "Shard",
    "check_shard_lines",
    "plan_shards",
    "shard_texts",
    "source_paths",
]

LINE_FORMATS = ("text", "jsonl", "csv", "tsv")


@dataclass(frozen=True)
class Shard:
    """One unit of work: a whole file (``start is None``) or a byte range of its records."""

    index: int
    path: str
    format: str
    start: int | None = None  # byte offset of the first record (decompressed stream)
    stop: int | None = None  # byte offset just past the last record
    first_line: int = 0  # 1-based file line of the first record (0 for whole files)
    last_line: int = 0

    @property
    def name(self) -> str:
        if self.start is None:
            return self.path
        return f"{self.path} lines {self.first_line}-{self.last_line}"


def _record_bounds(path: Path, fmt: str, m: int, chunk: int = 1 << 24) -> list[tuple[int, int]]:
    """``(byte offset, lines before it)`` at the data start, every ``m``-th record end, and EOF."""
    header = fmt in ("csv", "tsv")
    bounds = [] if header else [(0, 0)]
    records = -1 if header else 0  # data records completed so far (the header is record -1)
    base = nlines = quotes = 0
    try:
        with open_binary(path) as fh:
            while block := fh.read(chunk):
                a = np.frombuffer(block, dtype=np.uint8)
                nl = np.flatnonzero(a == 10)
                lines = nlines + np.arange(1, nl.size + 1)
                nlines += nl.size
                if fmt == "csv":  # a newline inside quotes does not end the record
                    q = quotes + np.cumsum(a == 34)
                    quotes = int(q[-1])
                    even = q[nl] % 2 == 0
                    nl, lines = nl[even], lines[even]
                rec = records + np.arange(1, nl.size + 1)
                cut = (rec >= 0) & (rec % m == 0)
                bounds += zip((nl[cut] + base + 1).tolist(), lines[cut].tolist(), strict=True)
                records += nl.size
                base += len(block)
                last = block[-1:]
    except (OSError, EOFError, zlib.error) as exc:
        raise PosgeomError(f"{path}: cannot read the file to plan shards ({exc})") from exc
    if base and last != b"\n":
        nlines += 1  # a last line without newline
    if bounds and bounds[-1][0] < base:
        bounds.append((base, nlines))
    return bounds


def source_paths(sources: Any) -> list[Path]:
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    if not isinstance(sources, (list, tuple)) or not all(
        isinstance(s, (str, os.PathLike)) for s in sources
    ):
        raise PosgeomError(f"pass the corpus files as a path or a list of paths, not {sources!r}")
    paths = [Path(s).expanduser().resolve() for s in sources]
    if not paths:
        raise PosgeomError("no sources given; pass one or more corpus files")
    for p in paths:
        check_exists(p)
    return paths


def shard_format(path: Path, fmt: str | None) -> str:
    fmt = fmt or detect_format(path)
    if fmt == "hf-hub" or fmt not in (*LINE_FORMATS, "parquet", "hf-disk", *TOKEN_FORMATS):
        raise PosgeomError(f"{path}: format {fmt!r} cannot be sharded; pass local files")
    return fmt


def check_shard_lines(shard_lines: Any) -> None:
    if shard_lines is not None:
        check_int(shard_lines, "shard_lines", 1)


def plan_shards(
    sources: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    shard_lines: int | None = None,
    format: str | None = None,
) -> list[Shard]:
    """Cut ``sources`` into shards (module docstring; ``shard_lines=None``: one per file); one
    pass over each line file. Files without data records give no shard."""
    check_shard_lines(shard_lines)
    shards: list[Shard] = []
    for path in source_paths(sources):
        fmt = shard_format(path, format)
        if shard_lines is None or fmt not in LINE_FORMATS:
            shards.append(Shard(len(shards), str(path), fmt))
            continue
        bounds = _record_bounds(path, fmt, shard_lines)
        for (b0, l0), (b1, l1) in pairwise(bounds):
            shards.append(Shard(len(shards), str(path), fmt, b0, b1, l0 + 1, l1))
    return shards


def shard_texts(
    shard: Shard,
    text_column: str | None = None,
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
    text_field: int = 1,
) -> Iterator[str]:
    """The texts of a line-range shard, as :func:`~posgeom.corpus.readers.read_texts` gives them
    (``encoding``, ``errors``, ``text_field`` as there)."""
    if shard.start is None or shard.stop is None:
        raise PosgeomError(f"{shard.name} is a whole-file shard; read it with read_texts")
    lines = read_lines(
        shard.path, shard.start, shard.stop, shard.first_line, encoding=encoding, errors=errors
    )
    if shard.format == "text":
        return read_text_lines(lines, text_field)
    if shard.format == "jsonl":
        return read_jsonl(shard.path, text_column or "text", lines)
    return read_delimited(shard.path, text_column, "\t" if shard.format == "tsv" else ",", lines)
