"""Algorithm 1 of the paper: classical (Torgerson) MDS of the Hellinger geometry.

Given distances ``D`` (n x n), double-centre ``B = -1/2 J (D∘D) J`` with ``J = I - 11^T/n``, take
the top eigenpairs ``B = U Λ U^T`` (descending) and return ``X = U_r Λ_r^{1/2}`` (n x r). The
encoding in a model of width ``d >= r`` is ``P = X Q^T`` with ``Q`` (d x r) orthonormal columns:
``placement="pad"`` uses the first ``r`` unit vectors (zero padding), ``"orthonormal"`` a seeded
random orthonormal ``Q``. Distances between rows of ``P`` equal those between rows of ``X``.

Two solvers give the same answer:

* ``"exact"``: dense ``B`` and LAPACK ``eigh``. ``O(n^2)`` memory, ``O(n^3)`` time.
* ``"implicit"``: with the chord convention ``B = (J S)(J S)^T`` exactly, ``S`` the ``n x V``
  matrix of square-root probabilities, so MDS is PCA of the centred ``S``: a block Krylov
  solver (:mod:`posgeom.embed.eigensolvers`) on the operator ``y -> J S S^T J y`` finds the top
  ``r`` eigenpairs without forming any ``n x n`` matrix. Memory ``O(nnz(S) + n r)``.

An estimate with a factored form (:class:`~posgeom.geometry.gram.FactoredGram`,
``GeometryEstimate.gram``) is embedded through ``B = c J (S S^T - diag(b)) J`` by the same two
solvers. ``solver="auto"`` takes the exact solver for distance-matrix input, for ``n <= 1024``
and when more than a quarter of the spectrum is requested; the implicit one otherwise.

Deterministic output
--------------------
* Signs: every coordinate is oriented to have non-negative covariance with the position index
  (it "increases with position" on average); when that covariance is zero, the entry of largest
  magnitude (first one on ties) is made positive.
* Ties: eigenvalues equal within ``tie_rtol * λ_max`` span an eigenspace in which any orthonormal
  basis is an equally valid answer. posgeom picks a canonical basis: the Gram-Schmidt
  orthonormalisation of the projections onto that eigenspace of discrete Legendre polynomials of
  the position (degree 1, 2, ...), then of unit vectors. The first tied component is therefore the
  direction of the eigenspace most aligned with position order. For three one-hot distributions
  this gives the 1-D answer ``(-1/√2, 0, 1/√2)`` (paper stress 1/6).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import scipy.linalg as sla

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, validate_params
from posgeom.embed._canonical import canonicalise
from posgeom.embed._inputs import InputKind, euclidean_coordinates, gram_input
from posgeom.embed.eigensolvers import top_eigh
from posgeom.embed.positions import PlacedCoordinates, placement_frame
from posgeom.geometry.divergences import Convention
from posgeom.geometry.gram import double_centre_inplace

__all__ = ["MDSResult", "classical_mds"]

Solver = Literal["auto", "exact", "implicit"]
Placement = Literal["pad", "orthonormal"]
AUTO_EXACT_MAX_N = 1024


@dataclass(frozen=True, eq=False)
class MDSResult(PlacedCoordinates):
    """Classical MDS of a positional geometry.

    Attributes
    ----------
    coordinates : ndarray, shape (n, r)
        ``X = U_r Λ_r^{1/2}``: principal coordinates, column ``k`` has squared norm ``λ_k``.
    eigenvalues : ndarray, shape (k,)
        Computed eigenvalues of ``B``, descending (all ``n`` for the exact solver when
        ``all_eigenvalues``; ``r`` plus a margin for the implicit one).
    total_variance : float
        ``trace(B) = sum of all eigenvalues`` (``||J S||_F^2`` for distributions), exact for both
        solvers, so explained variance needs no full spectrum.
    placement : ndarray, shape (d, r)
        Orthonormal columns ``Q``; the encoding is ``P = X Q^T``.
    positions : ndarray, shape (n,)
        Original position indices of the rows.
    solver : str
        ``"exact"`` or ``"implicit"``.

    Set at construction (plain data: reading them calls nothing): ``n_positions`` (``n``),
    ``n_components`` (``r``), ``model_dim`` (``d``), ``explained_variance_ratio`` (``λ_k /
    trace(B)`` for the computed eigenvalues, negative ones clipped to 0; zeros when
    ``trace(B) <= 0``) and ``nonzero_coordinates``: the leading columns of ``coordinates``
    whose eigenvalue exceeds ``1e-12 λ_1``, ``(n, r+)`` (a view; the rest are zero up to
    round-off when the geometry has rank below ``r``, as a Euclidean estimate's does beyond its
    kept rank; ``||x_i - x_j||`` is the same over these columns as over all of them).
    """

    coordinates: np.ndarray
    eigenvalues: np.ndarray
    total_variance: float
    placement: np.ndarray
    positions: np.ndarray
    solver: str
    tie_groups: tuple[tuple[int, ...], ...] = field(default=())
    n_positions: int = field(init=False, repr=False)
    n_components: int = field(init=False, repr=False)
    model_dim: int = field(init=False, repr=False)
    explained_variance_ratio: np.ndarray = field(init=False, repr=False)
    nonzero_coordinates: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n, r = (int(k) for k in self.coordinates.shape)
        ratio = np.zeros_like(self.eigenvalues)
        if self.total_variance > 0:
            ratio = np.clip(self.eigenvalues, 0, None) / self.total_variance
        lam = np.asarray(self.eigenvalues[:r], dtype=np.float64)
        kept = 1 if lam.size == 0 or lam[0] <= 0 else np.count_nonzero(lam > 1e-12 * lam[0])
        for name, value in (
            ("n_positions", n),
            ("n_components", r),
            ("model_dim", int(self.placement.shape[0])),
            ("explained_variance_ratio", ratio),
            ("nonzero_coordinates", self.coordinates[:, : max(int(kept), 1)]),
        ):
            object.__setattr__(self, name, value)

    def truncate(self, n_components: int) -> MDSResult:
        """The rank-``r`` solution (the top ``r`` coordinates), same placement columns."""
        r = int(n_components)
        if not 1 <= r <= self.n_components:
            raise PosgeomError(f"n_components must be in 1..{self.n_components}, got {r}")
        return MDSResult(
            coordinates=self.coordinates[:, :r],
            eigenvalues=self.eigenvalues,
            total_variance=self.total_variance,
            placement=self.placement[:, :r],
            positions=self.positions,
            solver=self.solver,
            tie_groups=self.tie_groups,
        )


@validate_params(
    {
        "n_components": [Interval(Integral, 1, None), None],
        "model_dim": [Interval(Integral, 1, None), None],
        "placement": [Options({"pad", "orthonormal"})],
        "solver": [Options({"auto", "exact", "implicit"})],
        "input_kind": [Options({"auto", "distances", "distributions"})],
        "convention": [Options({"chord", "normalized"})],
        "tie_rtol": [Interval(Real, 0, None)],
        "seed": [Interval(Integral, 0, None)],
        "tol": [Interval(Real, 0, None)],
        "n_threads": [Interval(Integral, 1, None), None],
    }
)
def classical_mds(
    data: Any,
    n_components: int | None = None,
    *,
    model_dim: int | None = None,
    convention: Convention = "chord",
    placement: Placement = "pad",
    solver: Solver = "auto",
    input_kind: InputKind = "auto",
    all_eigenvalues: bool | None = None,
    tie_rtol: float = 1e-9,
    seed: int = 0,
    tol: float = 0.0,
    n_threads: int | None = None,
) -> MDSResult:
    """Algorithm 1: the MDS-optimal positional encoding.

    Parameters
    ----------
    data : (n, n) distance matrix, PositionalDistributions, PositionCounts, or (n, V) probabilities
        Distances are used as given; distributions use the Hellinger geometry of ``convention``,
        for which ``B = c (J S)(J S)^T`` exactly (so the implicit solver applies).
    n_components : int, optional
        Rank ``r`` of the solution (default: all of ``min(n - 1, model_dim)``). Components whose
        eigenvalue is not positive get zero coordinates.
    model_dim : int, optional
        Width ``d`` of the model space (default ``r``); an ``n_components`` above ``d`` is
        refused (:class:`PosgeomError`).
    convention : {"chord", "normalized"}
        Distributions only: ``"chord"`` (``D = ||sqrt mu_i - sqrt mu_j||``, ``c = 1``) or
        ``"normalized"`` (``D / sqrt 2``, ``c = 1/2``: coordinates scale by ``1/sqrt 2``,
        eigenvalues by ``1/2``). A distance matrix is used as given (default only).
    placement : {"pad", "orthonormal"}
        ``Q``: zero padding (first ``r`` axes) or a seeded random orthonormal frame.
    solver : {"auto", "exact", "implicit"}
        See the module docstring; ``"implicit"`` needs distributions, not a distance matrix.
    input_kind : {"auto", "distances", "distributions"}
        How to read ``data`` (auto: square, symmetric, zero-diagonal, non-negative -> distances).
    all_eigenvalues : bool, optional
        Exact solver only: the full spectrum (default when ``n <= AUTO_EXACT_MAX_N``).
    tie_rtol, seed : tolerance for equal eigenvalues (see "Ties"); seed of the implicit
        solver's start block and of ``placement="orthonormal"``.
    tol : float
        Implicit solver: residuals ``||B u - λ u|| <= tol λ_1`` (0: ``1e-8``, see
        :mod:`posgeom.embed.eigensolvers`; the ARPACK fallback: relative to each ``λ``).
    n_threads : int, optional
        Threads for the implicit solver's sparse products (default: the CPU count, at most 8).
    """
    if solver == "auto" and euclidean_coordinates(data) is not None:
        return _euclidean_mds(data, n_components, model_dim, placement, seed, tie_rtol)
    gram, dist, positions = gram_input(data, input_kind, convention)
    n = dist.shape[0] if gram is None else gram.n_positions
    r, d = _target_rank(n, n_components, model_dim)

    if solver == "auto":
        small = n <= AUTO_EXACT_MAX_N or 4 * r > n
        solver = "exact" if gram is None or small else "implicit"
    if solver == "implicit" and gram is None:
        raise PosgeomError(
            "the implicit solver needs distributions (or counts, or an estimate), not a distance "
            "matrix; pass the PositionalDistributions or use solver='exact'"
        )

    if solver == "exact":
        if gram is None:
            b = dist**2
            b *= -0.5
            double_centre_inplace(b)
        else:
            b = gram.dense()
        total = float(np.trace(b))
        full = n <= AUTO_EXACT_MAX_N if all_eigenvalues is None else all_eigenvalues
        k = n if full else min(n, r + 16)
        vals, vecs = sla.eigh(
            b, subset_by_index=[n - k, n - 1], driver="evr", overwrite_a=True, check_finite=False
        )
        vals, vecs = vals[::-1], vecs[:, ::-1]
        _warn_negative(vals)
    else:
        total = gram.trace()
        k = min(n - 1, r + 8)  # a margin to see ties that straddle r
        found = top_eigh(gram.operator(n_threads=n_threads), k, seed=seed, tol=tol, centred=True)
        vals, vecs = found.values, found.vectors
        # Krylov vectors can pick up a tiny component along 1 (B's null vector): remove it.
        vecs -= vecs.mean(axis=0, keepdims=True)
        vecs /= np.linalg.norm(vecs, axis=0, keepdims=True)

    vecs, ties = canonicalise(vals, vecs, r, tie_rtol)
    lam = np.clip(vals[:r], 0.0, None)
    coords = vecs[:, :r] * np.sqrt(lam)
    return MDSResult(
        coordinates=coords,
        eigenvalues=vals,
        total_variance=total,
        placement=placement_frame(d, r, placement, seed),
        positions=np.asarray(positions),
        solver=solver,
        tie_groups=ties,
    )


def _target_rank(n: int, n_components: Any, model_dim: Any) -> tuple[int, int]:
    """The rank ``r`` (``n_components``, default ``min(n - 1, model_dim)``) and the width ``d``
    (``model_dim``, default ``r``); ``r`` above ``n - 1`` or ``model_dim`` is refused (never
    silently lowered), as is ``n < 3``."""
    if n < 3:
        raise PosgeomError(f"MDS needs at least 3 positions, got {n}")
    r = n - 1 if n_components is None else int(n_components)
    if r > n - 1:
        raise PosgeomError(
            f"n_components={r} exceeds n - 1 = {n - 1}, the largest possible rank of B for n = {n} "
            f"positions; use n_components <= {n - 1} (model_dim can still be larger)"
        )
    if model_dim is not None:
        if n_components is not None and r > int(model_dim):
            raise PosgeomError(
                f"n_components={r} exceeds model_dim={int(model_dim)}: an encoding of width "
                f"{int(model_dim)} holds at most {int(model_dim)} MDS coordinates; pass "
                f"n_components <= {int(model_dim)} or a larger model_dim"
            )
        r = min(r, int(model_dim))
    return r, int(model_dim) if model_dim is not None else r


def _euclidean_mds(
    data: Any, n_components: Any, model_dim: Any, placement: str, seed: int, tie_rtol: float
) -> MDSResult:
    """MDS of a Euclidean estimate (``B+ = X X^T``, :mod:`posgeom.estimators.euclidean`): its
    coordinates ``X`` themselves (columns beyond ``K'`` zero); what either solver returns."""
    x = euclidean_coordinates(data)
    n, kept = x.shape
    r, d = _target_rank(n, n_components, model_dim)
    vals = np.zeros(max(r, kept))
    vals[:kept] = np.sum(x * x, axis=0)
    coords = np.zeros((n, r))
    coords[:, : min(r, kept)] = x[:, :r]
    _, ties = canonicalise(vals[:kept], x / np.sqrt(vals[:kept]), min(r, kept), tie_rtol)
    pos = np.asarray(getattr(data, "positions", np.arange(n)))
    return MDSResult(
        coordinates=coords,
        eigenvalues=vals,
        total_variance=float(vals.sum()),
        placement=placement_frame(d, r, placement, seed),
        positions=pos if pos.shape[0] == n else np.arange(n, dtype=np.int64),
        solver=str(getattr(data, "diagnostics", {}).get("projection", {}).get("solver", "exact")),
        tie_groups=ties,
    )


def _warn_negative(vals: np.ndarray) -> None:
    top = float(vals.max(initial=0.0))
    low = float(vals.min(initial=0.0))
    if top > 0 and low < -1e-8 * top:
        warnings.warn(
            f"B has negative eigenvalues (most negative {low:.3g}, {abs(low) / top:.2%} of the "
            "largest): the distances are not Euclidean, and the MDS solution ignores that part. "
            "For an estimated geometry that is sampling noise the correction leaves (an unbiased "
            "estimate of a Euclidean geometry is not Euclidean itself): pass the estimate, whose "
            "default is the nearest Euclidean geometry (estimate.diagnostics['projection'] says "
            "how much was projected away).",
            RuntimeWarning,
            stacklevel=4,  # the caller of classical_mds (past validate_params)
        )
