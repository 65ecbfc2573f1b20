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

from posgeom._distance_matrix import check_distance_matrix, euclidean_distances
from posgeom._errors import PosgeomError
from posgeom._validation import Interval, validate_params
from posgeom.embed.mds import MDSResult, PlacedCoordinates, classical_mds

__all__ = ["RefinedEmbedding", "smacof_refine"]


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


def _raw_stress(x: np.ndarray, target: np.ndarray) -> float:
    d = euclidean_distances(x)
    return float(np.sum(np.triu((d - target) ** 2, 1)))


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
    tol: float = 1e-9,
) -> RefinedEmbedding:
    """Minimise the paper stress of a configuration against ``target`` starting from MDS.

    Parameters
    ----------
    target : (n, n) distance matrix
    init : MDSResult or (n, r) coordinates, optional
        Start; by default ``classical_mds(target, n_components)``.
    max_iter, tol : stop after ``max_iter`` Guttman steps or when the relative stress decrease is
        below ``tol``.
    """
    tgt = check_distance_matrix(target, "target")
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
    norm = float(np.sum(np.triu(tgt**2, 1)))
    if norm <= 0:
        raise PosgeomError("the target has all distances zero; nothing to refine")
    best = current = _raw_stress(x, tgt)
    initial = current / norm
    best_x = x
    converged = False
    n_iter = 0
    for it in range(1, max_iter + 1):
        n_iter = it
        d = euclidean_distances(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(d > 0, tgt / d, 0.0)
        b = -ratio
        np.fill_diagonal(b, 0.0)
        np.fill_diagonal(b, -b.sum(axis=1))
        x = (b @ x) / n
        new = _raw_stress(x, tgt)
        if new < best:
            best, best_x = new, x
        if current - new <= tol * max(current, 1e-300):
            converged = True
            break
        current = new
    return RefinedEmbedding(
        coordinates=best_x,
        placement=placement,
        initial_stress=initial,
        final_stress=best / norm,
        n_iter=n_iter,
        converged=converged,
    )
