"""Batching for the layer-wise signal: token-id sequences in, padded batches with positions out.

A corpus item is a text (tokenized with special tokens added), a token-id sequence, a 2-D
token-id array (one row per sequence, no padding) or a mapping ``{"input_ids",
"attention_mask"}`` (masked-out tokens dropped). :func:`sequences` streams them as lists of ids;
:func:`cut_long` applies the one truncation option ``on_long``; :func:`pad_batch` right-pads a
batch and gives every token the corpus position it is counted at (or ``-1``).

Positions. ``pos[b, t] = t`` when special tokens are counted; otherwise special tokens get
``-1`` and the others the number of non-special tokens before them in their row. Padding and
positions ``>= n`` get ``-1``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Options, check_param

__all__ = [
    "ON_LONG",
    "PaddedBatch",
    "cut_long",
    "keep_counted",
    "pad_batch",
    "sequences",
    "token_rows",
    "tokenize_texts",
]

ON_LONG = ("truncate", "refuse")


def _numpy(value: Any) -> np.ndarray:
    """A tensor (any device) or array-like as a NumPy array."""
    return np.asarray(value.cpu() if hasattr(value, "cpu") else value)


def token_rows(item: Any) -> Iterator[list[int]]:
    """Token-id sequences from one non-text item (1-D sequence, 2-D batch, or a mapping)."""
    if isinstance(item, Mapping):
        if "input_ids" not in item:
            raise PosgeomError(
                "a mapping item must have 'input_ids' (and optionally 'attention_mask')"
            )
        ids = _numpy(item["input_ids"])
        mask = item.get("attention_mask")
        keep = np.ones(ids.shape, dtype=bool) if mask is None else _numpy(mask).astype(bool)
        for row, row_keep in zip(np.atleast_2d(ids), np.atleast_2d(keep), strict=True):
            yield [int(t) for t in row[row_keep]]
        return
    arr = _numpy(item)
    if arr.dtype.kind not in "iu" and arr.size:
        raise PosgeomError(
            f"expected texts or integer token ids, got an item of dtype {arr.dtype}; pass str "
            "texts, lists of token ids, or mappings with 'input_ids'"
        )
    if arr.ndim not in (1, 2):
        raise PosgeomError(f"token-id items must be 1-D or 2-D, got shape {arr.shape}")
    for row in np.atleast_2d(arr):
        yield [int(t) for t in row]


def sequences(
    items: Iterable[Any], tokenizer: Any, *, chunk: int, progress_bar: Any
) -> Iterator[list[int]]:
    """Token-id lists of ``items`` in order; texts are encoded ``chunk`` at a time with
    ``tokenizer`` (a :class:`~posgeom.models.loading.ModelTokenizer`, or ``None`` for ids)."""
    iterator = iter(items)
    while group := list(itertools.islice(iterator, chunk)):
        texts = [i for i, item in enumerate(group) if isinstance(item, str)]
        if texts and tokenizer is None:
            raise PosgeomError("texts need a tokenizer: pass tokenizer=... or token ids")
        encoded = (
            dict(zip(texts, tokenizer.encode([group[i] for i in texts]), strict=True))
            if texts
            else {}
        )
        for index, item in enumerate(group):
            if index in encoded:
                yield encoded[index]
            else:
                yield from token_rows(item)
        progress_bar.update(len(group))


def cut_long(
    batch: list[list[int]], limit: int | None, on_long: str
) -> tuple[list[list[int]], int]:
    """Sequences longer than ``limit`` tokens: cut to their first ``limit`` (``"truncate"``) or
    refused (``"refuse"``). Returns the batch and how many were cut."""
    check_param("on_long", on_long, [Options(set(ON_LONG))])
    if limit is None:
        return batch, 0
    n_long = sum(len(seq) > limit for seq in batch)
    if n_long and on_long == "refuse":
        raise PosgeomError(
            f"{n_long} sequences are longer than the model's {limit} positions (longest "
            f"{max(map(len, batch))} tokens); pass on_long='truncate' (--on-long truncate) to "
            f"cut them to their first {limit} tokens, or shorten the texts"
        )
    return ([seq[:limit] for seq in batch] if n_long else batch), n_long


@dataclass(frozen=True, eq=False)
class PaddedBatch:
    """Right-padded ``ids`` and ``mask`` and counted positions ``pos`` (``-1``: not counted),
    all int64 of shape ``(B, T)``."""

    ids: np.ndarray
    mask: np.ndarray
    pos: np.ndarray


def pad_batch(batch: list[list[int]], pad_id: int, special: np.ndarray, n: int) -> PaddedBatch:
    """Pad ``batch`` with ``pad_id`` and number its tokens (module docstring); ``special`` is
    the int64 array of ids not counted (empty: every token counted)."""
    lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
    length = int(lengths.max())
    flat = np.fromiter(itertools.chain.from_iterable(batch), dtype=np.int64, count=lengths.sum())
    mask = np.arange(length)[None, :] < lengths[:, None]
    ids = np.full((len(batch), length), pad_id, dtype=np.int64)
    ids[mask] = flat  # row-major order matches the concatenation
    if special.size:
        keep = ~np.isin(flat, special)
        ranks = np.cumsum(keep)  # over the whole batch; make it per row
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        before = np.concatenate(([0], ranks))[starts]  # non-special tokens in earlier rows
        index = ranks - 1 - np.repeat(before, lengths)
        values = np.where(keep & (index < n), index, -1)
    else:
        values = np.broadcast_to(np.arange(length), mask.shape)[mask]
        values = np.where(values < n, values, -1)
    pos = np.full((len(batch), length), -1, dtype=np.int64)
    pos[mask] = values
    return PaddedBatch(ids=ids, mask=mask.astype(np.int64), pos=pos)


def tokenize_texts(tok: Any, texts: Iterable[str], *, size: int = 1024) -> list[np.ndarray]:
    """Token ids of every text (int64 arrays) with ``tok.encode``, ``size`` texts at a time."""
    seqs: list[np.ndarray] = []
    iterator = iter(texts)
    while chunk := list(itertools.islice(iterator, size)):
        seqs.extend(np.asarray(ids, dtype=np.int64) for ids in tok.encode(chunk))
    return seqs


def keep_counted(seqs: list[np.ndarray], special: np.ndarray) -> list[np.ndarray]:
    """Sequences with at least one counted token (``special`` empty: any token counts)."""
    kept = [s for s in seqs if s.size and not (special.size and np.all(np.isin(s, special)))]
    if not kept:
        raise PosgeomError(
            "no sequences with ordinary tokens: the corpus is empty or every text is blank; "
            "check the text column"
        )
    return kept
