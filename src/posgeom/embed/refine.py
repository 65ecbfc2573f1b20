"""Stress-minimising refinement of the MDS encoding (SMACOF started from Algorithm 1).

Classical MDS minimises the strain (the Gram-matrix error), not the stress; a configuration of the
same dimension can have lower stress. SMACOF (de Leeuw 1977; Borg & Groenen, *Modern
Multidimensional Scaling*, ch. 8) minimises the raw stress ``sum_{i<j} (||x_i - x_j|| - D_ij)^2``
by the Guttman transform ``X <- (1/n) B(X) X``, with ``B(X)_ij = -D_ij / d_ij(X)`` (``i != j``,
0 where ``d_ij(X) = 0``) and ``B_ii = -sum_{j != i} B_ij``. Each step never increases the stress,
and since the paper's stress is the raw stress divided by the constant ``sum D^2``, the refinement
never ends above Algorithm 1's paper stress.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from posgeom._distance_matrix import as_distances, euclidean_distances
from posgeom._errors import PosgeomError
from posgeom._validation import Interval, validate_params
from posgeom.embed.mds import MDSResult, classical_mds
from posgeom.embed.positions import PlacedCoordinates

__all__ = ["REFINE_MAX_N", "REFINE_SKIPPED", "RefinedEmbedding", "gram_distances", "smacof_refine"]

ZERO_STRESS = 1e-20  # a paper stress below this is zero up to round-off: nothing to refine
# the pipeline refines up to here (each Guttman step is O(n^2 r) with an (n, n) matrix); above
# it the refined row is left out and the table says why (read at call time: tests lower it)
REFINE_MAX_N = 2048
REFINE_SKIPPED = (
    f"SMACOF refinement runs for n <= {REFINE_MAX_N} (each Guttman step is O(n^2 r) with an "
    "(n, n) matrix)"
)


@dataclass(frozen=True, eq=False)
class RefinedEmbedding(PlacedCoordinates):
    """A SMACOF-refined configuration.

    Attributes
    ----------
    coordinates : ndarray (n, r); ``placement`` (d, r); ``embedding`` = coordinates @ placement.T
    initial_stress, final_stress : paper stress before and after
    n_iter : Guttman iterations run; ``converged``: relative decrease fell below ``tol``
    """

    coordinates: np.ndarray
    placement: np.ndarray
    initial_stress: float
    final_stress: float
    n_iter: int
    converged: bool


def gram_distances(x: np.ndarray) -> np.ndarray:
    """``(n, n)`` Euclidean distances of the rows of ``x`` from one BLAS product:
    ``d_ij^2 = |x_i|^2 + |x_j|^2 - 2 <x_i, x_j>`` (clipped at 0, zero diagonal; cancellation
    error about ``1e-16 max |x|^2``, negligible for the Guttman weights ``D_ij / d_ij``)."""
    sq = np.einsum("ij,ij->i", x, x)
    g = x @ x.T
    g *= -2.0
    g += sq[:, None]
    g += sq[None, :]
    np.maximum(g, 0.0, out=g)
    np.fill_diagonal(g, 0.0)
    return np.sqrt(g, out=g)


def _raw_stress(d: np.ndarray, target: np.ndarray) -> float:
    """``sum_{i<j} (d_ij - D_ij)^2`` (both matrices symmetric with zero diagonals)."""
    diff = d - target
    return 0.5 * float(np.einsum("ij,ij->", diff, diff))


@validate_params(
    {
        "n_components": [Interval(Integral, 1, None), None],
        "max_iter": [Interval(Integral, 0, None)],
        "tol": [Interval(Real, 0, None)],
    }
)
def smacof_refine(
    target: Any,
    init: MDSResult | np.ndarray | None = None,
    *,
    n_components: int | None = None,
    max_iter: int = 300,
    tol: float = 1e-6,
) -> RefinedEmbedding:
    """Minimise the paper stress of a configuration against ``target`` starting from MDS.

    Parameters
    ----------
    target : (n, n) distance matrix
    init : MDSResult or (n, r) coordinates, optional
        Start; by default ``classical_mds(target, n_components)``.
    max_iter, tol : stop after ``max_iter`` Guttman steps, or (``converged``) once one step
        lowers the raw stress by less than ``tol`` times its value, or once the paper stress is
        below ``ZERO_STRESS`` (exact up to round-off: full-rank MDS of a Euclidean geometry).

    Each step costs two ``(n, n) x (n, r)`` BLAS products and ``O(n^2)`` memory; the reported
    ``final_stress`` is recomputed exactly (``pdist``) once.
    """
    tgt = as_distances(target, "target").distances  # validated once (no copy when it was)
    n = tgt.shape[0]
    if init is None:
        init = classical_mds(tgt, n_components, input_kind="distances")
    if isinstance(init, MDSResult):
        x, placement = init.coordinates.copy(), init.placement
    else:
        x = np.asarray(init, dtype=np.float64).copy()
        if x.ndim != 2 or x.shape[0] != n:
            raise PosgeomError(f"init must be (n={n}, r) coordinates, got shape {x.shape}")
        placement = np.eye(x.shape[1])
    norm = 0.5 * float(np.einsum("ij,ij->", tgt, tgt))
    if norm <= 0:
        raise PosgeomError("the target has all distances zero; nothing to refine")
    initial = _raw_stress(euclidean_distances(x), tgt) / norm
    best, best_x, previous = np.inf, x, np.inf
    for it in range(max_iter + 1):  # every exit is a break: ``it`` Guttman steps were made
        d = gram_distances(x)
        current = _raw_stress(d, tgt)  # the stress of x (Guttman steps never increase it)
        if current < best:
            best, best_x = current, x
        exact = current <= ZERO_STRESS * norm  # already exact up to round-off
        stalled = previous - current <= tol * max(current, 1e-300)
        converged = exact or (stalled and it > 0)
        if exact or stalled or it == max_iter:
            break
        previous = current
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(d > 0, tgt / d, 0.0)
        # X <- (1/n) B(X) X with B = diag(rowsums(ratio)) - ratio
        x = (ratio.sum(axis=1)[:, None] * x - ratio @ x) / n
    final = _raw_stress(euclidean_distances(best_x), tgt) / norm
    return RefinedEmbedding(
        coordinates=best_x,
        placement=placement,
        initial_stress=initial,
        final_stress=final,
        n_iter=it,
        converged=converged,
    )
