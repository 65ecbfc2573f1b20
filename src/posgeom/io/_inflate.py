"""Decompression bounded by the compressed input (no decompression bombs).

Deflate reaches a ratio of about 1032 : 1 (a 3 MB file can stand for 3 GB). posgeom inflates at
most

    inflation_limit(c) = max(INFLATION_FLOOR, INFLATION_RATIO * c)        bytes, c = compressed bytes

per compressed member (an ``.npz`` member, a ``.parquet.gz`` file, a Parquet column chunk) and
for all the members of an ``.npz`` together (``c`` the file's size): 64 MiB whatever the ratio,
64 times the compressed size above that. A larger member or file is refused, before any
allocation where the size is declared (``.npz``, Parquet), after reading the limit where it is
not (gzip).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from posgeom._errors import PosgeomError

__all__ = ["INFLATION_FLOOR", "INFLATION_RATIO", "gunzip_bounded", "inflation_limit"]

INFLATION_RATIO = 64
INFLATION_FLOOR = 64 << 20
_PIECE = 1 << 20


def inflation_limit(compressed_bytes: int) -> int:
    """The most bytes a member of ``compressed_bytes`` compressed bytes may inflate to."""
    return max(INFLATION_FLOOR, INFLATION_RATIO * max(int(compressed_bytes), 0))


def gunzip_bounded(path: str | os.PathLike, out: BinaryIO, *, fix: str) -> int:
    """Decompress the gzip file ``path`` into ``out`` in 1 MiB pieces; return the bytes written.

    Raises :class:`PosgeomError` (``fix``: what to do instead) once more than
    :func:`inflation_limit` of the file's size would be written, and for a damaged gzip stream.
    """
    path = Path(path)
    limit = inflation_limit(path.stat().st_size)
    written = 0
    for piece in _pieces(path):
        written += len(piece)
        if written > limit:
            raise PosgeomError(
                f"{path} inflates past {limit >> 20} MiB, more than {INFLATION_RATIO} times its "
                f"compressed size (a decompression bomb?); {fix}"
            )
        out.write(piece)
    return written


def _pieces(path: Path) -> Iterator[bytes]:
    try:
        with gzip.open(path, "rb") as fh:
            while piece := fh.read(_PIECE):
                yield piece
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise PosgeomError(
            f"{path}: cannot decompress it ({reason}); is it a damaged or non-gzip file with a "
            ".gz suffix?"
        ) from exc
