"""Effective rank of the MDS spectrum and the low-rank encoding ``P = A B^T``.

Definitions on the eigenvalues ``λ_1 >= λ_2 >= ...`` of ``B`` (negative ones clipped to 0; with
``p_k = λ_k / sum λ``):

* ``"tolerance"``: numerical rank, ``#{k : λ_k > rtol * λ_1}`` (default ``rtol = 1e-10``).
* ``"energy"``: the smallest ``r`` with ``sum_{k<=r} λ_k >= energy * sum λ`` (default 0.99).
* ``"entropy"``: ``exp(-sum p_k log p_k)`` (Roy & Vetterli 2007, on the spectrum of ``B``).
* ``"participation"``: participation ratio ``(sum λ)^2 / sum λ^2``.

Low rank: ``P ≈ A B^T`` with ``A`` (n x r), ``B`` (d x r): ``r (n + d)`` parameters instead of
``n d``. For an MDS result ``A = X_r`` (top ``r`` coordinates) and ``B = Q_r``; for any other
``(n, d)`` table the truncated SVD ``A = U_r Σ_r``, ``B = V_r`` (Eckart-Young optimal).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, float_array, validate_params
from posgeom.embed.mds import MDSResult
from posgeom.embed.positions import EmbeddedPositions

__all__ = [
    "RANK_METHODS",
    "LowRankFactors",
    "effective_rank",
    "effective_ranks",
    "low_rank_factors",
]

RANK_METHODS = ("tolerance", "energy", "entropy", "participation")


def _spectrum(data: Any) -> np.ndarray:
    if isinstance(data, MDSResult):
        vals = data.eigenvalues
    else:
        vals = float_array(data, "the spectrum")
        if vals.ndim == 2:  # an embedding: squared singular values
            centred = vals - vals.mean(axis=0, keepdims=True)
            vals = np.linalg.svd(centred, compute_uv=False) ** 2
    if vals.ndim != 1 or vals.size == 0 or not np.all(np.isfinite(vals)):
        raise PosgeomError("effective_rank needs a finite, non-empty spectrum or an MDSResult")
    return np.sort(np.clip(vals, 0.0, None))[::-1]


@validate_params(
    {
        "method": [Options(set(RANK_METHODS))],
        "energy": [Interval(Real, 0, 1, closed="right")],
        "rtol": [Interval(Real, 0, None)],
    }
)
def effective_rank(
    data: Any, *, method: str = "energy", energy: float = 0.99, rtol: float = 1e-10
) -> float:
    """Effective rank of an MDS spectrum (MDSResult, eigenvalues, or an (n, d) embedding).

    On a partial spectrum (the implicit solver) the energy definition divides by
    ``total_variance``, so it stays exact; the others warn and return the value of the computed
    part.
    """
    lam = _spectrum(data)
    total = float(lam.sum())
    if isinstance(data, MDSResult):
        total = max(total, float(data.total_variance))
    if lam[0] <= 0 or total <= 0:
        return 0.0
    partial = lam.sum() < (1 - 1e-9) * total
    if partial and method != "energy":
        warnings.warn(
            f"only {lam.size} eigenvalues are known ({lam.sum() / total:.1%} of the variance); the "
            f"{method} rank of the computed part is returned. Use solver='exact' or "
            "method='energy' for an exact value.",
            RuntimeWarning,
            stacklevel=3,  # the caller of effective_rank (past validate_params)
        )
    if method == "tolerance":
        return float(np.count_nonzero(lam > rtol * lam[0]))
    if method == "energy":
        cum = np.cumsum(lam) / total
        hit = np.flatnonzero(cum >= energy - 1e-12)
        if not hit.size:
            raise PosgeomError(
                f"the {lam.size} computed components explain {cum[-1]:.1%} of the variance, less "
                f"than energy={energy}; compute more components (n_components) or lower energy"
            )
        return float(hit[0] + 1)
    if partial:
        total = float(lam.sum())
    p = lam[lam > 0] / total
    if method == "entropy":
        return float(np.exp(-np.sum(p * np.log(p))))
    return float(1.0 / np.sum(p**2))


def effective_ranks(data: Any, **kwargs: Any) -> dict[str, float | None]:
    """All effective-rank definitions at once (``None`` where the energy is not reached)."""
    _spectrum(data)  # a wrong input is refused, not reported as no rank
    out: dict[str, float | None] = {}
    for m in RANK_METHODS:
        try:
            out[m] = effective_rank(data, method=m, **kwargs)
        except PosgeomError:
            out[m] = None
    return out


@dataclass(frozen=True, eq=False)
class LowRankFactors(EmbeddedPositions):
    """``P = A B^T`` with ``A`` (n, r) and ``B`` (d, r)."""

    A: np.ndarray
    B: np.ndarray

    @property
    def rank(self) -> int:
        return int(self.A.shape[1])

    @property
    def n_parameters(self) -> int:
        """``r (n + d)``."""
        return self.rank * (self.A.shape[0] + self.B.shape[0])

    @property
    def full_parameters(self) -> int:
        """``n d``, the size of a full position table."""
        return int(self.A.shape[0] * self.B.shape[0])

    @property
    def parameter_reduction(self) -> float:
        """``1 - r(n+d) / (n d)`` (negative when the factorisation is larger)."""
        return 1.0 - self.n_parameters / self.full_parameters

    @property
    def embedding(self) -> np.ndarray:
        return self.A @ self.B.T


@validate_params({"rank": [Interval(Integral, 1, None)]})
def low_rank_factors(data: MDSResult | Any, rank: int) -> LowRankFactors:
    """Rank-``r`` factors of an MDS result or of any ``(n, d)`` position table."""
    mds = isinstance(data, MDSResult)
    if mds:
        n, d = data.n_positions, data.model_dim
    else:
        p = float_array(data, "the position table")
        if p.ndim != 2 or not np.all(np.isfinite(p)):
            raise PosgeomError("low_rank_factors needs an MDSResult or a finite (n, d) table")
        n, d = p.shape
    if not 1 <= rank <= min(n, d):
        raise PosgeomError(f"rank must be in 1..min(n, d) = {min(n, d)}, got {rank}")
    if mds:
        if rank > data.n_components:
            raise PosgeomError(
                f"the MDS result has only {data.n_components} components; recompute it with "
                f"n_components >= {rank}"
            )
        return LowRankFactors(
            A=data.coordinates[:, :rank].copy(), B=data.placement[:, :rank].copy()
        )
    u, s, vt = np.linalg.svd(p, full_matrices=False)
    sign = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])])
    u, vt = u * sign, vt * sign[:, None]
    return LowRankFactors(A=u[:, :rank] * s[:rank], B=vt[:rank].T.copy())
