"""Positional distributions ``mu_i`` estimated from position counts.

``mu_i(t) = (C[i, t] + alpha) / (T_i + alpha V)`` where ``T_i = sum_t C[i, t]`` is the number of
samples at position ``i`` (``alpha = 0`` without smoothing).

Everything downstream (Hellinger distances, MDS) needs only the square roots ``sqrt(mu_i)``. They
are stored as *sparse plus a per-row constant*, so add-alpha smoothing never densifies an
``n x V`` matrix::

    sqrt(mu_i(t)) = sqrt_sparse[i, t] + sqrt_floor[i]
    sqrt_floor[i]       = sqrt(alpha / Z_i)                       (0 without smoothing)
    sqrt_sparse[i, t]   = (sqrt(C[i, t] + alpha) - sqrt(alpha)) / sqrt(Z_i),  Z_i = T_i + alpha V

``sqrt_sparse`` has the sparsity pattern of the counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom._records import field_record
from posgeom._validation import Interval, Options, float_array, validate_params
from posgeom.geometry.counts import CountMatrix, count_matrix

__all__ = [
    "KeptPositions",
    "PositionalDistributions",
    "kept_positions",
    "plugin_roots",
    "positional_distributions",
]


@dataclass(frozen=True, eq=False)
class PositionalDistributions:
    """Square-root positional distributions of ``n`` kept positions over a vocabulary of ``V``.

    Attributes
    ----------
    sqrt_sparse : scipy.sparse.csr_matrix, shape (n, V), float64
        Sparse part of ``sqrt(mu)`` (see the module docstring).
    sqrt_floor : ndarray, shape (n,)
        Constant added to every entry of row ``i`` (``sqrt(alpha / Z_i)``; zeros without smoothing).
    positions : ndarray of int64, shape (n,)
        Original position index of each kept row (positions dropped by the sample floor are absent).
    totals : ndarray of float64, shape (n,)
        Samples per kept position ``T_i`` (``inf`` for exact distributions).
    flagged : ndarray of int64
        Original positions kept although ``T_i < min_samples``.
    dropped : ndarray of int64
        Original positions removed (below the floor with ``below_min="drop"``).

    Set at construction (plain data: reading them calls nothing): ``n_positions`` (``n``),
    ``vocab_size`` (``V``) and ``squared_norms``, ``||sqrt(mu_i)||^2`` per row, shape (n,),
    read-only (``O(nnz)`` from the sparse part and the floor, no sparse product). ``flagged``
    and ``dropped`` default to empty.
    """

    sqrt_sparse: sp.csr_matrix
    sqrt_floor: np.ndarray
    positions: np.ndarray
    totals: np.ndarray
    smoothing: str = "none"
    alpha: float = 0.0
    min_samples: int = 1
    flagged: np.ndarray = None  # type: ignore[assignment]  # empty when not given
    dropped: np.ndarray = None  # type: ignore[assignment]  # empty when not given
    n_positions: int = field(init=False, repr=False)
    vocab_size: int = field(init=False, repr=False)
    squared_norms: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        s, f = self.sqrt_sparse, self.sqrt_floor
        n, vocab = int(s.shape[0]), int(s.shape[1])
        rows = np.repeat(np.arange(n), np.diff(s.indptr))
        row_sq = np.bincount(rows, weights=s.data * s.data, minlength=n)
        row_sum = np.bincount(rows, weights=s.data, minlength=n)
        norms = row_sq + 2 * f * row_sum + vocab * f**2
        norms.setflags(write=False)
        empty = np.zeros(0, dtype=np.int64)
        for name, value in (
            ("n_positions", n),
            ("vocab_size", vocab),
            ("squared_norms", norms),
            ("flagged", empty if self.flagged is None else self.flagged),
            ("dropped", empty if self.dropped is None else self.dropped),
        ):
            object.__setattr__(self, name, value)

    def probabilities(self) -> np.ndarray:
        """``mu`` as a dense ``(n, V)`` float64 array (only for small ``n x V``)."""
        return (self.sqrt_sparse.toarray() + self.sqrt_floor[:, None]) ** 2

    def summary(self) -> dict[str, Any]:
        sizes = ("n_positions", "vocab_size", "smoothing", "alpha", "min_samples")
        return {
            **field_record(self, sizes),
            "flagged_positions": self.flagged.tolist(),
            "dropped_positions": self.dropped.tolist(),
            "min_samples_per_position": float(np.min(self.totals)),
        }

    @classmethod
    def from_probabilities(cls, probabilities: Any) -> PositionalDistributions:
        """Wrap exact distributions (rows summing to one), dense ``(n, V)`` or scipy sparse."""
        if sp.issparse(probabilities):
            p = sp.csr_matrix(probabilities, dtype=np.float64)
        else:
            arr = float_array(probabilities, "probabilities")
            if arr.ndim != 2:
                raise PosgeomError(
                    f"probabilities must be a 2-D (positions x vocabulary) array, got {arr.ndim}-D"
                )
            p = sp.csr_matrix(arr)
        if p.shape[0] == 0 or p.shape[1] == 0:
            raise PosgeomError(
                f"probabilities is empty (shape {p.shape}); count a non-empty corpus first"
            )
        if not np.all(np.isfinite(p.data)):
            raise PosgeomError("probabilities contains NaN or Inf")
        p.sum_duplicates()
        p.eliminate_zeros()
        if p.nnz and p.data.min() < 0:
            raise PosgeomError("probabilities contain negative entries; pass distributions.")
        sums = np.asarray(p.sum(axis=1)).ravel()
        if not np.allclose(sums, 1.0, rtol=0, atol=1e-8):
            bad = int(np.argmax(np.abs(sums - 1.0)))
            raise PosgeomError(
                f"row {bad} of the probabilities sums to {sums[bad]:.6g}, not 1; normalise the rows "
                "or pass counts to positional_distributions()"
            )
        n = p.shape[0]
        return cls(
            sqrt_sparse=p.sqrt(),
            sqrt_floor=np.zeros(n),
            positions=np.arange(n, dtype=np.int64),
            totals=np.full(n, np.inf),
        )


@validate_params(
    {
        "smoothing": [Options({"none", "add-alpha"})],
        "alpha": [Interval(Real, 0, None)],
        "min_samples": [Interval(Integral, 0, None)],
        "below_min": [Options({"flag", "drop"})],
    }
)
def positional_distributions(
    counts: Any,
    *,
    smoothing: Literal["none", "add-alpha"] = "none",
    alpha: float = 1.0,
    min_samples: int = 1,
    below_min: Literal["flag", "drop"] = "flag",
) -> PositionalDistributions:
    """Estimate ``mu_i`` for every position from counts.

    Parameters
    ----------
    counts : CountMatrix, PositionCounts, scipy sparse or ndarray, shape (n, V)
        Non-negative counts ``C[i, t]``, normalised by :func:`posgeom.geometry.counts.count_matrix`
        (once: with the default options the result is cached on the count matrix).
    smoothing : {"none", "add-alpha"}
        ``"add-alpha"`` adds ``alpha`` to every cell (Lidstone): ``(C + alpha) / (T + alpha V)``.
    alpha : float
        Pseudo-count for ``"add-alpha"`` (must be > 0).
    min_samples : int
        Sample floor: positions with ``T_i < min_samples`` are flagged (kept) or dropped.
    below_min : {"flag", "drop"}
        What happens to positions below the floor. Positions with *no* samples have no distribution
        and raise unless ``below_min="drop"``.

    Returns
    -------
    PositionalDistributions
    """
    cm = count_matrix(counts)
    default = smoothing == "none" and min_samples == 1 and below_min == "flag"
    if default and "_plugin" in cm.__dict__:  # the plug-in of these counts, made before
        return cm.__dict__["_plugin"]
    c = cm.counts  # read-only, canonical: the roots get their own arrays below
    if smoothing == "add-alpha" and not alpha > 0:
        raise PosgeomError(f"alpha must be > 0 for add-alpha smoothing, got {alpha}")

    n, vocab = c.shape
    totals = np.asarray(cm.totals, dtype=np.float64)
    positions = np.arange(n, dtype=np.int64)
    below = totals < max(min_samples, 1e-300)
    empty = totals <= 0
    keep = ~below if below_min == "drop" else np.ones(n, dtype=bool)
    if not keep.any():
        raise PosgeomError(
            f"every position has fewer than {min_samples} samples; lower min_samples or the "
            "number of positions, or count a larger corpus"
        )
    if below_min == "flag" and empty.any():
        first = int(np.flatnonzero(empty)[0])
        raise PosgeomError(
            f"{int(empty.sum())} of {n} positions have no samples (first: position {first}); "
            f"no sequence reaches them. Use max_positions <= {first}, or below_min='drop'"
        )
    flagged = positions[below & keep]
    dropped = positions[~keep]
    c = c[keep] if not keep.all() else c
    t = totals[keep]
    per_value = np.diff(c.indptr)  # stored values of each row
    if smoothing == "none":
        data = np.sqrt(c.data / np.repeat(t, per_value))  # sqrt(C / T) on the stored values
        floor, alpha = np.zeros(len(t)), 0.0
    else:
        z = t + alpha * vocab
        data = np.sqrt(c.data + alpha) - np.sqrt(alpha)
        data /= np.repeat(np.sqrt(z), per_value)
        floor = np.sqrt(alpha / z)
    root = sp.csr_matrix((data, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    out = PositionalDistributions(
        sqrt_sparse=root,
        sqrt_floor=floor,
        positions=positions[keep],
        totals=t,
        smoothing=smoothing,
        alpha=float(alpha),
        min_samples=int(min_samples),
        flagged=flagged,
        dropped=dropped,
    )
    if default:
        object.__setattr__(cm, "_plugin", out)
    return out


def plugin_roots(counts: sp.csr_matrix) -> sp.csr_matrix:
    """``sqrt(X_it / T_i)`` of internal, already valid CSR counts (resamples and halves made
    from a normalised count matrix), without a second validation; empty rows stay empty."""
    t = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    root = sp.csr_matrix(counts.multiply(1.0 / np.maximum(t, 1e-300)[:, None]), dtype=np.float64)
    root.eliminate_zeros()
    root.data = np.sqrt(root.data)
    return root


def as_distributions(data: Any) -> PositionalDistributions:
    """``data`` as :class:`PositionalDistributions`: as it is, from a ``.counts`` attribute
    (without smoothing), or from ``(n, V)`` probabilities (array or sparse)."""
    if isinstance(data, PositionalDistributions):
        return data
    if hasattr(data, "counts"):
        return positional_distributions(data)
    return PositionalDistributions.from_probabilities(data)


@dataclass(frozen=True, eq=False)
class KeptPositions:
    """The positions a geometry keeps (made by :func:`kept_positions`): ``distributions``
    (``mu_i`` of :func:`positional_distributions`), ``counts`` (the kept positions'
    :class:`~posgeom.geometry.counts.CountMatrix`: the input itself, or its kept rows),
    ``summary`` (the distributions' JSON block), ``samples`` (samples per kept position:
    ``min``, ``median``, ``max``) and ``input`` (the input recognised once, all positions)."""

    distributions: PositionalDistributions
    counts: CountMatrix
    summary: Mapping[str, Any]
    samples: Mapping[str, float]
    input: CountMatrix


def kept_positions(
    counts: Any,
    *,
    smoothing: str = "none",
    alpha: float = 1.0,
    min_samples: int = 1,
    below_min: str = "flag",
) -> KeptPositions:
    """The :class:`KeptPositions` of ``counts`` (anything
    :func:`~posgeom.geometry.counts.count_matrix` recognises, or a
    :class:`PositionalDistributions`) with the options of :func:`positional_distributions`."""
    if isinstance(counts, PositionalDistributions):
        counts = counts.probabilities()
    cm = count_matrix(counts)
    dist = positional_distributions(
        cm, smoothing=smoothing, alpha=alpha, min_samples=min_samples, below_min=below_min
    )
    kept = cm if dist.n_positions == cm.n_positions else count_matrix(cm.counts[dist.positions])
    samples = {
        "min": float(dist.totals.min()),
        "median": float(np.median(dist.totals)),
        "max": float(dist.totals.max()),
    }
    return KeptPositions(dist, kept, dist.summary(), samples, cm)
