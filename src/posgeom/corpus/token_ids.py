"""Token-id readers: pre-tokenized sequences in, validated 1-D ``int64`` arrays out.

Formats: an in-memory sequence of sequences or 2-D array; ``.npy`` (2-D, rows stripped of
``pad_id``; or 1-D, one stream split on ``separator_id``); ``.npz`` (the array under ``key``,
default ``"input_ids"`` or the only array; an optional ``"lengths"`` array cuts each row); ``.bin``
(a flat ``uint16``/``uint32`` token stream as nanoGPT writes it, memory-mapped, split on
``separator_id``). Files are parsed by :mod:`posgeom.io._arrayfiles` and every id is validated by
:func:`posgeom.corpus._counter.token_id_array`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.corpus._counter import check_source, token_id_array
from posgeom.corpus.readers import TOKEN_FORMATS, check_exists, detect_format
from posgeom.io._arrayfiles import read_npy, read_npz

__all__ = ["BIN_DTYPES", "bin_dtype", "read_token_ids"]

BIN_DTYPES = ("uint16", "uint32")  # the token streams nanoGPT writes


def bin_dtype(dtype: Any) -> np.dtype:
    """The dtype of a ``.bin`` token stream (``None``: ``uint16``), or one :class:`PosgeomError`
    for anything but ``uint16`` / ``uint32`` (a name, a NumPy dtype or type)."""
    try:
        dt = np.dtype(dtype or np.uint16)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt.name not in BIN_DTYPES:
        raise PosgeomError(
            f"token_dtype must be one of {', '.join(BIN_DTYPES)} (the dtype of a .bin token "
            f"stream), got {dtype!r}"
        )
    return dt


def _strip(row: Any, pad_id: int | None) -> np.ndarray:
    """``row`` as validated int64 ids, without ``pad_id``."""
    row = token_id_array(row if isinstance(row, np.ndarray) else list(row))
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
            yield token_id_array(np.asarray(stream[start:pos]))
            start = int(pos) + 1
    if start < len(stream):
        yield token_id_array(np.asarray(stream[start:]))


def _check_lengths(lengths: np.ndarray, arr: np.ndarray, where: Any) -> None:
    """An ``.npz``'s ``lengths``: one integer per row of a 2-D id array, ``0 <= l_i <= width``."""
    fix = "one length per row, each between 0 and the row width; fix or drop the lengths array"
    if arr.ndim != 2:
        raise PosgeomError(f"{where}: 'lengths' is given for a {arr.ndim}-D id array; {fix}")
    if lengths.dtype.kind not in "iu" or lengths.shape != (arr.shape[0],):
        raise PosgeomError(
            f"{where}: 'lengths' has shape {lengths.shape} and dtype {lengths.dtype}, not "
            f"({arr.shape[0]},) integers; {fix}"
        )
    if lengths.size and (lengths.min() < 0 or lengths.max() > arr.shape[1]):
        raise PosgeomError(
            f"{where}: 'lengths' run from {lengths.min()} to {lengths.max()}, outside 0.."
            f"{arr.shape[1]}; {fix}"
        )


def _array_ids(
    arr: np.ndarray,
    where: Any,
    pad_id: int | None,
    separator_id: int | None,
    lengths: np.ndarray | None = None,
) -> Iterator[np.ndarray]:
    if arr.dtype.kind not in "iuf":  # whole-number floats are accepted by the counter
        raise PosgeomError(f"{where}: token ids must be integers, got dtype {arr.dtype}")
    if lengths is not None:
        _check_lengths(lengths, arr, where)
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
    ``.bin`` path (module docstring). ``pad_id``: removed from 2-D rows. ``separator_id``: splits
    1-D streams into documents (dropped; required for ``.bin``). ``dtype``: of a ``.bin`` file
    (``uint16`` default). ``key``: the array in an ``.npz``. ``limit``: at most that many sequences.
    """
    check_source(source, "read_token_ids")
    if not isinstance(source, (str, os.PathLike)):
        if isinstance(source, np.ndarray):
            return islice(_array_ids(source, "array", pad_id, separator_id), limit)
        return islice((_strip(s, pad_id) for s in source), limit)
    path = Path(source)
    check_exists(path)
    fmt = format or detect_format(path)
    if fmt == "npy":
        it = _array_ids(read_npy(path, mmap=True), path, pad_id, separator_id)
    elif fmt == "npz":
        z = read_npz(path)
        names = list(z)
        name = key or (
            "input_ids" if "input_ids" in names else names[0] if len(names) == 1 else None
        )
        if name not in names:
            raise PosgeomError(f"{path}: arrays present: {names}; pass key= the array of token ids")
        lengths = z["lengths"] if "lengths" in names and name != "lengths" else None
        it = _array_ids(z[name], path, pad_id, separator_id, lengths)
    elif fmt == "bin":
        dt = bin_dtype(dtype)
        if separator_id is None:
            raise PosgeomError(
                f"{path}: a .bin token stream needs separator_id (the end-of-document id; "
                "50256 for GPT-2 / nanoGPT)"
            )
        size = path.stat().st_size
        if size % dt.itemsize:
            raise PosgeomError(
                f"{path}: size {size} bytes is not a multiple of {dt} ({dt.itemsize} bytes); "
                "is it a token stream of another dtype? save it as .npy (numpy.save) and count that"
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
