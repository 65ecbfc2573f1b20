"""Column values as texts (:func:`as_text`: a string, ``None`` as empty, anything else refused),
and Hugging Face datasets as corpora: a folder written by ``Dataset.save_to_disk`` (``hf-disk``)
and a hub dataset streamed by name (``hf-hub``), one string per row of the text column.

The ``datasets`` and ``pyarrow`` libraries' own exceptions (a truncated ``.arrow`` file, a
loading script, which posgeom never runs) become one :class:`~posgeom._errors.PosgeomError`
naming the folder and the fix, while opening or iterating (:func:`library_errors`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, require

__all__ = ["as_text", "check_column", "library_errors", "read_hf_disk", "read_hf_hub"]

_SAVED = "pass a folder written by Dataset.save_to_disk (save it again if it was cut short)"
_SCRIPT = (
    "posgeom never runs a dataset's loading script; pass its data files (.jsonl, .csv, "
    ".parquet) or a folder written by Dataset.save_to_disk"
)


def as_text(value: Any, path: Path, where: Any, column: str) -> str:
    """``value`` of ``column`` at ``where`` in ``path`` as text (``None``: empty)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PosgeomError(
            f"{path}, {where}: column {column!r} holds {type(value).__name__}, not text; "
            "pass the text column (or read token ids with read_token_ids)"
        )
    return value


def _failure(where: Any, exc: Exception, fix: str) -> PosgeomError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
    if "script" in first.lower():
        return PosgeomError(f"{where}: a dataset with a loading script ({first}); {_SCRIPT}")
    return PosgeomError(f"{where} cannot be read ({type(exc).__name__}: {first}); {fix}")


def library_errors(texts: Iterable[str], where: Any, fix: str) -> Iterator[str]:
    """``texts``, with a library's exception while iterating turned into one line (``fix``: what
    to do); posgeom's own errors pass unchanged."""
    try:
        yield from texts
    except PosgeomError:
        raise
    except Exception as exc:
        raise _failure(where, exc, fix) from exc


def _split(ds: Any, split: str | None, where: Any) -> Any:
    if hasattr(ds, "column_names") and not isinstance(ds.column_names, dict):
        return ds
    splits = list(ds.keys())
    if split is None and len(splits) == 1:
        split = splits[0]
    if split not in splits:
        raise PosgeomError(f"{where} has splits {splits}; pass split= one of them")
    return ds[split]


def check_column(where: Any, column: str, names: list[str]) -> None:
    """Refuse a text ``column`` that is not among the columns ``names`` of ``where``."""
    if column not in names:
        raise PosgeomError(
            f"{where}: no column {column!r}; columns present: {names}; "
            "pass text_column= one of them"
        )


def _rows(ds: Any, column: str, where: Any) -> Iterator[str]:
    check_column(where, column, list(ds.column_names))
    for batch in ds.select_columns([column]).iter(batch_size=1000):
        for value in batch[column]:
            yield as_text(value, Path(str(where)), "row", column)


def read_hf_disk(path: Path, column: str, split: str | None) -> Iterator[str]:
    """The texts of a saved dataset folder (``split``: of a saved ``DatasetDict``)."""
    datasets = require("datasets", "hf")
    try:
        ds = datasets.load_from_disk(str(path))
    except FileNotFoundError as exc:
        raise PosgeomError(
            f"{path} is not a saved Hugging Face dataset ({exc}); pass a folder written by "
            "Dataset.save_to_disk"
        ) from exc
    except Exception as exc:  # a truncated .arrow file, a damaged state.json, ...
        raise _failure(path, exc, _SAVED) from exc
    return library_errors(_rows(_split(ds, split, path), column, path), path, _SAVED)


def read_hf_hub(name: str, column: str, split: str | None) -> Iterator[str]:
    """The texts of a hub dataset, streamed (from the local cache unless downloads are on)."""
    datasets = require("datasets", "hf")
    fix = "check the dataset name, or pass its data files"
    try:
        ds = datasets.load_dataset(name, split=split or "train", streaming=True)
    except Exception as exc:
        raise _failure(name, exc, fix) from exc
    rows = (as_text(r.get(column), Path(name), "row", column) for r in ds)
    return library_errors(rows, name, fix)
