"""Texts of a Parquet file's column, read in bounded pieces.

A Parquet file can stand for far more text than it holds. The reader therefore:

1. checks, from the file's footer, every row group's chunk of the text column: no value longer
   than :data:`~posgeom.corpus._bounded.MAX_LINE_BYTES` (a chunk whose mean value is longer
   holds one), and at most :func:`~posgeom.io._inflate.inflation_limit` of its compressed size;
2. reads record batches of :data:`BATCH_ROWS` rows, string columns as dictionaries, so a caller
   that stops stops the reading;
3. refuses a decoded value longer than a text line, naming its rows.

A ``.parquet.gz`` file is first decompressed to a bounded temporary file
(:func:`~posgeom.io._inflate.gunzip_bounded`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom.corpus._bounded import MAX_LINE_BYTES, Spooled
from posgeom.corpus._columns import as_text, check_column, library_errors
from posgeom.io._inflate import INFLATION_RATIO, gunzip_bounded, inflation_limit

__all__ = ["BATCH_ROWS", "read_parquet"]

BATCH_ROWS = 1024
_UNCOMPRESSED = "write it again uncompressed (pyarrow.parquet.write_table(..., compression='none'))"
_LINE = "pass texts of one sequence each (split the longer ones)"


def _open(path: Path, column: str) -> Any:
    pq = require("pyarrow.parquet", "hf")
    pa = require("pyarrow", "hf")
    source: Any = path
    if path.name.endswith(".gz"):  # Parquet needs random access: a bounded copy on disk
        source = Spooled(tempfile.mkdtemp(prefix="posgeom-parquet-"), "table.parquet")
        with open(source, "wb") as fh:
            gunzip_bounded(path, fh, fix="gunzip it and pass the .parquet file")
    try:
        schema = pq.ParquetFile(source).schema_arrow
        check_column(path, column, schema.names)
        kind = schema.field(column).type  # strings as dictionaries; other types are refused
        strings = kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
        return pq.ParquetFile(source, read_dictionary=[column] if strings else None), source
    except PosgeomError:
        raise
    except Exception as exc:  # pyarrow's ArrowInvalid, OSError, ...
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise PosgeomError(f"{path} is not a readable Parquet file ({first}); check it") from None


def _check_chunks(pf: Any, column: str, path: Path) -> None:
    """Step 1 of the module docstring, from the footer of every row group."""
    meta = pf.metadata
    paths = [meta.schema.column(j).path for j in range(meta.num_columns)]
    leaves = [j for j, p in enumerate(paths) if p == column or p.startswith(f"{column}.")]
    for i, at in ((i, at) for i in range(meta.num_row_groups) for at in leaves):
        chunk = meta.row_group(i).column(at)
        size, packed = chunk.total_uncompressed_size, chunk.total_compressed_size
        where = f"{path}, row group {i}, column {column!r}"
        if chunk.num_values and size / chunk.num_values > MAX_LINE_BYTES:
            raise PosgeomError(
                f"{where}: {chunk.num_values} texts in {size} bytes, so one is longer than "
                f"{MAX_LINE_BYTES >> 20} MiB (the longest text a corpus may hold); {_LINE}"
            )
        if size > inflation_limit(packed):
            raise PosgeomError(
                f"{where}: {size} bytes from {packed} compressed, more than {INFLATION_RATIO} "
                f"times (a decompression bomb?); {_UNCOMPRESSED}"
            )


def _values(array: Any, where: str) -> tuple[list[Any], bool]:
    """The Python values of one batch's column, each distinct string decoded once, and whether
    they are all texts (a string column, nulls as ``""``)."""
    pc = require("pyarrow.compute", "hf")
    pa = require("pyarrow", "hf")
    dictionary = pa.types.is_dictionary(array.type)
    values = array.dictionary if dictionary else array
    texts = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    if texts:
        longest = pc.max(pc.binary_length(values)).as_py() or 0
        if longest > MAX_LINE_BYTES:
            raise PosgeomError(
                f"{where}: a text of {longest} bytes, longer than {MAX_LINE_BYTES >> 20} MiB "
                f"(the longest text a corpus may hold); {_LINE}"
            )
    if not dictionary:
        out = array.to_pylist()
    else:
        index = array.indices.fill_null(0).to_numpy(zero_copy_only=False)
        used, inverse = np.unique(index, return_inverse=True)
        decoded = values.take(pa.array(used)).to_pylist()
        out = [decoded[k] for k in inverse]
    for k in np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)):
        out[k] = "" if texts else None
    return out, texts


def read_parquet(path: Path, column: str) -> Iterator[str]:
    """The texts of ``column`` (module docstring): one string per row, ``None`` as empty."""
    pf, _copy = _open(path, column)  # the temporary copy (.parquet.gz) lives while this runs
    _check_chunks(pf, column, path)

    def rows() -> Iterator[str]:
        seen = 0
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=[column]):
            where = f"{path}, rows {seen} to {seen + batch.num_rows - 1}"
            values, texts = _values(batch.column(0), where)
            if texts:
                yield from values
            else:  # as_text refuses what is not text, naming its row
                yield from (
                    as_text(v, path, f"row {seen + k}", column) for k, v in enumerate(values)
                )
            seen += batch.num_rows

    yield from library_errors(rows(), path, "check the Parquet file (write it again)")
