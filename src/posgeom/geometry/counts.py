"""The typed input of every analysis: a count matrix, validated and normalised once.

:func:`count_matrix` turns whatever holds counts (a ``PositionCounts``, scipy sparse, a dense
``(n, V)`` array, a :class:`CountMatrix`) into a :class:`CountMatrix`: canonical CSR (sorted
indices, no duplicates, no explicit zeros), its row totals, whether it holds counts or
probabilities (:func:`is_count_data`, the one rule), and the provenance of a ``PositionCounts``
(sequences, tokens, fingerprint, tokenizer, options). Its arrays are read-only, so what derives
from it is cached on it: the plug-in distributions (``positional_distributions`` with its
defaults), and on them their Gram ``S S^T`` (``sqrt_gram``). One analysis therefore normalises
its counts and builds the plug-in Gram once, whoever asks. A matrix normalised before is
recognised by identity (no second validation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError

__all__ = ["CountMatrix", "count_matrix", "is_count_data"]

_PROVENANCE = ("n_sequences", "n_tokens", "fingerprint", "tokenizer", "options")
_OWNER = "_posgeom_count_matrix"  # a csr we made knows its CountMatrix (kept alive with it)


def is_count_data(values: np.ndarray, totals: np.ndarray, integer_dtype: bool) -> bool:
    """The one rule for "counts, not probabilities": an integer dtype, or whole numbers whose
    rows are not all already normalised (rows summing to 1 with a float dtype are one-hot
    distributions, not one sample each)."""
    if integer_dtype:
        return True
    whole = bool(np.all(values == np.round(values)))
    return whole and not bool(np.allclose(totals, 1.0, rtol=0, atol=1e-12))


@dataclass(frozen=True, eq=False)
class CountMatrix:
    """Position counts ``C`` (``n x V``), validated once.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix, canonical and read-only; int64 when ``integer``, else
        float64 (exact distributions given as probabilities).
    totals : (n,) float64 row sums ``T_i``.
    integer : whether ``C`` holds counts (:func:`is_count_data`).
    provenance : ``n_sequences``, ``n_tokens``, ``fingerprint``, ``tokenizer``, ``options`` of a
        ``PositionCounts`` (those it has).
    n_positions : ``n``, set at construction (plain data: reading it calls nothing).
    """

    counts: sp.csr_matrix
    totals: np.ndarray
    integer: bool
    provenance: dict[str, Any] = field(default_factory=dict)
    n_positions: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_positions", int(self.counts.shape[0]))


def _normalise(matrix: Any) -> sp.csr_matrix:
    """Validated canonical CSR copy of ``matrix`` (the one validation of a count matrix)."""
    if sp.issparse(matrix):
        c = sp.csr_matrix(matrix, copy=True)
    else:
        arr = np.asarray(matrix)
        if arr.ndim != 2 or arr.dtype == object or arr.dtype.kind not in "biuf":
            raise PosgeomError(
                f"counts must be an (n, V) matrix of numbers, got shape {arr.shape} of {arr.dtype}"
            )
        c = sp.csr_matrix(arr)
    if c.shape[0] < 1 or c.shape[1] < 1:
        raise PosgeomError(f"counts are empty (shape {c.shape}); count a non-empty corpus first")
    if c.dtype.kind == "b":
        c = c.astype(np.int64)
    if c.nnz and not np.all(np.isfinite(c.data)):
        raise PosgeomError("counts contain NaN or Inf; recount, or drop the bad positions")
    if c.nnz and c.data.min() < 0:
        raise PosgeomError("counts contain negative entries; counts must be non-negative")
    c.sum_duplicates()
    c.eliminate_zeros()
    c.sort_indices()
    return c


def count_matrix(data: Any) -> CountMatrix:
    """``data`` as a :class:`CountMatrix` (module docstring); the same object when it is one,
    or when ``data`` is the ``counts`` of one already made."""
    if isinstance(data, CountMatrix):
        return data
    matrix = getattr(data, "counts", data)
    known = getattr(matrix, _OWNER, None) if sp.issparse(matrix) else None
    if known is not None and known.counts is matrix:
        return known
    c = _normalise(matrix)
    totals = np.asarray(c.sum(axis=1), dtype=np.float64).ravel()
    integer = is_count_data(c.data, totals, c.dtype.kind in "iu")
    c = c.astype(np.int64 if integer else np.float64, copy=False)
    for arr in (c.data, c.indices, c.indptr):
        arr.setflags(write=False)
    totals.setflags(write=False)
    provenance = {k: getattr(data, k) for k in _PROVENANCE if hasattr(data, k)}
    out = CountMatrix(counts=c, totals=totals, integer=integer, provenance=provenance)
    setattr(c, _OWNER, out)  # a reference cycle (csr <-> CountMatrix) the collector frees
    return out
