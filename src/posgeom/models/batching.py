"""Batching for the layer-wise signal: token-id sequences in, padded batches with positions out.

:func:`sequences` streams corpus items (texts, token-id sequences, 2-D token-id arrays, mappings
``{"input_ids", "attention_mask"}``) as lists of ids; :func:`cut_long` applies ``on_long``;
:func:`pad_batch` right-pads a batch and gives every token the corpus position it is counted at.

Batch size. A batch holds at most ``batch_size`` sequences and at most :func:`token_budget`
padded tokens, so that the forward pass's buffers stay within a tenth of the weights (at least
64 MiB) for a model of any size; the per-position sums do not depend on the grouping.

Positions. ``pos[b, t] = t`` when special tokens are counted; otherwise special tokens get
``-1`` and the others the number of non-special tokens before them in their row. Padding and
positions ``>= n`` get ``-1``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Options, check_param
from posgeom.corpus.readers import batches

__all__ = [
    "ON_LONG",
    "PaddedBatch",
    "cut_long",
    "keep_counted",
    "pad_batch",
    "sequences",
    "token_batches",
    "token_budget",
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
    items: Iterable[Any], encode: Any, *, chunk: int, progress_bar: Any = None
) -> Iterator[list[int]]:
    """Token-id lists of ``items`` in order; texts are encoded ``chunk`` at a time with
    ``encode`` (texts -> id lists: :meth:`~posgeom.models.loading.ModelTokenizer.encode`, or
    ``None`` for ids only); ``progress_bar`` counts the items."""
    for group in batches(items, chunk):
        texts = [i for i, item in enumerate(group) if isinstance(item, str)]
        if texts and encode is None:
            raise PosgeomError("texts need a tokenizer: pass tokenizer=... or token ids")
        encoded = dict(zip(texts, encode([group[i] for i in texts]), strict=True)) if texts else {}
        for index, item in enumerate(group):
            if index in encoded:
                yield encoded[index]
            else:
                yield from token_rows(item)
        if progress_bar is not None:
            progress_bar.update(len(group))


#: the share of the weights' bytes one forward pass's buffers may take, and its floor (bytes)
ACTIVATION_SHARE, MIN_BATCH_BYTES = 0.1, 64 * 2**20
_WIDTHS = ("hidden_size", "d_model", "n_embd", "dim")
_INNER = ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "encoder_ffn_dim", "hidden_dim")


def _config_int(config: Any, names: Sequence[str]) -> int | None:
    values = [getattr(config, name, None) for name in names]
    ints = [int(v) for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return ints[0] if ints else None


def token_budget(model: Any) -> int:
    """Padded tokens one forward pass may hold: ``max(ACTIVATION_SHARE * W, MIN_BATCH_BYTES) /
    c`` (at least 1), with ``W`` the weights' bytes and the bytes per token

        c = 2 * ((L + 1) * d * s + 3 * f * 4 + 2 * d * 4),

    ``L`` blocks of width ``d`` and MLP width ``f`` (the configuration's; ``f = 4 d`` when it
    names none) in a dtype of ``s`` bytes: the ``L + 1`` hidden states a pass returns, a block's
    MLP buffers in float32 (CPU matmuls of half-precision weights), the float32 accumulation,
    doubled for the allocator and attention (measured: 1.17B Llama in bfloat16, 1.7 x the
    first three terms)."""
    from posgeom.encodings._hf import text_config
    from posgeom.models.layermap import LAYER_COUNT_FIELDS

    config = text_config(getattr(model, "config", None))
    params = list(model.parameters())
    weights = sum(p.numel() * p.element_size() for p in params)
    item = params[0].element_size() if params else 4
    width = _config_int(config, _WIDTHS) or 768
    layers = max((_config_int(config, (name,)) or 0 for name in LAYER_COUNT_FIELDS), default=0)
    inner = _config_int(config, _INNER) or 4 * width
    per_token = 2 * ((max(layers, 1) + 1) * width * item + 3 * inner * 4 + 2 * width * 4)
    return max(1, int(max(ACTIVATION_SHARE * weights, MIN_BATCH_BYTES) // per_token))


def token_batches(
    stream: Iterable[list[int]], batch_size: int, max_tokens: int, limit: int | None
) -> Iterator[list[list[int]]]:
    """Consecutive groups of ``stream`` with at most ``batch_size`` sequences and at most
    ``max_tokens`` padded tokens (``len(group) * longest``, lengths cut to ``limit``); a
    sequence longer than ``max_tokens`` alone is a group of its own."""
    batch: list[list[int]] = []
    longest = 0
    for seq in stream:
        length = len(seq) if limit is None else min(len(seq), limit)
        wider = max(longest, length)
        if batch and (len(batch) >= batch_size or (len(batch) + 1) * wider > max_tokens):
            yield batch
            batch, wider = [], length
        batch.append(seq)
        longest = wider
    if batch:
        yield batch


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
    return [
        np.asarray(ids, dtype=np.int64)
        for chunk in batches(texts, size)
        for ids in tok.encode(chunk)
    ]


def keep_counted(seqs: list[np.ndarray], special: np.ndarray) -> list[np.ndarray]:
    """Sequences with at least one counted token (``special`` empty: any token counts)."""
    kept = [s for s in seqs if s.size and not (special.size and np.all(np.isin(s, special)))]
    if not kept:
        raise PosgeomError(
            "no sequences with ordinary tokens: the corpus is empty or every text is blank; "
            "check the text column"
        )
    return kept
