"""What a counts file must satisfy beyond its checksums (:meth:`PositionCounts.load`).

A file whose checksums are valid can still be inconsistent: written by hand, by another tool, or
edited and re-checksummed. For counts ``C`` (``n x V``), ``totals`` ``T``, ``N`` sequences and
``n_tokens``::

    C[i, t] >= 0,   T_i = sum_t C[i, t] <= N <= MAX_SEQUENCES,   n_tokens = sum_i T_i
    options["max_positions"] = n,   options["vocab_size"] = V (when recorded)

Every row sum is bounded by ``N`` in float64 before the exact int64 sum (no wrap-around);
``MAX_SEQUENCES = 2**53`` keeps every sum exact in float64.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import ArtifactError

__all__ = ["MAX_SEQUENCES", "check_counts_file"]

MAX_SEQUENCES = 2**53


def _fail(path: str | os.PathLike, problem: str) -> None:
    raise ArtifactError(f"{path}: {problem}; the file is inconsistent, re-create it")


def check_counts_file(
    path: str | os.PathLike, counts: sp.csr_matrix, totals: np.ndarray, fields: dict[str, Any]
) -> None:
    """Raise :class:`ArtifactError` naming the first broken rule of the module docstring."""
    n_sequences, n_tokens = fields["n_sequences"], fields["n_tokens"]
    if not 0 <= n_sequences <= MAX_SEQUENCES or fields.get("n_empty", 0) < 0:
        _fail(path, f"{n_sequences} sequences is outside 0..2**53")
    if counts.nnz and counts.data.min() < 0:
        _fail(path, "counts are negative")
    if totals.shape != (counts.shape[0],):
        _fail(path, f"totals have shape {totals.shape}, not ({counts.shape[0]},)")
    row_of = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    rows = np.bincount(row_of, weights=counts.data.astype(np.float64), minlength=counts.shape[0])
    if rows.size and (rows.max() > n_sequences or totals.max() > n_sequences):
        _fail(path, f"a position holds more samples than the {n_sequences} sequences counted")
    if not np.array_equal(np.asarray(counts.sum(axis=1, dtype=np.int64)).ravel(), totals):
        _fail(path, "totals are not the row sums of counts")
    if sum(int(t) for t in totals) != n_tokens:
        _fail(path, f"n_tokens {n_tokens} is not the sum of the totals")
    options = fields["options"]
    recorded = options.get("max_positions")
    if recorded is not None and recorded != counts.shape[0]:
        _fail(path, f"max_positions {recorded} is recorded for {counts.shape[0]} rows of counts")
    vocab = options.get("vocab_size")
    if vocab is not None and vocab != counts.shape[1]:
        _fail(path, f"vocab_size {vocab} is recorded for {counts.shape[1]} columns of counts")
