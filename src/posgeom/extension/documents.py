"""The documents ``extend`` reads and measures on: token-id documents of the corpus paths (a
plain-text file is one document, a record format one document per record, token-id files one per
row), the held-out split of each document, the windows measured, and the per-position estimate of
the documents' starts. Shapes: a document is a 1-D int64 array of token ids."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "corpus_paths",
    "measured_windows",
    "position_estimate",
    "read_documents",
    "split_heldout",
]

_RECORD_FORMATS = ("jsonl", "csv", "tsv", "parquet", "hf-disk")


def _format(path: Path) -> str:
    from posgeom.corpus.readers import detect_format

    try:
        return detect_format(path)
    except PosgeomError:
        return "text"  # no known suffix (.tex, .md, ...): plain text


def read_documents(
    paths: Sequence[str | os.PathLike],
    encode: Callable[[list[str]], list[list[int]]] | None,
    decoding: Mapping[str, Any] | None = None,
) -> list[np.ndarray]:
    """Token-id documents of ``paths`` (module docstring); ``encode``: texts -> ids (with
    ``reads_raw_bytes`` true, plain-text files are their bytes, unchanged); ``decoding``: the
    text readers' ``encoding``, ``errors`` and ``text_field``."""
    from posgeom.corpus._decoding import check_decoding, decode_document
    from posgeom.corpus.readers import check_exists, open_binary, read_texts
    from posgeom.corpus.token_ids import read_token_ids

    decoding = check_decoding(**(decoding or {}))  # before any file is read
    docs: list[np.ndarray] = []
    for raw in paths:
        path = Path(raw)
        check_exists(path)
        fmt = _format(path)
        if fmt in ("npy", "npz", "bin"):
            docs += [np.asarray(d, dtype=np.int64) for d in read_token_ids(path)]
            continue
        if encode is None:
            raise PosgeomError(
                f"{path} is text but there is no tokenizer: pass a Hugging Face model, "
                "--tokenizer, or token ids (.npy)"
            )
        if fmt in _RECORD_FORMATS:
            texts = list(read_texts(path, format=fmt, **(decoding or {})))
        elif getattr(encode, "reads_raw_bytes", False):  # a byte-level model's own input
            with open_binary(path) as fh:
                docs.append(np.frombuffer(fh.read(), dtype=np.uint8).astype(np.int64))
            continue
        else:
            with open_binary(path) as fh:  # newlines as Python's text mode reads them
                texts = [decode_document(fh.read(), **(decoding or {}))]
        docs += [np.asarray(ids, dtype=np.int64) for ids in encode(texts) if len(ids)]
    if not docs:
        raise PosgeomError("the corpus holds no text; pass non-empty files")
    return docs


def position_estimate(docs: list[np.ndarray], target_length: int, *, seed: int = 0) -> Any:
    """The recommended estimate of the per-position geometry of the documents' first
    ``n = min(L, longest document)`` tokens (position 0: a document's first token), pooled into
    128 log-spaced buckets when ``n > 1024``. Meaningful where documents have a start (records,
    prompts), flat for windows cut from running text."""
    from posgeom.corpus.counting import count_positions
    from posgeom.estimators import estimate_geometry

    n = min(int(target_length), max(d.size for d in docs))
    counts = count_positions(docs, max_positions=n)
    return estimate_geometry(counts, pool=None if n <= 1024 else "log:128", seed=seed)


def corpus_paths(corpus: Any) -> list[str | os.PathLike]:
    """``corpus`` as a non-empty list of paths, or a one-line refusal."""
    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else corpus
    if not isinstance(paths, (list, tuple)) or not paths:
        raise PosgeomError(
            f"extend: corpus must be a file or a list of files, not {type(corpus).__name__}"
        )
    if not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise PosgeomError("extend: every corpus entry must be a file path")
    return list(paths)


def split_heldout(docs: list[np.ndarray], fraction: float) -> tuple[list, list]:
    if not 0 < fraction < 1:
        raise PosgeomError(f"heldout_fraction must be in (0, 1), got {fraction}")
    cut = [round(d.size * (1 - fraction)) for d in docs]
    return [d[:c] for d, c in zip(docs, cut, strict=True)], [
        d[c:] for d, c in zip(docs, cut, strict=True)
    ]


def measured_windows(docs: list[np.ndarray], length: int, max_windows: int) -> list[np.ndarray]:
    starts = [(i, s) for i, d in enumerate(docs) for s in range(0, d.size - length + 1, length)]
    if not starts:
        raise PosgeomError(
            f"no held-out text is {length} tokens long; give longer held-out text (--heldout) "
            "or a larger --heldout-fraction"
        )
    pick = np.unique(np.linspace(0, len(starts) - 1, min(max_windows, len(starts))).astype(int))
    return [docs[starts[k][0]][starts[k][1] : starts[k][1] + length] for k in pick]
