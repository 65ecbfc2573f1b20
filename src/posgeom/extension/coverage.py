"""What a short corpus cannot give ``extend``, said instead of refused.

The recommendation does not need the whole table: with too little text, ``extend`` scores what the
text supports and says what is missing, why, and what length of text would give it:

- **lags**: the lag geometry reaches ``n - 1`` for a longest document of ``n`` tokens; below the
  target ``L`` the strategies are compared on lags ``1 .. n - 1`` only (a document of ``L`` tokens
  gives every lag up to ``L - 1``);
- **intervals**: a half-sample replicate keeps each block of ``b`` tokens with probability 1/2 and
  a pair belongs to the block of its first token, so only the blocks starting before ``n - k_m``
  hold pairs at the longest lag ``k_m``; a replicate that keeps none of them has no pairs there.
  Then the replicates are dropped (no intervals, ``p_first`` or ranking stability) and the note
  gives the length that holds ``SAFE_BLOCKS`` such blocks at the full lag range ``k = L - 1``,
  ``k + SAFE_BLOCKS x max(b, k)`` tokens (a replicate misses all of 20 blocks with probability
  ``2^-20``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["SAFE_BLOCKS", "coverage_notes"]

SAFE_BLOCKS = 20


def coverage_notes(counts: Any, target_length: int, longest: int) -> tuple[Any, list[str]]:
    """``(counts, notes)``: the lag counts, without their replicates when some replicate holds no
    pair at some lag, and one note per missing part of the table (module docstring)."""
    notes = []
    if longest < target_length:
        notes.append(
            f"lags {longest:,} to {target_length - 1:,} unavailable: the longest document has "
            f"{longest:,} tokens, so the strategies are compared on lags up to {longest - 1:,}; a "
            f"document of at least {target_length:,} tokens gives every lag"
        )
    reps = counts.replicate_counts
    if reps is not None and not (reps.sum(axis=2, dtype=np.int64) > 0).all():
        n_reps, block, top = reps.shape[0], int(counts.block), int(counts.lags[-1])
        full = target_length - 1  # the longest lag (and block) of a text that reaches L
        need = full + SAFE_BLOCKS * max(block, full)
        notes.append(
            f"intervals unavailable (no bootstrap intervals, p_first or ranking stability): the "
            f"{counts.n_tokens:,} tokens leave too few replicate blocks of {block:,} tokens with "
            f"pairs at lag {top:,} for {n_reps} half-sample replicates; about {need:,} tokens in "
            f"one document ({SAFE_BLOCKS} blocks past lag {full:,}) give them at every lag"
        )
        counts = dataclasses.replace(counts, replicate_counts=None)
    return counts, notes
