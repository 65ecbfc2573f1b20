"""Bootstrap replicates over sequences, counted in the same pass as the counts.

Every counted sequence ``s`` gets ``B`` independent weights ``w_sb``; replicate ``b`` counts each
sequence ``w_sb`` times::

    C_b[i, t] = sum_s w_sb [s_i = t],        totals_b[i] = sum_t C_b[i, t]

(``s_i`` as in :mod:`posgeom.corpus.counting`); ``B`` replicates cost one read of the corpus.
Two weight schemes:

* ``"half"`` (default): ``w_sb ~ Bernoulli(1/2)``, a random half of the sequences (half-sampling;
  McCarthy 1969, Efron 1982 ch. 8): a real corpus of half the size, on which the
  multiplicity-based estimators (``corrected``, ``polynomial``) behave as on real data.
* ``"poisson"``: ``w_sb ~ Poisson(1)``, the Poisson bootstrap (Hanley & MacGibbon 2006, Chamandy
  et al. 2012); duplicated sequences bias the multiplicity-based estimators
  (``docs/ESTIMATION.md``): use it only for smooth functions of the frequencies.

``replicate_sequences[b] = sum_s w_sb`` records each replicate's number of sequences.

**Weights are counter-based.** ``w_sb`` is a function of ``(seed, stream, index, b)`` only, where
``index`` is the sequence's 0-based position in the input stream of one counting call (every
sequence read, counted or not) and ``stream`` an integer naming that call::

    h = mix(mix(mix(mix(seed) ^ stream) ^ index) ^ b)         (mix: the splitmix64 finaliser)
    u = (h >> 11) / 2^53
    w_sb = [u < 1/2]  ("half"),   w_sb = min{k : F(k) > u}  ("poisson"; F: the Poisson(1) CDF)

so weights never depend on ``batch_size``, on where a flush happens, on ``B`` (replicate ``b`` of
``B = 100`` is replicate ``b`` of ``B = 200``) or on which worker counts the sequence.

**Merging.** Replicate counts add like counts: for shards ``S_k`` counted with distinct streams,
``C_b = sum_k C_b(S_k)`` exactly (integer sums), in any order. A sharded job (:mod:`jobs`,
:mod:`distributed`) counts shard ``k`` with ``stream = k``, so its replicates depend on
``(seed, shard plan)`` only (not on resuming or workers), and differ from those of one
``count_corpus`` pass (``stream = 0``) or another ``shard_lines``. Merging counts that share a
stream is refused (their weights would be the same draws).

**Storage.** The replicates are a dense ``(nnz, B)`` array aligned with ``counts.data``
(canonical CSR order), in the smallest unsigned integer type that holds them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.corpus._counter import Counter
from posgeom.corpus.bootstrap_weights import (
    MAX_POISSON_WEIGHT,
    check_replicates,
    check_scheme,
    sequence_weights,
)
from posgeom.corpus.counting import PositionCounts

__all__ = ["BootstrapCounts"]


_KIND = "bootstrap_counts"
_BLOCK = 32  # replicates computed together (work space: 32 numbers per distinct key)


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` (non-negative integers) in the smallest unsigned dtype holding its maximum."""
    return a.astype(np.min_scalar_type(int(a.max(initial=0))), copy=False)


def _union(keys: list[np.ndarray], reps: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys of several runs and their replicate counts ``(nnz, B)`` summed."""
    allk = np.concatenate(keys)
    union, inverse = np.unique(allk, return_inverse=True)
    top = sum(int(r.max(initial=0)) for r in reps)
    dt = np.min_scalar_type(top)
    out = np.zeros((union.size, reps[0].shape[1]), dtype=dt)
    start = 0
    for k, r in zip(keys, reps, strict=True):
        at = inverse[start : start + k.size]
        start += k.size
        out[at] += r.astype(dt, copy=False)  # keys are distinct within a run
    return union, out


def _csr_keys(key: np.ndarray, n: int) -> np.ndarray:
    """Counter keys ``tok * n + pos`` as ``pos * 2^32 + tok`` (int64), sorted like CSR entries."""
    tok, pos = np.divmod(key.astype(np.int64, copy=False), n)
    pos <<= 32
    pos |= tok
    return pos


class BootstrapCounter(Counter):
    """:class:`~posgeom.corpus._counter.Counter` that also accumulates ``B`` replicates: a full
    incidence buffer is reduced by one sparse product ``X W`` (``X[k, s]`` = occurrences of key
    ``k`` in sequence ``s``, ``W[s, b] = w_sb``) and merged into the running replicates."""

    flush_tokens = 1 << 23

    def __init__(self, *args: Any, replicates: int, seed: int, stream: int, scheme: str):
        super().__init__(*args)
        self.B = check_replicates(replicates)
        self.scheme = check_scheme(scheme)
        self.seed = check_int(seed, "bootstrap_seed", 0, 2**64 - 1)
        self.stream = check_int(stream, "bootstrap_stream", 0, 2**64 - 1)
        self.read = 0  # sequences read so far: the next sequence's stream index
        self.rep_sequences = np.zeros(self.B, dtype=np.int64)
        self.inc_keys: list[np.ndarray] = []
        self.inc_seq: list[np.ndarray] = []
        self.inc_size = 0
        self.rep_keys = np.zeros(0, dtype=np.int64)  # sorted pos * 2^32 + tok
        self.reps = np.zeros((0, self.B), dtype=np.uint8)

    def add_flat(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        first = self.read
        self.read += lengths.size
        key, seq, kept = self.batch_keys(flat, lengths, with_sequence=True)
        index = first + np.flatnonzero(kept)
        if index.size:
            w = self.weights(index, self.B)
            self.rep_sequences += w.sum(axis=0, dtype=np.int64)
        if key.size == 0:
            return
        self.add_keys(key)
        self.inc_keys.append(_csr_keys(key, self.n))
        self.inc_seq.append(seq + first)
        self.inc_size += key.size
        if self.inc_size > self.flush_tokens:
            self.flush_replicates()

    def weights(self, index: np.ndarray, replicates: Any) -> np.ndarray:
        return sequence_weights(
            index, replicates=replicates, seed=self.seed, stream=self.stream, scheme=self.scheme
        )

    def flush_replicates(self) -> None:
        """Reduce the incidence buffer to replicate counts and merge them in."""
        if not self.inc_keys:
            return
        keys = np.concatenate(self.inc_keys)
        seq = np.concatenate(self.inc_seq)
        self.inc_keys, self.inc_seq, self.inc_size = [], [], 0
        distinct, row, runs = np.unique(keys, return_inverse=True, return_counts=True)
        s0 = int(seq.min())
        seqs = np.arange(s0, int(seq.max()) + 1)
        # X[k, s]: occurrences of key k in sequence s (duplicates summed). The product runs in the
        # narrowest exact type for the largest possible replicate count (occurrences x the largest
        # weight): int16 (scipy's fastest loop here), float32 (exact below 2^24), else int64
        bound = int(runs.max()) * (1 if self.scheme == "half" else MAX_POISSON_WEIGHT)
        dt = np.int16 if bound < 2**15 else np.float32 if bound < 2**24 else np.int64
        x = sp.csr_matrix(
            (np.ones(keys.size, dtype=dt), (row.ravel(), seq - s0)),
            shape=(distinct.size, seqs.size),
        )
        del keys, seq, row, runs
        reps: np.ndarray | None = None
        for b0 in range(0, self.B, _BLOCK):
            b = np.arange(b0, min(self.B, b0 + _BLOCK))
            block = _narrow(x @ self.weights(seqs, b).astype(dt))
            if reps is None:
                reps = np.empty((distinct.size, self.B), dtype=block.dtype)
            elif block.dtype.itemsize > reps.dtype.itemsize:
                reps = reps.astype(block.dtype)
            reps[:, b0 : b0 + b.size] = block
        if self.rep_keys.size:
            self.rep_keys, self.reps = _union([self.rep_keys, distinct], [self.reps, reps])
        else:
            self.rep_keys, self.reps = distinct, reps

    def finish(self, base: PositionCounts) -> BootstrapCounts:
        """The counts of this pass with their replicates aligned to ``base.counts.data``."""
        self.flush_replicates()
        c = base.counts
        rows = np.repeat(np.arange(c.shape[0], dtype=np.int64), np.diff(c.indptr))
        if not np.array_equal(self.rep_keys, (rows << 32) | c.indices.astype(np.int64)):
            raise AssertionError("replicate pattern differs from the base counts")
        return BootstrapCounts(
            **{f.name: getattr(base, f.name) for f in fields(PositionCounts)},
            replicates=self.reps,
            replicate_sequences=self.rep_sequences,
            seed=self.seed,
            streams=(self.stream,),
            scheme=self.scheme,
        )


def _lin(c: sp.csr_matrix, width: int) -> np.ndarray:
    """Row-major linear index ``row * width + col`` of each stored entry (sorted for CSR)."""
    rows = np.repeat(np.arange(c.shape[0], dtype=np.int64), np.diff(c.indptr))
    return rows * np.int64(max(width, 1)) + c.indices.astype(np.int64)


@dataclass(frozen=True, eq=False)
class BootstrapCounts(PositionCounts):
    """Position counts with ``B`` Poisson-bootstrap replicates (see the module docstring).

    A :class:`PositionCounts` (the base counts, usable wherever counts are), plus:

    replicates : ``(nnz, B)`` unsigned ints, ``replicates[k, b]`` = ``C_b`` at the ``k``-th stored
        entry of ``counts`` (same order as ``counts.data``).
    replicate_sequences : ``(B,)`` int64, ``sum_s w_sb`` over the counted sequences.
    seed : the weights' seed; streams : the stream ids whose sequences are counted here;
    scheme : ``"half"`` or ``"poisson"``.
    """

    replicates: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    replicate_sequences: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    seed: int = 0
    streams: tuple[int, ...] = (0,)
    scheme: str = "half"

    def __post_init__(self) -> None:
        reps = np.asarray(self.replicates)
        if reps.ndim != 2 or reps.shape[0] != self.counts.nnz or reps.dtype.kind != "u":
            raise PosgeomError(
                f"replicates must be (nnz={self.counts.nnz}, B) unsigned integers, got "
                f"{reps.shape} {reps.dtype}; re-create the bootstrap counts"
            )
        if reps.shape[1] < 2 or np.shape(self.replicate_sequences) != (reps.shape[1],):
            raise PosgeomError(
                f"need B >= 2 replicates and B sequence totals, got {reps.shape[1]} and "
                f"{np.shape(self.replicate_sequences)}; re-create the bootstrap counts"
            )

    @property
    def n_replicates(self) -> int:
        return int(self.replicates.shape[1])

    @property
    def base(self) -> PositionCounts:
        """The plain :class:`PositionCounts` (no replicates)."""
        return PositionCounts(**{f.name: getattr(self, f.name) for f in fields(PositionCounts)})

    def _first_positions_extra(self, n: int) -> dict[str, Any]:
        # replicates are stored in the counts' CSR order: the first rows' entries come first
        return {"replicates": self.replicates[: self.counts.indptr[n]]}

    def replicate(self, b: int) -> PositionCounts:
        """Replicate ``b`` as :class:`PositionCounts` (explicit zeros removed)."""
        b = check_int(b, "replicate index", 0, self.n_replicates - 1)
        c = self.counts
        counts = sp.csr_matrix(
            (self.replicates[:, b].astype(np.int64), c.indices.copy(), c.indptr.copy()),
            shape=c.shape,
        )
        counts.eliminate_zeros()
        totals = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
        fp = hashlib.sha256(f"bootstrap:{self.fingerprint}:{self.seed}:{b}".encode()).hexdigest()
        return PositionCounts(
            counts=counts,
            totals=totals,
            n_sequences=int(self.replicate_sequences[b]),
            n_tokens=int(totals.sum()),
            options={**self.options, "bootstrap_replicate": b},
            tokenizer=self.tokenizer,
            fingerprint=fp,
        )

    def merge(self, other: PositionCounts) -> BootstrapCounts:
        """Counts and replicates of two shards added (same seed and ``B``, disjoint streams)."""
        if not isinstance(other, BootstrapCounts):
            raise PosgeomError(
                "cannot merge bootstrap counts with plain counts; count every shard with the "
                "same --bootstrap and seed"
            )
        mine = (self.seed, self.n_replicates, self.scheme)
        theirs = (other.seed, other.n_replicates, other.scheme)
        if mine != theirs:
            raise PosgeomError(
                f"cannot merge bootstrap counts with seed/B/scheme {'/'.join(map(str, mine))} and "
                f"{'/'.join(map(str, theirs))}; count every shard with the same ones"
            )
        shared = sorted(set(self.streams) & set(other.streams))
        if shared:
            raise PosgeomError(
                f"cannot merge bootstrap counts that share streams {shared[:5]}: their sequences "
                "got the same weights; count each shard with its own bootstrap_stream"
            )
        base = PositionCounts.merge(self.base, other.base)
        width = base.counts.shape[1]
        keys = [_lin(part.counts, width) for part in (self, other)]  # in the merged width
        union, reps = _union(keys, [self.replicates, other.replicates])
        if not np.array_equal(union, _lin(base.counts, width)):
            raise AssertionError("merged replicate pattern differs from the merged counts")
        return BootstrapCounts(
            **{f.name: getattr(base, f.name) for f in fields(PositionCounts)},
            replicates=reps,
            replicate_sequences=self.replicate_sequences + other.replicate_sequences,
            seed=self.seed,
            streams=tuple(sorted(self.streams + other.streams)),
            scheme=self.scheme,
        )

    __add__ = merge

    # save / load: PositionCounts.save and .load with these arrays and metadata
    _artifact_kind: ClassVar[str] = _KIND
    counter_class: ClassVar[type] = BootstrapCounter  # what count_positions(bootstrap=B) runs

    def _extra_arrays(self) -> dict[str, Any]:
        return {
            "replicates": np.ascontiguousarray(self.replicates),
            "replicate_sequences": self.replicate_sequences,
        }

    def _extra_metadata(self) -> dict[str, Any]:
        return {
            "bootstrap": {
                "replicates": self.n_replicates,
                "seed": self.seed,
                "streams": list(self.streams),
                "scheme": self.scheme,
            }
        }

    @classmethod
    def _extra_fields(cls, arrays: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
        boot = meta["bootstrap"]
        return {
            "replicates": np.asarray(arrays["replicates"]),
            "replicate_sequences": np.asarray(arrays["replicate_sequences"], dtype=np.int64),
            "seed": int(boot["seed"]),
            "streams": tuple(int(s) for s in boot["streams"]),
            "scheme": check_scheme(boot["scheme"]),
        }
