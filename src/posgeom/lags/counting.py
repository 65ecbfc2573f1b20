"""Lag counts: how often class ``a`` is followed, ``k`` tokens later, by class ``b``.

For sequences ``s`` (token-id arrays), token classes ``c(t)`` (:mod:`posgeom.lags.classes`,
``C`` classes) and lags ``k_1 < ... < k_m``::

    X[l, a C + b] = #{ (s, i) : i + k_l < len(s), c(s_i) = a, c(s_{i + k_l}) = b }

``X`` is an ``(m, C^2)`` int64 matrix: row ``l`` is a sample of the pair distribution at lag
``k_l``, so the estimators of :mod:`posgeom.estimators` (one "position" per lag) estimate the
Hellinger geometry *across lags*. Pairs never cross a sequence boundary.

**Replicates** (``replicates=B``): every sequence is cut into blocks of ``block`` tokens (default
``max(256, k_m)``) and a pair belongs to the block of its first token. Block ``u`` (numbered in
reading order over the whole corpus) gets the half-sample weight ``w[u, r]`` in ``{0, 1}`` of
:func:`posgeom.corpus.bootstrap_weights.sequence_weights` (seed, stream 0, replicate ``r``), and
replicate ``r`` counts ``X_r[l, j] = sum_u w[u, r] X_u[l, j]``. Blocks at least as long as the
longest lag keep most of the dependence between neighbouring pairs inside one unit.

**Null counts** (``null_shuffles=R``, default 8): for every sequence, ``R`` copies ``s^(r)`` with
its blocks of ``null_block`` tokens (default 64) put in a random order (``numpy.random.
default_rng((seed, sequence index, r))``), and ``X0_r[l, a C + b] = #{(s, i): c(s_i) = a,
c(s^(r)_{i + k_l}) = b}``: pairs with the same marginals and the same run structure in each
stream as the real ones, but no dependence between the two tokens. The dependence profile reads
its noise level from them (an independent-pairs null would understate it for text, where tokens
repeat in runs).

**Memory**: ``m C^2`` counts plus ``B m C^2`` replicate counts (``uint32``) plus one batch of
sequences, whatever the corpus length: one pass, bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.lags.classes import TokenClasses

__all__ = ["LagCounts", "count_lags", "default_lags"]

_KIND = "lag_counts"
_MAX_REPLICATE_CELLS = 2**28  # B m C^2 uint32 replicate counts: 1 GiB


def default_lags(max_lag: int, *, dense: int = 16, per_octave: int = 4) -> np.ndarray:
    """``1 .. dense`` then about ``per_octave`` lags per doubling up to ``max_lag`` (included),
    ``(m,)`` int64 sorted unique."""
    max_lag = check_int(max_lag, "max_lag", 1, None)
    dense = check_int(dense, "dense", 1, None)
    per_octave = check_int(per_octave, "per_octave", 1, None)
    head = np.arange(1, min(dense, max_lag) + 1)
    if max_lag <= dense:
        return head.astype(np.int64)
    steps = int(np.ceil(np.log2(max_lag / dense) * per_octave))
    tail = np.round(dense * 2.0 ** (np.arange(1, steps + 1) / per_octave)).astype(np.int64)
    lags = np.unique(np.concatenate([head, np.minimum(tail, max_lag), [max_lag]]))
    return lags.astype(np.int64)


@dataclass(frozen=True, eq=False)
class LagCounts:
    """Pair counts per lag (module docstring).

    counts : ``(m, C^2)`` int64, row ``l`` the pairs at ``lags[l]`` (cell ``a C + b``).
    lags : ``(m,)`` int64. classes : the :class:`TokenClasses`. replicate_counts : ``(B, m, C^2)``
    uint32 half-sample replicates or None. null_counts : ``(R, m, C^2)`` block-shuffled null
    counts or None; null_block : their block length. block : the replicate unit in tokens. seed : of the
    replicate weights. n_sequences, n_tokens : what was read.

    ``base``, ``replicate(r)``, ``n_replicates`` and ``scheme`` are those of
    :class:`~posgeom.corpus.bootstrap.BootstrapCounts`, so the uncertainty machinery of
    :mod:`posgeom.uncertainty.bootstrap` takes lag counts as they are.
    """

    counts: np.ndarray
    lags: np.ndarray
    classes: TokenClasses
    replicate_counts: np.ndarray | None = field(default=None, repr=False)
    null_counts: np.ndarray | None = field(default=None, repr=False)
    null_block: int = 0
    block: int = 0
    seed: int = 0
    n_sequences: int = 0
    n_tokens: int = 0
    scheme: str = "half"

    def __post_init__(self) -> None:
        for name in ("counts", "lags", "replicate_counts", "null_counts"):
            value = getattr(self, name)
            if value is not None:
                value.setflags(write=False)

    @property
    def n_classes(self) -> int:
        return int(self.classes.n_classes)

    @property
    def pairs(self) -> np.ndarray:
        """``(m,)`` pairs counted per lag."""
        return self.counts.sum(axis=1)

    @property
    def base(self) -> np.ndarray:
        return self.counts

    @property
    def n_replicates(self) -> int | None:
        return None if self.replicate_counts is None else int(self.replicate_counts.shape[0])

    def replicate(self, r: int) -> np.ndarray:
        """``(m, C^2)`` int64 counts of replicate ``r``."""
        if self.replicate_counts is None:
            raise PosgeomError("these lag counts have no replicates; count with replicates=B")
        return self.replicate_counts[r].astype(np.int64)

    def joint(self, l: int, counts: np.ndarray | None = None) -> np.ndarray:
        """``(C, C)`` pair counts of lag index ``l`` (rows: first token's class)."""
        c = self.counts if counts is None else counts
        return c[l].reshape(self.n_classes, self.n_classes)

    def save(self, path: Any, *, overwrite: bool = False) -> Any:
        """One artifact file (``.npz`` or ``.safetensors``, :func:`posgeom.io.artifacts.save_artifact`,
        atomic, kind ``"lag_counts"``); :meth:`load` reads it back exactly."""
        from posgeom.io.artifacts import save_artifact

        arrays = {
            "counts": self.counts,
            "lags": self.lags,
            "class_table": self.classes.table,
            "class_tokens": self.classes.tokens,
        }
        for name in ("replicate_counts", "null_counts"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        meta = {k: v for k, v in self.summary().items() if k not in ("lags", "pairs_per_lag")}
        meta.update(n_classes=self.n_classes, class_kind=self.classes.kind)
        return save_artifact(path, arrays, meta, kind=_KIND, overwrite=overwrite)

    @classmethod
    def load(cls, path: Any) -> LagCounts:
        """The lag counts saved by :meth:`save` (kind and checksums verified, no pickle)."""
        from posgeom.io.artifacts import load_artifact

        arrays, meta = load_artifact(path, kind=_KIND)
        classes = TokenClasses(
            arrays["class_table"],
            int(meta["n_classes"]),
            str(meta["class_kind"]),
            tokens=np.asarray(arrays["class_tokens"], dtype=np.int64),
        )
        return cls(
            np.asarray(arrays["counts"], dtype=np.int64),
            np.asarray(arrays["lags"], dtype=np.int64),
            classes,
            arrays.get("replicate_counts"),
            null_counts=arrays.get("null_counts"),
            null_block=int(meta["null_block"]),
            block=int(meta["replicate_block"]),
            seed=int(meta["seed"]),
            n_sequences=int(meta["n_sequences"]),
            n_tokens=int(meta["n_tokens"]),
            scheme=str(meta["replicate_scheme"]),
        )

    def summary(self) -> dict[str, Any]:
        return {
            "lags": self.lags.tolist(),
            "classes": self.classes.summary(),
            "pairs_per_lag": self.pairs.tolist(),
            "n_sequences": int(self.n_sequences),
            "n_tokens": int(self.n_tokens),
            "replicates": self.n_replicates or 0,
            "replicate_scheme": self.scheme,
            "replicate_block": int(self.block),
            "null_shuffles": 0 if self.null_counts is None else int(self.null_counts.shape[0]),
            "null_block": int(self.null_block),
            "seed": int(self.seed),
        }


def _check_lags(lags: Any) -> np.ndarray:
    arr = np.asarray(lags)
    if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer):
        raise PosgeomError(f"lags must be a 1-D array of integers >= 1, got {lags!r}")
    arr = arr.astype(np.int64)
    if arr.min() < 1 or np.any(np.diff(arr) <= 0):
        raise PosgeomError("lags must be >= 1 and strictly increasing, e.g. default_lags(L - 1)")
    return arr


@dataclass
class _Accumulator:
    """Running counts, replicate counts and null counts over batches of class sequences (``c``
    classes, ``b`` replicates)."""

    lags: np.ndarray
    c: int
    b: int
    block: int
    seed: int
    shuffles: int
    null_block: int
    n_seen: int = 0
    next_unit: int = 0

    def __post_init__(self) -> None:
        shape = (self.lags.size, self.c * self.c)
        self.counts = np.zeros(shape, dtype=np.int64)
        self.null = np.zeros((self.shuffles, *shape), dtype=np.int64)
        self.reps = np.zeros((self.b, *shape), dtype=np.uint32) if self.b else None

    def _shuffled(self, seq: np.ndarray, index: int, r: int) -> np.ndarray:
        rng = np.random.default_rng((self.seed, index, r))
        cuts = np.arange(0, seq.size, self.null_block)
        order = rng.permutation(cuts.size)
        return np.concatenate([seq[c : c + self.null_block] for c in cuts[order]])

    def add_null(self, seqs: list[np.ndarray]) -> None:
        cells = self.c * self.c
        for s in seqs:
            copies = [self._shuffled(s, self.n_seen, r) for r in range(self.shuffles)]
            self.n_seen += 1
            for li, k in enumerate(self.lags):
                if s.size <= k:
                    break
                for r, sh in enumerate(copies):
                    self.null[r, li] += np.bincount(s[:-k] * self.c + sh[k:], minlength=cells)

    def add(self, seqs: list[np.ndarray]) -> None:
        self.add_null(seqs)
        cells = self.c * self.c
        units = [np.arange(s.size) // self.block for s in seqs]
        n_units = [int(u[-1]) + 1 if u.size else 0 for u in units]
        offsets = np.cumsum([0, *n_units])
        weights = None
        if self.reps is not None and offsets[-1]:
            from posgeom.corpus.bootstrap_weights import sequence_weights

            ids = np.arange(self.next_unit, self.next_unit + offsets[-1])
            weights = sequence_weights(ids, replicates=self.b, seed=self.seed).astype(np.float64)
        self.next_unit += int(offsets[-1])
        for li, k in enumerate(self.lags):
            codes, owner = [], []
            for s, u, off in zip(seqs, units, offsets, strict=False):
                if s.size > k:
                    codes.append(s[:-k] * self.c + s[k:])
                    owner.append(u[:-k] + off)
            if not codes:
                continue
            code, unit = np.concatenate(codes), np.concatenate(owner)
            self.counts[li] += np.bincount(code, minlength=cells)
            if weights is not None:
                per_unit = np.bincount(unit * cells + code, minlength=offsets[-1] * cells)
                per_unit = per_unit.reshape(offsets[-1], cells).astype(np.float64)
                self.reps[:, li] += np.rint(weights.T @ per_unit).astype(np.uint32)


def count_lags(
    sequences: Iterable[Any],
    classes: TokenClasses,
    *,
    lags: Any,
    replicates: int = 0,
    block: int | None = None,
    seed: int = 0,
    null_shuffles: int = 8,
    null_block: int = 64,
    batch_tokens: int = 1 << 20,
) -> LagCounts:
    """Count the pairs at every lag of ``sequences`` (token-id arrays) in one pass.

    ``classes``: the token classes; ``lags``: increasing ints >= 1 (:func:`default_lags`);
    ``replicates``: ``B`` half-sample replicates (0: none); ``block``: the replicate unit in
    tokens (default ``max(256, max(lags))``); ``null_shuffles``, ``null_block``: the
    block-shuffled null counts (0: none); ``batch_tokens``: tokens held at a time.
    Returns :class:`LagCounts` (see the module docstring for the formula).
    """
    lag_arr = _check_lags(lags)
    replicates = check_int(replicates, "replicates", 0, 255)
    if replicates == 1:
        raise PosgeomError("replicates must be 0 (none) or at least 2, e.g. 40")
    block = max(256, int(lag_arr[-1])) if block is None else check_int(block, "block", 1, None)
    seed = check_int(seed, "seed", 0, None)
    cells = classes.n_classes**2
    if replicates * lag_arr.size * cells > _MAX_REPLICATE_CELLS:
        raise PosgeomError(
            f"{replicates} replicates x {lag_arr.size} lags x {cells} cells is too much memory; "
            "use fewer classes, lags or replicates"
        )
    shuffles = check_int(null_shuffles, "null_shuffles", 0, 64)
    null_block = check_int(null_block, "null_block", 1, None)
    acc = _Accumulator(lag_arr, classes.n_classes, replicates, block, seed, shuffles, null_block)
    batch: list[np.ndarray] = []
    held = n_seq = n_tok = 0
    for seq in sequences:
        cls = classes(seq)
        n_seq, n_tok = n_seq + 1, n_tok + cls.size
        batch.append(cls)
        held += cls.size
        if held >= batch_tokens:
            acc.add(batch)
            batch, held = [], 0
    if batch:
        acc.add(batch)
    if not acc.counts.any():
        raise PosgeomError(
            f"no pair reached lag {int(lag_arr[0])}: the sequences are too short or empty; pass "
            "longer texts or smaller lags"
        )
    return LagCounts(
        acc.counts,
        lag_arr,
        classes,
        acc.reps,
        null_counts=acc.null if shuffles else None,
        null_block=null_block,
        block=block,
        seed=seed,
        n_sequences=n_seq,
        n_tokens=n_tok,
    )
