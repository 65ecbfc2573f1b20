"""Position-token counts ``C[i, t]``: how often token ``t`` appears at position ``i``.

For sequences ``s`` (token-id lists) and ``n = max_positions``::

    C[i, t] = #{ s : len(s) > i and s[pos_i] == t },   i = 0 .. n-1,  t = 0 .. V-1
    pos_i   = i               (align="start": position 0 is the first token)
    pos_i   = len(s) - 1 - i  (align="end":   position 0 is the last token)

``C`` is a ``scipy.sparse.csr_matrix`` of shape ``(n, V)``, dtype ``int64``; ``totals[i] = sum_t
C[i, t]`` is the number of sequences long enough to reach position ``i``. Tokens past ``n`` are
truncated (the start of a sequence is kept for ``align="start"``, its end for ``align="end"``).

Conventions:

- **Special tokens** (``include_special=False``): the ids in ``special_ids`` are *removed from the
  sequence before positions are assigned*, so the first ordinary token sits at position 0 (not 1,
  as it would if ``[CLS]`` were merely skipped). ``min_length`` applies to the sequence after
  removal.
- **Padding** is never counted: tokenizers run without padding, and token-id readers strip
  ``pad_id``.
- **Filtering**: sequences shorter than ``min_length`` are skipped; ``max_sequences`` stops after
  that many counted sequences (later input is not read).
- **Fingerprint**: SHA-256 over the counted sequences, in order, each written as its length then its
  ids (little-endian int64, before special-token removal and truncation). It does not depend on
  ``batch_size``. A merge's fingerprint is ``sha256("merge:" + a + ":" + b)`` (order-dependent).
- Streaming: input is consumed ``batch_size`` sequences at a time, each batch as one flat int64 id
  array plus lengths. Every counted token becomes an integer key ``tok * n + pos``; keys are
  buffered and, once the buffer holds more than about 4M of them, reduced by sorting (distinct keys
  and their multiplicities) and merged into a sorted running total, which becomes the CSR matrix at
  the end. Memory is bounded by the number of distinct (position, token) pairs plus the buffer,
  not by the corpus size.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError

__all__ = ["PositionCounts", "count_corpus", "count_positions"]

_KIND = "position_counts"


@dataclass(frozen=True, eq=False)
class PositionCounts:
    """Sparse position-token counts with their provenance.

    Attributes
    ----------
    counts : ``csr_matrix`` ``(max_positions, vocab_size)`` int64, ``counts[i, t]`` = C[i, t].
    totals : ``(max_positions,)`` int64, row sums of ``counts`` (samples per position).
    n_sequences : number of sequences counted.
    n_tokens : number of tokens counted (``totals.sum()``; truncated tokens are not included).
    options : every option that shapes the counts (max_positions, vocab_size, include_special,
        special_ids, align, min_length, max_sequences).
    tokenizer : the tokenizer's ``identity`` dict, or None for pre-tokenized input.
    fingerprint : SHA-256 hex digest of the counted token-id stream (see the module docstring).
    """

    counts: sp.csr_matrix
    totals: np.ndarray
    n_sequences: int
    n_tokens: int
    options: dict[str, Any] = field(default_factory=dict)
    tokenizer: dict[str, Any] | None = None
    fingerprint: str = ""

    @property
    def max_positions(self) -> int:
        return int(self.counts.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.counts.shape[1])

    def check_tokenizer(self, tokenizer: Any) -> None:
        """Raise if ``tokenizer`` is not the one these counts were made with.

        Compares the vocabulary size with the counts' width and, when both are recorded, the
        vocabulary hashes (a path may differ: the same tokenizer file can live anywhere).
        """
        identity = getattr(tokenizer, "identity", None) or {}
        size = getattr(tokenizer, "vocab_size", None)
        if size is not None and int(size) != self.vocab_size:
            raise PosgeomError(
                f"the counts have a vocabulary of {self.vocab_size} but the tokenizer has {size}; "
                "recount the corpus with this tokenizer, or use the tokenizer the counts were made "
                f"with ({(self.tokenizer or {}).get('name', 'unknown')})"
            )
        ours = (self.tokenizer or {}).get("vocab_sha256")
        theirs = identity.get("vocab_sha256")
        if ours and theirs and ours != theirs:
            raise PosgeomError(
                "the tokenizer's vocabulary differs from the one the counts were made with (same "
                f"size {self.vocab_size}, different tokens); recount with this tokenizer"
            )

    # ------------------------------------------------------------------ merge
    def merge(self, other: PositionCounts) -> PositionCounts:
        """Counts of two shards added; refuses shards counted differently (says what differs).

        Compared: ``max_positions``, every option, and the tokenizer identity except its ``name``
        (the same tokenizer file may sit at different paths); ``vocab_size`` unless it was inferred
        (``options["vocab_size"] is None``), in which case the narrower matrix is padded.
        """
        if not isinstance(other, PositionCounts):
            raise PosgeomError(f"can only merge PositionCounts, got {type(other).__name__}")
        if self.max_positions != other.max_positions:
            raise PosgeomError(
                f"cannot merge counts with max_positions {self.max_positions} and "
                f"{other.max_positions}; count both shards with the same max_positions"
            )
        for what, a, b in (
            ("options", self.options, other.options),
            ("tokenizer", self.tokenizer or {}, other.tokenizer or {}),
        ):
            diff = sorted(
                k
                for k in set(a) | set(b)
                if a.get(k) != b.get(k) and not (what == "tokenizer" and k == "name")
            )
            if diff:
                detail = ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in diff)
                raise PosgeomError(
                    f"cannot merge counts whose {what} differ ({detail}); count both shards "
                    "the same way"
                )
        a, b = self.counts, other.counts
        if a.shape[1] != b.shape[1]:
            if self.options.get("vocab_size") is not None:
                raise PosgeomError(
                    f"cannot merge counts with vocab sizes {a.shape[1]} and {b.shape[1]}"
                )
            width = max(a.shape[1], b.shape[1])  # inferred vocabularies: pad the smaller one
            a, b = a.copy(), b.copy()
            a.resize((a.shape[0], width))
            b.resize((b.shape[0], width))
        counts = (a + b).tocsr()
        counts.sort_indices()
        fp = hashlib.sha256(f"merge:{self.fingerprint}:{other.fingerprint}".encode()).hexdigest()
        return PositionCounts(
            counts=counts,
            totals=self.totals + other.totals,
            n_sequences=self.n_sequences + other.n_sequences,
            n_tokens=self.n_tokens + other.n_tokens,
            options=dict(self.options),
            tokenizer=self.tokenizer,
            fingerprint=fp,
        )

    __add__ = merge

    # ------------------------------------------------------------------ save / load
    def save(
        self, path: str | os.PathLike, *, format: str | None = None, overwrite: bool = True
    ) -> Path:
        """Save as one artifact file (``.npz`` or ``.safetensors``, metadata inside), atomically;
        ``overwrite=False`` refuses an existing file."""
        from posgeom.artifacts import save_artifact

        meta = {
            "n_sequences": self.n_sequences,
            "n_tokens": self.n_tokens,
            "options": self.options,
            "tokenizer": self.tokenizer,
            "fingerprint": self.fingerprint,
            **self._extra_metadata(),
        }
        arrays = {"counts": self.counts, "totals": self.totals, **self._extra_arrays()}
        return save_artifact(
            path, arrays, meta, kind=self._artifact_kind, format=format, overwrite=overwrite
        )

    # a subclass (BootstrapCounts) stores more: its kind, arrays, metadata and fields from them
    _artifact_kind: ClassVar[str] = _KIND

    def _extra_arrays(self) -> dict[str, Any]:
        return {}

    def _extra_metadata(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _extra_fields(cls, arrays: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
        return {}

    @classmethod
    def load(cls, path: str | os.PathLike) -> PositionCounts:
        """Load counts saved by :meth:`save`, verifying checksums and that totals are row sums.

        A file of bootstrap counts (``posgeom count --bootstrap``) loads as
        :class:`~posgeom.corpus.bootstrap.BootstrapCounts`, a subclass.
        """
        from posgeom.artifacts import load_artifact, read_sidecar

        if cls is PositionCounts and read_sidecar(path).get("kind") == "bootstrap_counts":
            from posgeom.corpus.bootstrap import BootstrapCounts

            return BootstrapCounts.load(path)

        arrays, meta = load_artifact(path, kind=cls._artifact_kind)
        counts = sp.csr_matrix(arrays["counts"], dtype=np.int64)
        totals = np.asarray(arrays["totals"], dtype=np.int64)
        if not np.array_equal(np.asarray(counts.sum(axis=1)).ravel(), totals):
            raise PosgeomError(f"{path}: totals are not the row sums of counts; re-create it")
        return cls(
            counts=counts,
            totals=totals,
            n_sequences=int(meta["n_sequences"]),
            n_tokens=int(meta["n_tokens"]),
            options=meta["options"],
            tokenizer=meta["tokenizer"],
            fingerprint=meta["fingerprint"],
            **cls._extra_fields(arrays, meta),
        )


# ---------------------------------------------------------------------------- counting core
def _flatten(batch: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate a batch of sequences: (flat int64 ids, int64 lengths)."""
    lengths = np.fromiter((len(s) for s in batch), dtype=np.int64, count=len(batch))
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), lengths
    if isinstance(batch[0], np.ndarray):
        flat = np.concatenate([np.asarray(s).ravel() for s in batch])
        if flat.dtype.kind not in "iu":
            raise PosgeomError(f"token ids must be integers, got dtype {flat.dtype}")
        return flat.astype(np.int64, copy=False), lengths
    try:
        flat = np.fromiter(chain.from_iterable(batch), dtype=np.int64, count=total)
    except (TypeError, ValueError) as exc:
        raise PosgeomError(
            f"sequences must be lists or arrays of integer token ids ({exc}); tokenize texts first "
            "or use count_corpus"
        ) from exc
    return flat, lengths


def _fingerprint_stream(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[len_0, ids_0..., len_1, ids_1..., ...]`` as little-endian int64 (one copy of the ids)."""
    m = lengths.size
    out = np.empty(ids.size + m, dtype="<i8")
    # slot of each length: its sequence's start in ``ids`` plus the lengths written before it
    len_at = np.cumsum(lengths) - lengths + np.arange(m, dtype=np.int64)
    out[len_at] = lengths
    is_id = np.ones(out.size, dtype=bool)
    is_id[len_at] = False
    out[is_id] = ids
    return out


def _unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and how often each occurs (``np.unique(return_counts=True)``)."""
    keys = np.sort(keys)
    first = np.empty(keys.size, dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return keys[starts], np.diff(np.append(starts, keys.size))


class _Counter:
    """Running counts as sorted distinct keys ``tok * n + pos`` with int64 multiplicities.

    Each batch appends its keys to a buffer; once the buffer holds more than ``flush_keys`` keys
    it is reduced (sort, run lengths) and merged into the sorted accumulator, so memory stays
    bounded by the number of distinct (position, token) pairs plus the buffer.
    """

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
        self.hasher = hashlib.sha256()
        self.n_sequences = 0

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
            self.hasher.update(_fingerprint_stream(flat, lengths).data)
        elif n_kept:
            self.hasher.update(
                _fingerprint_stream(flat[np.repeat(kept, lengths)], lengths[kept]).data
            )
        # positions within each (special-free) sequence: ends[s] - j or j - starts[s]
        if not all_kept:
            ids, lens2 = ids[np.repeat(kept, lens2)], lens2[kept]
        if ids.size == 0:
            return np.zeros(0, dtype=self.key_dtype), np.zeros(0, dtype=np.int64), kept
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
        if lo < 0:
            raise PosgeomError(f"negative token id {lo}; token ids must be >= 0")
        if self.V is not None and hi >= self.V:
            raise PosgeomError(
                f"token id {hi} >= vocab_size {self.V}; pass the tokenizer's vocab_size (or None "
                "to infer it)"
            )
        if hi > (np.iinfo(np.int64).max - self.n) // self.n:
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
        keys, values = _unique_counts(np.concatenate(self.buffer))
        self.buffer, self.buffered = [], 0
        if self.keys.size:
            keys = np.concatenate([self.keys, keys])
            values = np.concatenate([self.values, values])
            order = np.argsort(keys, kind="stable")  # two sorted runs: a linear merge
            keys, values = keys[order], values[order]
            first = np.empty(keys.size, dtype=bool)
            first[:1] = True
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
            starts = np.flatnonzero(first)
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


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _flat_batches(sequences: Iterable[Any], size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for batch in _batches(sequences, size):
        yield _flatten(batch)


def _encoded_batches(
    tok: Any, texts: Iterable[str], size: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Tokenized batches as (flat int64 ids, int64 lengths), in input order."""
    encode_arrays = getattr(tok, "encode_batch_arrays", None)  # HFTokenizer
    for batch in _batches(texts, size):
        yield (
            encode_arrays(batch) if encode_arrays is not None else _flatten(tok.encode_batch(batch))
        )


def _count(
    batches: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    max_positions: int,
    vocab_size: int | None,
    include_special: bool,
    special_ids: Iterable[int],
    align: str,
    min_length: int,
    max_sequences: int | None,
    batch_size: int,
    progress: bool,
    tokenizer: dict[str, Any] | None,
    bootstrap: dict[str, Any] | None = None,
) -> PositionCounts:
    if not isinstance(max_positions, (int, np.integer)) or max_positions < 1:
        raise PosgeomError(f"max_positions must be a positive integer, got {max_positions!r}")
    if align not in ("start", "end"):
        raise PosgeomError(f"align must be 'start' or 'end', got {align!r}")
    if vocab_size is not None and vocab_size < 1:
        raise PosgeomError(f"vocab_size must be positive or None, got {vocab_size!r}")
    if min_length < 0 or batch_size < 1 or (max_sequences is not None and max_sequences < 1):
        raise PosgeomError(
            f"need min_length >= 0, batch_size >= 1, max_sequences >= 1 or None; got "
            f"{min_length}, {batch_size}, {max_sequences}"
        )
    specials = sorted({int(i) for i in special_ids})
    args = (
        int(max_positions),
        vocab_size,
        None if include_special else np.asarray(specials, dtype=np.int64),
        align,
        int(min_length),
        max_sequences,
    )
    if bootstrap is None:
        counter = _Counter(*args)
    else:  # Poisson-bootstrap replicates counted in the same pass (posgeom.corpus.bootstrap)
        from posgeom.corpus.bootstrap import BootstrapCounter

        counter = BootstrapCounter(*args, **bootstrap)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(unit="seq", desc="counting")
    try:
        for flat, lengths in batches:
            counter.add_flat(flat, lengths)
            if bar is not None:
                bar.update(lengths.size)
            if counter.done:
                break
    finally:
        if bar is not None:
            bar.close()
    if counter.n_sequences == 0:
        raise PosgeomError(
            f"no sequences to count: the corpus is empty, or every sequence is shorter than "
            f"min_length={min_length} (after removing special tokens); check the input"
        )
    counts = counter.result()
    totals = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
    options = {
        "max_positions": int(max_positions),
        "vocab_size": vocab_size,
        "include_special": bool(include_special),
        "special_ids": specials,
        "align": align,
        "min_length": int(min_length),
        "max_sequences": max_sequences,
    }
    base = PositionCounts(
        counts=counts,
        totals=totals,
        n_sequences=counter.n_sequences,
        n_tokens=int(totals.sum()),
        options=options,
        tokenizer=tokenizer,
        fingerprint=counter.hasher.hexdigest(),
    )
    return base if bootstrap is None else counter.finish(base)


def _bootstrap(
    replicates: int | None, seed: int, stream: int, scheme: str
) -> dict[str, Any] | None:
    if replicates is None:
        return None
    return {"replicates": replicates, "seed": seed, "stream": stream, "scheme": scheme}


def count_positions(
    sequences: Iterable[Any],
    *,
    max_positions: int,
    vocab_size: int | None = None,
    include_special: bool = True,
    special_ids: Iterable[int] = (),
    align: str = "start",
    min_length: int = 1,
    max_sequences: int | None = None,
    batch_size: int = 1024,
    progress: bool = False,
    bootstrap: int | None = None,
    bootstrap_seed: int = 0,
    bootstrap_stream: int = 0,
    bootstrap_scheme: str = "half",
    tokenizer: Any = None,
) -> PositionCounts:
    """Count token ids per position (see the module docstring for the formula and conventions).

    ``sequences``: an iterable of token-id sequences (lists, tuples or 1-D integer arrays), consumed
    lazily. ``vocab_size=None`` infers ``max id + 1`` (or takes ``tokenizer``'s). ``tokenizer``:
    the posgeom tokenizer that made the sequences, whose ``identity`` is recorded with the counts.
    Returns :class:`PositionCounts`.

    ``bootstrap=B`` also counts ``B`` bootstrap replicates in the same pass (sequence weights of
    ``bootstrap_scheme`` "half" or "poisson" from ``bootstrap_seed`` and ``bootstrap_stream``)
    and returns a
    :class:`~posgeom.corpus.bootstrap.BootstrapCounts`; see :mod:`posgeom.corpus.bootstrap`.
    """
    if tokenizer is not None and vocab_size is None:
        vocab_size = int(tokenizer.vocab_size)
    return _count(
        _flat_batches(sequences, batch_size),
        max_positions=max_positions,
        vocab_size=vocab_size,
        include_special=include_special,
        special_ids=special_ids,
        align=align,
        min_length=min_length,
        max_sequences=max_sequences,
        batch_size=batch_size,
        progress=progress,
        tokenizer=None if tokenizer is None else dict(tokenizer.identity),
        bootstrap=_bootstrap(bootstrap, bootstrap_seed, bootstrap_stream, bootstrap_scheme),
    )


def count_corpus(
    source: str | os.PathLike | Iterable[str] | np.ndarray,
    tokenizer: Any = None,
    *,
    max_positions: int,
    format: str | None = None,
    text_column: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    pad_id: int | None = None,
    separator_id: int | None = None,
    token_dtype: str | None = None,
    vocab_size: int | None = None,
    include_special: bool = True,
    special_ids: Iterable[int] | None = None,
    align: str = "start",
    min_length: int = 1,
    max_sequences: int | None = None,
    batch_size: int = 1024,
    progress: bool = False,
    bootstrap: int | None = None,
    bootstrap_seed: int = 0,
    bootstrap_stream: int = 0,
    bootstrap_scheme: str = "half",
) -> PositionCounts:
    """Read, tokenize in batches and count a corpus, streaming.

    ``source``: a corpus path (any :func:`~posgeom.corpus.readers.read_texts` format, or token ids:
    ``.npy``/``.npz``/``.bin``), or an iterable of texts. ``tokenizer``: anything
    :func:`~posgeom.corpus.tokenize.load_tokenizer` accepts; needed for texts, optional for token
    ids (then it only supplies ``vocab_size``, ``special_ids`` and the identity). An unfitted word
    tokenizer (``"word"``) is first fitted on the same corpus (one extra pass). ``vocab_size`` and
    ``special_ids`` default to the tokenizer's. Reader options: ``format``, ``text_column``,
    ``split``, ``limit`` (records read), ``pad_id``, ``separator_id``, ``token_dtype``. Counting
    options are those of :func:`count_positions` (``bootstrap``, ``bootstrap_seed``,
    ``bootstrap_stream`` and ``bootstrap_scheme`` included).
    """
    from posgeom.corpus.readers import TOKEN_FORMATS, detect_format, read_texts, read_token_ids
    from posgeom.corpus.tokenize import WordLevelTokenizer, load_tokenizer

    is_path = isinstance(source, (str, os.PathLike))
    fmt = (format or detect_format(source)) if is_path and format != "hf-hub" else format
    tok = load_tokenizer(tokenizer) if tokenizer is not None else None
    if isinstance(source, np.ndarray) or fmt in TOKEN_FORMATS:
        batches: Iterable[tuple[np.ndarray, np.ndarray]] = _flat_batches(
            read_token_ids(
                source,
                format=fmt,
                pad_id=pad_id,
                separator_id=separator_id,
                dtype=token_dtype,
                limit=limit,
            ),
            batch_size,
        )
    else:
        if tok is None:
            raise PosgeomError(
                "a text corpus needs a tokenizer: pass tokenizer= a tokenizer.json, "
                "a folder, 'word', or a transformers model name"
            )

        def texts() -> Iterable[str]:
            if is_path:
                return read_texts(
                    source, format=fmt, text_column=text_column, limit=limit, split=split
                )
            return islice(source, limit)

        if isinstance(tok, WordLevelTokenizer) and not tok.fitted:
            if not is_path and iter(source) is source:  # one-shot iterator: keep it for 2 passes
                source = list(source)
            tok.fit(texts())
        batches = _encoded_batches(tok, texts(), batch_size)
    if tok is not None:
        vocab_size = tok.vocab_size if vocab_size is None else vocab_size
        special_ids = tok.special_ids if special_ids is None else special_ids
    return _count(
        batches,
        max_positions=max_positions,
        vocab_size=vocab_size,
        include_special=include_special,
        special_ids=special_ids or (),
        align=align,
        min_length=min_length,
        max_sequences=max_sequences,
        batch_size=batch_size,
        progress=progress,
        tokenizer=None if tok is None else tok.identity,
        bootstrap=_bootstrap(bootstrap, bootstrap_seed, bootstrap_stream, bootstrap_scheme),
    )
