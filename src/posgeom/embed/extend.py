"""Out-of-sample extension of a classical-MDS embedding (Gower's add-a-point formula).

Reference: J. C. Gower, "Adding a point to vector diagrams in multivariate analysis",
Biometrika 55 (1968) 582-585; also Trosset & Priebe, "The out-of-sample problem for classical
multidimensional scaling", Comput. Stat. Data Anal. 52 (2008).

Setting. Training positions ``0 … n-1`` have squared distances ``D2`` (n, n); classical MDS
double-centres them, ``B = -1/2 J D2 J`` with ``J = I - 11ᵀ/n``, and keeps the top ``r`` eigenpairs,
``X = U_r Λ_r^{1/2}`` (n, r). A new point with squared distances ``d2`` (n,) to the training points
is placed at

    x_new = 1/2 Λ_r^{-1/2} U_rᵀ (diag(B) - d2) = 1/2 Λ_r^{-1} X_rᵀ (diag(B) - d2)        (r,)

The second form uses only the coordinates and eigenvalues, so it is independent of the sign
convention of the eigenvectors. If the training configuration is Euclidean of dimension ``<= r``
and the new point lies in its affine span, the formula returns the new point's exact coordinates
in the MDS frame (centred at the training centroid).
"""

from __future__ import annotations

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import float_array

__all__ = ["double_centred_diagonal", "gower_extension"]


def double_centred_diagonal(train_sq_distances: np.ndarray) -> np.ndarray:
    """Diagonal ``(n,)`` of ``B = -1/2 J D2 J`` without forming ``B``: ``B_ii = -1/2 (D2_ii -
    2 mean_j D2_ij + mean_{jk} D2_jk)`` for the symmetric ``(n, n)`` ``train_sq_distances``."""
    d2 = float_array(train_sq_distances, "train_sq_distances")
    if d2.ndim != 2 or d2.shape[0] != d2.shape[1]:
        raise PosgeomError(
            f"train_sq_distances must be a square (n, n) matrix, got shape {d2.shape}; "
            "pass the squared distances between the n training positions"
        )
    if not np.all(np.isfinite(d2)):
        raise PosgeomError("train_sq_distances contains NaN or inf; pass finite squared distances")
    return -0.5 * (np.diag(d2) - d2.mean(axis=1) - d2.mean(axis=0) + d2.mean())


def gower_extension(
    coordinates: np.ndarray,
    eigenvalues: np.ndarray,
    train_sq_distances: np.ndarray,
    new_sq_distances: np.ndarray,
) -> np.ndarray:
    """Place new points in an existing classical-MDS embedding (Gower 1968).

    ``x_new = 1/2 Λ_r^{-1} Xᵀ (diag(B) - d2_new)``, one row per new point: ``(m, r)`` float64
    coordinates in the MDS frame (``(r,)`` for a 1-D input).

    Args:
        coordinates: (n, r) MDS coordinates ``X = U_r Λ_r^{1/2}`` of the training points.
        eigenvalues: eigenvalues of ``B``, descending; the first ``r`` (those of
            ``coordinates``) strictly positive.
        train_sq_distances: (n, n) squared distances between training points (same convention
            as the fit).
        new_sq_distances: (m, n) squared distances of the m new points to the n training
            points, or (n,) for one point.
    """
    x = float_array(coordinates, "coordinates")
    if x.ndim != 2:
        raise PosgeomError(f"coordinates must be (n, r), got shape {x.shape}")
    n, r = x.shape
    lam = float_array(eigenvalues, "eigenvalues").reshape(-1)
    if lam.size < r:
        raise PosgeomError(
            f"got {lam.size} eigenvalues for {r} coordinate columns; pass at least the r "
            "eigenvalues that belong to the coordinates"
        )
    lam = lam[:r]
    if not np.all(lam > 0):
        raise PosgeomError(
            "Gower extension needs strictly positive eigenvalues for every kept coordinate; "
            f"got {lam.tolist()}; drop the non-positive components (lower r)"
        )
    d2 = float_array(train_sq_distances, "train_sq_distances")
    if d2.shape != (n, n):
        raise PosgeomError(
            f"train_sq_distances has shape {d2.shape}, expected ({n}, {n}) to match the "
            f"{n} training coordinates"
        )
    new = float_array(new_sq_distances, "new_sq_distances")
    single = new.ndim == 1
    new2 = new[None, :] if single else new
    if new2.ndim != 2 or new2.shape[1] != n:
        raise PosgeomError(
            f"new_sq_distances has shape {new.shape}, expected (m, {n}): one row of squared "
            f"distances to the {n} training points per new point"
        )
    if not np.all(np.isfinite(new2)) or np.any(new2 < 0):
        raise PosgeomError("new_sq_distances must be finite and non-negative (squared distances)")
    diag_b = double_centred_diagonal(d2)
    out = 0.5 * ((diag_b[None, :] - new2) @ x) / lam[None, :]
    return out[0] if single else out
