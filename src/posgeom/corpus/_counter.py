"""The counting core: token-id validation, batching, and the running ``(position, token)`` counts.

Token ids (:func:`token_id_array`): integers, validated before any conversion: bools are
refused; floats only when every value is a whole number (``3.0`` is id 3); ids beyond int64 are
refused (never wrapped to negative). Ids must lie in ``[0, vocab_size)``, or, without a
vocabulary size, in ``[0, MAX_TOKEN_ID]`` (``2**24 - 1``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom.corpus._fingerprint import Fingerprint
from posgeom.corpus.readers import batches

log = logging.getLogger("posgeom.corpus.counting")
MAX_TOKEN_ID = 2**24 - 1
_INT64_MAX = np.iinfo(np.int64).max


def _too_large(value: Any) -> PosgeomError:
    return PosgeomError(
        f"token id {value} is too large (int64 holds at most {_INT64_MAX}); token ids are "
        "vocabulary indices: check the input"
    )


def token_id_array(values: Any, where: str = "token ids") -> np.ndarray:
    """``values`` (an array, or a flat list of Python numbers) as int64 ids, validated (module
    docstring); raises :class:`PosgeomError` naming the offending value."""
    arr = values if isinstance(values, np.ndarray) else None
    if arr is None:
        types = set(map(type, values))
        if bool in types or np.bool_ in types:
            raise PosgeomError(f"{where}: bool values are not token ids; pass integers")
        try:
            arr = np.array(values)
        except (TypeError, ValueError, OverflowError) as exc:
            raise PosgeomError(f"{where} must be integers ({exc})") from None
        if arr.ndim != 1:
            raise PosgeomError(f"{where}: each sequence must be a flat list of token ids")
    kind = arr.dtype.kind
    if kind == "O" and arr.size:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr.flat)
        if not ints:
            raise PosgeomError(
                f"sequences must hold integer token ids, got {type(arr.flat[0]).__name__} values"
            )
        big = max(arr.flat, key=abs)
        raise _too_large(big) if big >= 0 else PosgeomError(f"negative token id {big}")
    if kind == "b":
        raise PosgeomError(f"{where}: bool values are not token ids; pass integers")
    if kind == "u" and arr.size and arr.dtype.itemsize == 8 and int(arr.max()) > _INT64_MAX:
        raise _too_large(int(arr.max()))
    if kind == "f":
        if arr.size and not np.all(np.isfinite(arr)):
            raise PosgeomError(f"{where}: NaN or Inf is not a token id")
        frac = arr != np.floor(arr)
        if frac.any():
            raise PosgeomError(
                f"{where}: {float(arr[frac][0])!r} is not a whole number; token ids are integers"
            )
        if arr.size and max(abs(float(arr.max())), abs(float(arr.min()))) >= 2.0**63:
            raise _too_large(f"{float(arr.max()):.3g}")
    elif kind not in "iuO":
        raise PosgeomError(
            f"sequences must hold integer token ids, got dtype {arr.dtype}; tokenize texts first "
            "or use count_corpus"
        )
    return arr.astype(np.int64, copy=False).ravel()


def check_id_range(lo: int, hi: int, vocab_size: int | None) -> None:
    """Refuse ids outside ``[0, vocab_size)`` (``[0, MAX_TOKEN_ID]`` without a vocabulary)."""
    if lo < 0:
        raise PosgeomError(f"negative token id {lo}; token ids must be >= 0")
    if vocab_size is not None and hi >= vocab_size:
        raise PosgeomError(
            f"token id {hi} >= vocab_size {vocab_size}; pass the tokenizer's vocab_size (or None "
            "to infer it)"
        )
    if vocab_size is None and hi > MAX_TOKEN_ID:
        raise PosgeomError(
            f"token id {hi} exceeds {MAX_TOKEN_ID}, the largest id accepted without a vocabulary "
            "size; check the ids, or pass vocab_size= if the vocabulary really is that large"
        )


def flatten(batch: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate a batch of sequences: (flat int64 ids, int64 lengths), ids validated."""
    try:
        lengths = np.fromiter((len(s) for s in batch), dtype=np.int64, count=len(batch))
    except TypeError as exc:
        raise PosgeomError(
            f"sequences must be lists or arrays of integer token ids ({exc}); tokenize texts "
            "first or use count_corpus"
        ) from None
    if int(lengths.sum()) == 0:
        return np.zeros(0, dtype=np.int64), lengths
    if all(isinstance(s, np.ndarray) for s in batch):
        if any(s.ndim != 1 for s in batch):
            raise PosgeomError("each sequence must be a 1-D array of token ids (one per row)")
        return token_id_array(np.concatenate(batch)), lengths
    flat = token_id_array(list(chain.from_iterable(batch)))
    if flat.size != int(lengths.sum()):  # a nested list: [[1, 2]] as one sequence
        raise PosgeomError("each sequence must be a flat list of token ids, not nested lists")
    return flat, lengths


class Counter:
    """Running counts as sorted distinct keys ``tok * n + pos`` with int64 multiplicities; a
    buffer of more than ``flush_keys`` keys is reduced and merged into the sorted accumulator."""

    flush_keys = 1 << 22  # keys buffered before a merge (32 MiB of int64)

    def __init__(
        self,
        n: int,
        vocab_size: int | None,
        specials: np.ndarray | None,
        align: str,
        min_length: int,
        max_sequences: int | None,
    ):
        self.n, self.V = n, vocab_size
        self.specials = specials if specials is not None and specials.size else None
        self.align, self.min_length, self.max_sequences = align, min_length, max_sequences
        self.width = vocab_size or 0
        # keys fit 32 bits (half the memory, faster sorts) when n * vocab_size does
        small = vocab_size is not None and n * vocab_size <= 2**32
        self.key_dtype = np.dtype(np.uint32 if small else np.int64)
        self.keys = np.zeros(0, dtype=self.key_dtype)  # sorted distinct tok * n + pos
        self.values = np.zeros(0, dtype=np.int64)  # their counts
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        self.hasher = Fingerprint()
        self.n_sequences = 0
        self.longest = 0  # the longest counted sequence (special tokens removed)

    @property
    def done(self) -> bool:
        return self.max_sequences is not None and self.n_sequences >= self.max_sequences

    def add_flat(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        """Count one batch given as concatenated ids (int64) and per-sequence lengths (int64)."""
        key, _, _ = self.batch_keys(flat, lengths)
        if key.size:
            self.add_keys(key)

    def batch_keys(
        self, flat: np.ndarray, lengths: np.ndarray, *, with_sequence: bool = False
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """``(keys, sequence, kept)`` of one batch; updates ``n_sequences`` and the fingerprint.

        ``keys``: ``tok * n + pos`` of every counted token; ``sequence``: the index in the batch
        of each key's sequence (only ``with_sequence``, else None); ``kept``: boolean
        ``(len(lengths),)``, the sequences counted.
        """
        nb = lengths.size
        ids, lens2 = flat, lengths
        if self.specials is not None:
            special = np.isin(flat, self.specials)
            if special.any():
                seg = np.repeat(np.arange(nb), lengths)
                ids = flat[~special]
                lens2 = np.bincount(seg[~special], minlength=nb).astype(np.int64)
        kept = lens2 >= self.min_length
        if self.max_sequences is not None:
            room = self.max_sequences - self.n_sequences
            kept &= np.cumsum(kept) <= room
        n_kept = int(kept.sum())
        self.n_sequences += n_kept
        all_kept = n_kept == nb
        # fingerprint: [len, ids...] of each counted sequence, as read
        if all_kept:
            self.hasher.update(flat, lengths)
        elif n_kept:
            self.hasher.update(flat[np.repeat(kept, lengths)], lengths[kept])
        # positions within each (special-free) sequence: ends[s] - j or j - starts[s]
        if not all_kept:
            ids, lens2 = ids[np.repeat(kept, lens2)], lens2[kept]
        if ids.size == 0:
            return np.zeros(0, dtype=self.key_dtype), np.zeros(0, dtype=np.int64), kept
        self.longest = max(self.longest, int(lens2.max()))
        seq = np.repeat(np.flatnonzero(kept), lens2) if with_sequence else None
        ends = np.cumsum(lens2)
        at = np.arange(ids.size, dtype=np.int64)
        if self.align == "start":
            pos = at
            pos -= np.repeat(ends - lens2, lens2)
        else:
            pos = np.repeat(ends - 1, lens2)
            pos -= at
        tok = ids
        if int(lens2.max()) > self.n:
            inside = pos < self.n
            tok, pos = tok[inside], pos[inside]
            seq = None if seq is None else seq[inside]
        lo, hi = int(tok.min()), int(tok.max())
        check_id_range(lo, hi, self.V)
        if hi > (_INT64_MAX - self.n) // self.n:
            raise PosgeomError(f"token id {hi} is too large to count with max_positions={self.n}")
        self.width = max(self.width, hi + 1)
        key = tok.astype(self.key_dtype)  # a new array: ``tok`` may be the caller's buffer
        key *= self.n
        key += pos.astype(self.key_dtype, copy=False)
        return key, seq, kept

    def add_keys(self, key: np.ndarray) -> None:
        """Buffer the keys of one batch (merged into the running counts when the buffer is full)."""
        self.buffer.append(key)
        self.buffered += key.size
        if self.buffered > self.flush_keys:
            self.flush()

    def flush(self) -> None:
        """Merge the buffered keys into the sorted accumulator."""
        if not self.buffer:
            return
        keys, values = np.unique(np.concatenate(self.buffer), return_counts=True)
        self.buffer, self.buffered = [], 0
        if self.keys.size:
            keys = np.concatenate([self.keys, keys])
            values = np.concatenate([self.values, values])
            order = np.argsort(keys, kind="stable")  # two sorted runs: a linear merge
            keys, values = keys[order], values[order]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])  # runs of equal keys
            keys, values = keys[starts], np.add.reduceat(values, starts)
        self.keys, self.values = keys, values

    def result(self) -> sp.csr_matrix:
        """The counts as a canonical CSR matrix ``(n, width)`` int64."""
        self.flush()
        tok, pos = np.divmod(self.keys, self.n)
        # distinct (pos, tok) pairs sorted by (tok, pos): the stable COO -> CSR bucketing by row
        # leaves each row's columns ascending, so no duplicate summation or sort is needed
        counts = sp.coo_matrix(
            (self.values, (pos, tok)), shape=(self.n, self.width), dtype=np.int64
        ).tocsr()
        counts.sort_indices()  # a check only
        return counts


def check_source(source: Any, what: str) -> None:
    """Refuse, in one line, a corpus that is neither a path nor an iterable of sequences or texts
    (``None``, a number, a dict, bytes) before any iteration turns it into a ``TypeError``."""
    if isinstance(source, (bytes, Mapping)) or not isinstance(source, (str, os.PathLike, Iterable)):
        raise PosgeomError(
            f"{what} takes a corpus path, an array or an iterable of sequences, not a "
            f"{type(source).__name__}"
        )


def flat_batches(sequences: Iterable[Any], size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    check_source(sequences, "counting")
    return (flatten(batch) for batch in batches(sequences, size))


def run_count(
    batches: Iterable[tuple[np.ndarray, np.ndarray]],
    options: Any,
    *,
    counts_class: Any,
    counter_class: Any,
    progress: bool,
    tokenizer: dict[str, Any] | None,
    allow_empty: bool = False,
) -> Any:
    """Count ``batches`` of ``(flat ids, lengths)`` into ``counts_class`` with a
    ``counter_class`` (:class:`Counter`, or the bootstrap counter); ``options``: a validated
    :class:`~posgeom.corpus.options.CountOptions` (special ids already resolved)."""
    o = options
    recorded = {  # what shapes the counts (batch size, readers and replicates do not)
        "max_positions": int(o.max_positions),
        "vocab_size": None if o.vocab_size is None else int(o.vocab_size),
        "include_special": bool(o.include_special),
        "special_ids": sorted({int(i) for i in o.special_ids or ()}),
        "align": o.align,
        "min_length": int(o.min_length),
        "max_sequences": None if o.max_sequences is None else int(o.max_sequences),
    }
    specials = None if o.include_special else np.asarray(recorded["special_ids"], dtype=np.int64)
    n, vocab, most = (recorded[k] for k in ("max_positions", "vocab_size", "max_sequences"))
    args = (n, vocab, specials, o.align, recorded["min_length"], most)
    bootstrap = o.bootstrap_spec()
    counter = counter_class(*args) if bootstrap is None else counter_class(*args, **bootstrap)
    from posgeom._progress import progress_bar

    bar = progress_bar(unit="seq", desc="counting", disable=not progress)
    try:
        for flat, lengths in batches:
            counter.add_flat(flat, lengths)
            bar.update(lengths.size)
            if counter.done:
                break
    finally:
        bar.close()
    report = getattr(batches, "report", None)  # TextBatches: empty texts, NUL characters
    if report is not None:
        report()
    if counter.n_sequences == 0 and not allow_empty:
        raise PosgeomError(
            f"no sequences to count: the corpus is empty, or every sequence is shorter than "
            f"min_length={o.min_length} (after removing special tokens); check the input"
        )
    _check_longest(n, counter.longest, allow_empty)
    counts = counter.result()
    totals = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
    base = counts_class(
        counts=counts,
        totals=totals,
        n_sequences=counter.n_sequences,
        n_tokens=int(totals.sum()),
        options=recorded,
        tokenizer=tokenizer,
        fingerprint=counter.hasher.hexdigest(),
        n_empty=getattr(batches, "n_empty", 0),
    )
    return base if bootstrap is None else counter.finish(base)


EMPTY_POSITIONS_LIMIT = 1 << 16  # positions past the longest sequence allowed (and logged)


def _check_longest(n: int, longest: int, shard: bool) -> None:
    """Before the ``(n, V)`` counts are allocated: refuse ``n`` far past the longest sequence."""
    if n <= longest or shard:
        return
    if n > EMPTY_POSITIONS_LIMIT:
        raise PosgeomError(
            f"max_positions={n} but the longest sequence has {longest} tokens: positions "
            f"{longest} .. {n - 1} would be empty and their rows need {16 * n / 1e9:.1f} GB; use "
            f"max_positions={max(longest, 1)} or less (posgeom lengths suggests one)"
        )
    log.info(
        "positions %d .. %d hold no samples (the longest sequence has %d tokens); -n %d is enough",
        longest,
        n - 1,
        longest,
        max(longest, 1),
    )
