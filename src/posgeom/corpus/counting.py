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
  sequence before positions are assigned* (the first ordinary token sits at position 0);
  ``min_length`` applies after removal.
- **Padding** is never counted (tokenizers run without padding, readers strip ``pad_id``).
- **Filtering**: sequences shorter than ``min_length`` are skipped; ``max_sequences`` stops after
  that many counted sequences.
- **Fingerprint**: an order-dependent hash of the counted sequences' ids as read
  (:mod:`posgeom.corpus._fingerprint`); a merge ``a + b`` has the fingerprint of one pass over
  ``a`` then ``b``.
- Streaming (:mod:`posgeom.corpus._counter`): memory is bounded by the distinct (position,
  token) pairs plus a buffer; an ``n`` far past the longest sequence is refused.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from posgeom._errors import ArtifactError, PosgeomError
from posgeom._validation import is_integer
from posgeom.corpus._consistency import check_counts_file
from posgeom.corpus._counter import Counter, check_source, flat_batches, run_count
from posgeom.corpus._fingerprint import merge_fingerprints
from posgeom.corpus._texts import corpus_batches
from posgeom.corpus.options import BOOTSTRAP, COUNT, READER, CountOptions, takes_count_options

__all__ = ["PositionCounts", "count_corpus", "count_positions"]

_KIND = "position_counts"
_SUBCLASSES: dict[str, Any] = {}  # artifact kind -> subclass (BootstrapCounts), on definition


@dataclass(frozen=True, eq=False)
class PositionCounts:
    """Sparse position-token counts with their provenance.

    Attributes
    ----------
    counts : ``csr_matrix`` ``(max_positions, vocab_size)`` int64, ``counts[i, t]`` = C[i, t].
    totals : ``(max_positions,)`` int64, row sums of ``counts`` (samples per position).
    n_sequences, n_tokens : sequences and (untruncated) tokens counted.
    options : every option that shapes the counts.
    tokenizer : the tokenizer's ``identity`` dict, or None for pre-tokenized input.
    fingerprint : hex digest of the counted token-id stream (module docstring).
    n_empty : empty or whitespace-only texts skipped before tokenization.
    """

    counts: sp.csr_matrix
    totals: np.ndarray
    n_sequences: int
    n_tokens: int
    options: dict[str, Any] = field(default_factory=dict)
    tokenizer: dict[str, Any] | None = None
    fingerprint: str = ""
    n_empty: int = 0

    @property
    def max_positions(self) -> int:
        return int(self.counts.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.counts.shape[1])

    def first_positions(self, n: int) -> PositionCounts:
        """The counts of positions ``0 .. n-1`` (``1 <= n <= max_positions``), everything the
        counts carry cut alike."""
        if not (is_integer(n) and 1 <= n <= self.max_positions):
            raise PosgeomError(
                f"-n {n} is outside 1..{self.max_positions}, the positions these counts hold; "
                "choose a smaller -n or count more positions"
            )
        totals = self.totals[:n]
        fields = {
            "counts": self.counts[:n],
            "totals": totals,
            "n_tokens": int(totals.sum()),
            "options": {**self.options, "max_positions": n},
        }
        return dataclasses.replace(self, **fields, **self._first_positions_extra(n))

    def _first_positions_extra(self, n: int) -> dict[str, Any]:
        return {}

    def check_tokenizer(self, tokenizer: Any) -> None:
        """Raise if ``tokenizer`` is not the one these counts were made with (vocabulary size,
        and the vocabulary hashes when both are recorded)."""
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
        """Counts of two shards added; refuses shards counted differently (says what differs):
        ``max_positions``, every option, the tokenizer identity but its ``name``, and
        ``vocab_size`` unless it was inferred (then the narrower matrix is padded)."""
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
        fp = merge_fingerprints(self.fingerprint, self.n_sequences, other.fingerprint)
        return PositionCounts(
            counts=counts,
            totals=self.totals + other.totals,
            n_sequences=self.n_sequences + other.n_sequences,
            n_tokens=self.n_tokens + other.n_tokens,
            n_empty=self.n_empty + other.n_empty,
            options=dict(self.options),
            tokenizer=self.tokenizer,
            fingerprint=fp,
        )

    __add__ = merge

    # ------------------------------------------------------------------ save / load
    def save(
        self,
        path: str | os.PathLike,
        *,
        format: str | None = None,
        overwrite: bool = True,
        provenance: dict[str, Any] | None = None,
    ) -> Path:
        """Save as one artifact file (``.npz`` or ``.safetensors``, metadata inside), atomically;
        ``overwrite=False`` refuses an existing file. ``provenance``: kept in the metadata."""
        from posgeom.io.artifacts import save_artifact

        meta = {
            **({} if provenance is None else {"provenance": provenance}),
            "n_sequences": self.n_sequences,
            "n_tokens": self.n_tokens,
            "options": self.options,
            "tokenizer": self.tokenizer,
            "fingerprint": self.fingerprint,
            "n_empty": self.n_empty,
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _SUBCLASSES[cls._artifact_kind] = cls

    @classmethod
    def load(cls, path: str | os.PathLike) -> PositionCounts:
        """Load counts saved by :meth:`save`, verifying checksums and consistency; bootstrap
        counts load as :class:`~posgeom.corpus.bootstrap.BootstrapCounts`."""
        from posgeom.io.artifacts import load_artifact, read_sidecar

        sub = _SUBCLASSES.get(read_sidecar(path).get("kind"))
        if cls is PositionCounts and sub is not None:
            return sub.load(path)

        arrays, meta = load_artifact(path, kind=cls._artifact_kind)
        for name in ("counts", "totals"):  # NaN once read as "counts are negative"
            raw = getattr(arrays.get(name), "data", arrays.get(name))
            if raw is not None and np.asarray(raw).dtype.kind not in "iu":
                raise ArtifactError(f"{path}: {name} are not integers ({raw.dtype}); re-create it")
        try:
            counts = sp.csr_matrix(arrays["counts"], dtype=np.int64)
            totals = np.asarray(arrays["totals"], dtype=np.int64)
            fields = {
                "n_sequences": int(meta["n_sequences"]),
                "n_tokens": int(meta["n_tokens"]),
                "options": dict(meta["options"]),
                "tokenizer": meta["tokenizer"],
                "fingerprint": str(meta["fingerprint"]),
                "n_empty": int(meta.get("n_empty", 0)),
            }
            extra = cls._extra_fields(arrays, meta)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{path} is not a complete counts file ({type(exc).__name__}: {exc}); re-create it"
            ) from None
        check_counts_file(path, counts, totals, fields)  # bounds, sums, recorded shape
        return cls(counts=counts, totals=totals, **fields, **extra)


def _run(
    batches: Iterable[tuple[np.ndarray, np.ndarray]], options: CountOptions, tok: Any, **kw: Any
) -> PositionCounts:
    """``run_count`` into :class:`PositionCounts` (with the bootstrap counter when asked for);
    ``vocab_size`` and ``special_ids`` left at None are taken from the tokenizer ``tok``."""
    if tok is not None:
        special = options.special_ids
        options = dataclasses.replace(
            options,
            vocab_size=int(tok.vocab_size) if options.vocab_size is None else options.vocab_size,
            special_ids=tuple(getattr(tok, "special_ids", ()) or ())
            if special is None
            else special,
        )
    counter_class: Any = Counter
    if options.bootstrap is not None:  # replicates counted in the same pass
        counter_class = _SUBCLASSES["bootstrap_counts"].counter_class
    return run_count(
        batches,
        options,
        counts_class=PositionCounts,
        counter_class=counter_class,
        tokenizer=None if tok is None else dict(tok.identity),
        **kw,
    )


@takes_count_options(COUNT, BOOTSTRAP)
def count_positions(
    sequences: Iterable[Any],
    *,
    options: CountOptions,
    tokenizer: Any = None,
    progress: bool = False,
) -> PositionCounts:
    """Count token ids per position (see the module docstring for the formula and conventions).

    ``sequences``: an iterable of token-id sequences (lists, tuples or 1-D integer arrays), consumed
    lazily. ``tokenizer``: the posgeom tokenizer that made the sequences, whose ``identity`` is
    recorded with the counts (and whose vocabulary size and special ids fill ``vocab_size`` and
    ``special_ids`` left at None). Keyword options: the ``count`` and ``bootstrap`` fields of
    :class:`~posgeom.corpus.options.CountOptions` (``max_positions`` required). Returns
    :class:`PositionCounts` (with ``bootstrap=B``, :mod:`~posgeom.corpus.bootstrap`'s result).
    """
    return _run(flat_batches(sequences, options.batch_size), options, tokenizer, progress=progress)


@takes_count_options(READER, COUNT, BOOTSTRAP)
def count_corpus(
    source: str | os.PathLike | Iterable[str] | np.ndarray,
    tokenizer: Any = None,
    *,
    options: CountOptions,
    progress: bool = False,
    allow_empty: bool = False,
) -> PositionCounts:
    """Read, tokenize in batches and count a corpus, streaming.

    ``source``: a corpus path (a :func:`~posgeom.corpus.readers.read_texts` format, or token ids
    ``.npy``/``.npz``/``.bin``) or an iterable of texts. ``tokenizer``: what
    :func:`~posgeom.corpus.tokenize.load_tokenizer` takes (optional for token ids: it supplies
    ``vocab_size``, ``special_ids`` and the identity); an unfitted ``"word"`` tokenizer is fitted
    on the corpus first (one more pass). Keyword options: every field of
    :class:`~posgeom.corpus.options.CountOptions`. Empty texts are skipped (``n_empty``), long
    ones cut (:mod:`posgeom.corpus._texts`). No counted sequence raises, unless
    ``allow_empty=True`` (a job's shard: all-zero counts).
    """
    check_source(source, "count_corpus")
    tok, batches = corpus_batches(source, tokenizer, options)
    return _run(batches, options, tok, progress=progress, allow_empty=allow_empty)
