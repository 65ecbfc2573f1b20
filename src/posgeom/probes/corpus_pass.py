"""One pass of a model over a corpus: per-position moments of every layer, and a fixed stratified
sample of token states for the probes. Hidden states are read batch by batch and dropped; only
float64 per-position sums (:class:`posgeom.models.accumulate.LayerTotals`) and the sampled tokens
are kept.

The sample is planned before the pass, from the sequences' lengths: for every position ``p < n``,
``k = min(per_position, c_p)`` of the ``c_p`` sequences that reach ``p`` are drawn without
replacement (``numpy.random.default_rng(seed)``), so the sample is uniform over positions (chance
for an absolute-position probe is then ``~ n / 4``) and exact, not a streaming approximation.
During the pass the planned ``(sequence, position)`` tokens of each layer are copied into a
preallocated float32 array ``(L + 1, R, d)``, ``R = sum_p k_p``.

Positions are those of :func:`posgeom.models.batching.pad_batch`: the token's index, or with
``include_special=False`` the number of non-special tokens before it (special tokens not counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from posgeom.corpus.readers import batches
from posgeom.models.accumulate import LayerMoments, LayerTotals, check_every_position
from posgeom.models.batching import pad_batch
from posgeom.probes.states import ProbedModel

__all__ = ["PassResult", "TokenSample", "counted_lengths", "plan_sample", "run_pass"]


@dataclass(frozen=True, eq=False)
class TokenSample:
    """Sampled token states ``(L + 1, R, d)`` float32 with their ``positions`` and
    ``sequences`` ``(R,)`` int64 (the sequence index, for held-out folds)."""

    states: np.ndarray
    positions: np.ndarray
    sequences: np.ndarray


@dataclass(frozen=True, eq=False)
class PassResult:
    moments: LayerMoments
    sample: TokenSample
    n_sequences: int


def counted_lengths(seqs: list[np.ndarray], special: np.ndarray, n: int) -> np.ndarray:
    """Positions ``< n`` each sequence reaches (its non-special tokens when ``special`` is set)."""
    if special.size:
        return np.array([min(n, int(np.count_nonzero(~np.isin(s, special)))) for s in seqs])
    return np.minimum(np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs)), n)


def plan_sample(lengths: np.ndarray, n: int, per_position: int, seed: int) -> np.ndarray:
    """Sorted keys ``sequence * n + position`` of the planned sample (module docstring)."""
    reaching = [np.count_nonzero(lengths > p) for p in range(n)]
    check_every_position(reaching, why=": no sequence of the corpus is that long", fix="-n")
    rng = np.random.default_rng(seed)
    keys = []
    for p in range(n):
        reach = np.flatnonzero(lengths > p)
        take = rng.choice(reach, size=min(per_position, reach.size), replace=False)
        keys.append(take.astype(np.int64) * n + p)
    return np.sort(np.concatenate(keys))


def _gather(
    store: np.ndarray | None,
    hidden: Any,
    flat_keys: np.ndarray,
    planned: np.ndarray,
) -> np.ndarray:
    """Copy the planned tokens of one batch into ``store`` (allocated on the first batch)."""
    if store is None:
        store = np.zeros((len(hidden), planned.size, int(hidden[0].shape[-1])), np.float32)
    where = np.searchsorted(planned, flat_keys)
    hit = (where < planned.size) & (planned[np.minimum(where, planned.size - 1)] == flat_keys)
    rows, slots = np.flatnonzero(hit), where[hit]
    if rows.size:
        index = torch.from_numpy(rows)
        for layer, h in enumerate(hidden):  # a spread model's layers: on several devices
            picked = h.reshape(-1, h.shape[-1]).index_select(0, index.to(h.device))
            store[layer, slots] = picked.to(torch.float32).cpu().numpy()
    return store


def run_pass(
    probed: ProbedModel,
    seqs: list[np.ndarray],
    *,
    n: int,
    special: np.ndarray,
    per_position: int,
    batch_size: int,
    seed: int,
    progress: bool,
) -> PassResult:
    """Moments and the token sample of ``seqs`` (already cut to the model's limit)."""
    from posgeom._progress import progress_bar  # whole lines when not a terminal

    lengths = counted_lengths(seqs, special, n)
    planned = plan_sample(lengths, n, per_position, seed)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # little padding per batch
    totals = LayerTotals(n, torch.device("cpu"))
    store = None
    bar = progress_bar(total=len(seqs), disable=not progress, unit="seq", desc="probe pass")
    try:
        with torch.inference_mode():
            for group in batches(order, batch_size):
                padded = pad_batch([list(seqs[i]) for i in group], probed.pad_id, special, n)
                ids = torch.from_numpy(padded.ids).to(probed.device)
                mask = torch.from_numpy(padded.mask).to(probed.device)
                hidden = probed.states(ids, mask)
                totals.add(hidden, padded.pos)
                seq_of = np.repeat(np.asarray(group, dtype=np.int64), padded.pos.shape[1])
                flat_pos = padded.pos.reshape(-1)
                keys = np.where(flat_pos >= 0, seq_of * n + flat_pos, -1)
                store = _gather(store, hidden, keys, planned)
                bar.update(len(group))
    finally:
        bar.close()
    assert store is not None
    sample = TokenSample(store, planned % n, planned // n)
    return PassResult(totals.finish(), sample, len(seqs))
