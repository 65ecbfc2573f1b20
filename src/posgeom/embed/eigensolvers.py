"""The top ``k`` eigenpairs of a symmetric operator by a thick-restarted block Krylov method.

For symmetric ``A`` (``n x n``, applied to blocks ``y -> A y`` of shape ``(n, b)``), find
``A U = U Λ`` for the ``k`` largest eigenvalues ``λ_1 >= ... >= λ_k`` (descending), ``U``
``(n, k)`` orthonormal: what classical MDS needs from the centred Gram ``B``
(:mod:`posgeom.embed.mds`). Where ARPACK's Lanczos (``eigsh``) makes one single-vector product
at a time (level-2 BLAS on its ``n x ncv`` basis), a block method makes its products and its
orthogonalisation on blocks of ``b`` vectors (level-3 BLAS, one sparse pass per block).

Method (block Krylov-Schur / thick-restart block Lanczos; ``b`` vectors per block, a basis
of at most ``m``):

1. Basis ``V = [Q_1, Q_2, ...]`` with orthonormal blocks, ``Q_1`` a seeded Gaussian block.
   Each step multiplies the newest block, ``Z = A Q_j``, and orthogonalises it: twice against
   the blocks it couples to in exact arithmetic (``Q_{j-1}``, ``Q_j``; after a restart the
   kept Ritz vectors), once against all of ``V`` (full reorthogonalisation; again for a
   column the pass shortened by more than ``1/sqrt 2``), then Cholesky QR: ``Z = V c + Q_{j+1}
   R``. The coefficients ``c`` fill the projected matrix ``H = V^T A V``, so ``A V = V H +
   Q_{j+1} R E^T`` (``E`` selects the last block).
2. When ``V`` holds ``m`` vectors: Rayleigh-Ritz, ``H = Y Θ Y^T``; the Ritz pair
   ``(θ_i, V y_i)`` has the residual ``A V y_i - θ_i V y_i = Q_{j+1} R E^T y_i``, of norm
   ``||R E^T y_i||`` (no product needed).
3. Converged when ``||r_i|| <= tol * |θ_1|`` for the ``k`` wanted pairs (``θ_1`` estimates
   ``||A||``). Otherwise restart: keep the ``keep`` leading Ritz vectors ``U`` (``H`` becomes
   ``diag(θ)`` bordered by ``R E^T Y``) and the pending block ``Q_{j+1}``, which holds every
   kept vector's residual, and go to 1.

Tolerance. The default :data:`DEFAULT_TOL` = ``1e-8`` (about ``sqrt(eps)``) bounds each residual
by ``1e-8 |λ_1|``. A Ritz value's error is at most ``||r||^2 / gap`` (quadratic), so eigenvalues
come out near machine precision; a vector's is ``||r|| / gap`` within its cluster (at n = 8,192
Zipf positions, k = 776: eigenvalues within 2.4e-12 of a ``1e-12`` solve, 1,936 products against
2,320). Ask for a smaller ``tol`` when eigenvectors inside a tight cluster matter.

Cost: ``O(n m^2)`` level-3 BLAS per cycle besides the products; deterministic for a fixed seed
(same BLAS threads). For small ``n``, or when a basis of ``k + 2 b`` vectors would not fit in
``n / 2``, LAPACK ``eigh`` of ``A I`` instead. :attr:`TopEigenpairs.converged` is False when
``max_products`` products did not reach ``tol``; :func:`top_eigh` then falls back to ARPACK.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from posgeom._threads import blas_threads

logger = logging.getLogger(__name__)

__all__ = ["TopEigenpairs", "arpack_top_eigh", "block_krylov_eigh", "dense_top_eigh", "top_eigh"]

DENSE_MAX_N = 256  # up to here, A I and LAPACK (n products) are cheaper than any iteration
DEFAULT_TOL = 1e-8  # residual / |λ_1| (module docstring, "Tolerance")


@dataclass(frozen=True)
class TopEigenpairs:
    """The ``k`` largest eigenpairs of a symmetric operator.

    Attributes
    ----------
    values : (k,) float64, descending.
    vectors : (n, k) float64, orthonormal columns, ``A vectors[:, i] ≈ values[i] vectors[:, i]``.
    residuals : (k,) float64, ``||A u_i - λ_i u_i||_2`` from the Krylov relation (NaN from
        ARPACK, which does not report them).
    products : int, vectors the operator was applied to (a block of ``b`` counts ``b``).
    restarts : int, thick restarts made.
    converged : bool, every residual ``<= tol * |λ_1|``.
    """

    values: np.ndarray
    vectors: np.ndarray
    residuals: np.ndarray
    products: int
    restarts: int
    converged: bool
    method: str


def dense_top_eigh(apply: Callable[[np.ndarray], np.ndarray], n: int, k: int) -> TopEigenpairs:
    """``A`` formed as ``A I`` (blocks of 256 columns, symmetrised) and LAPACK ``eigh`` of its
    top ``k``: exact, ``O(n^2)`` memory; for small ``n`` or ``k`` close to ``n``."""
    a = np.empty((n, n))
    for lo in range(0, n, 256):
        hi = min(n, lo + 256)
        a[:, lo:hi] = apply(np.eye(n, hi - lo, -lo))  # the columns lo:hi of I
    a += a.T
    a *= 0.5
    vals, vecs = sla.eigh(a, subset_by_index=[n - k, n - 1], driver="evr", check_finite=False)
    vals, vecs = vals[::-1].copy(), vecs[:, ::-1].copy()
    res = np.linalg.norm(a @ vecs - vecs * vals, axis=0)
    return TopEigenpairs(vals, vecs, res, n, 0, True, "dense")


def _orthonormalise(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``z = q r`` (``q`` orthonormal, ``r`` upper triangular) by Cholesky QR twice (level-3
    BLAS), Householder QR when ``z^T z`` is not numerically positive definite."""
    try:
        r1 = sla.cholesky(z.T @ z, check_finite=False)
        q = sla.solve_triangular(r1, z.T, trans="T", check_finite=False).T
        r2 = sla.cholesky(q.T @ q, check_finite=False)
        q = sla.solve_triangular(r2, q.T, trans="T", check_finite=False).T
        return np.asfortranarray(q), r2 @ r1
    except np.linalg.LinAlgError:
        q, r = sla.qr(z, mode="economic", check_finite=False)
        return np.asfortranarray(q), r


def _orthogonalise(
    z: np.ndarray, basis: np.ndarray, local: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``z = basis c + q r``: ``c = basis^T z``, ``q`` orthonormal and orthogonal to
    ``basis``, ``r`` upper triangular.

    In exact arithmetic ``z = A Q_j`` has components only on the last ``local`` columns of the
    basis (the previous and current blocks, and after a restart the kept Ritz vectors), so
    those are removed twice (classical Gram-Schmidt, where the cancellation happens) and the
    whole basis once (full reorthogonalisation), a second time only for a column that this
    pass shortened by more than ``1/sqrt 2`` (the DGKS test). Directions lost to cancellation
    (``A`` invariant on the span: breakdown) get random orthonormal ones (``r``'s column 0
    there), so the basis keeps growing."""
    c = np.zeros((basis.shape[1], z.shape[1]))
    near = basis[:, basis.shape[1] - local :]
    for _ in range(2):
        part = near.T @ z
        z -= near @ part
        c[-local:] += part
    before = np.linalg.norm(z, axis=0)
    for _ in range(2):
        part = basis.T @ z
        z -= basis @ part
        c += part
        after = np.linalg.norm(z, axis=0)
        if np.all(after >= np.sqrt(0.5) * before):
            break
        before = after
    weak = after <= 1e-10 * max(float(np.abs(c).max(initial=0.0)), 1e-300)
    if np.any(weak):  # breakdown: continue with fresh directions (still orthogonal to all)
        z[:, weak] = rng.standard_normal((z.shape[0], int(weak.sum())))
        for _ in range(2):
            z[:, weak] -= basis @ (basis.T @ z[:, weak])
    q, r = _orthonormalise(z)
    if np.any(weak):
        r[:, weak] = 0.0
    return c, q, r


def block_krylov_eigh(
    apply: Callable[[np.ndarray], np.ndarray],
    n: int,
    k: int,
    *,
    block: int | None = None,
    basis_size: int | None = None,
    tol: float = DEFAULT_TOL,
    seed: int = 0,
    max_products: int | None = None,
    start: Callable[[np.ndarray], np.ndarray] | None = None,
    dense_max_n: int = DENSE_MAX_N,
) -> TopEigenpairs:
    """The ``k`` largest eigenpairs of the symmetric ``A`` (module docstring).

    Parameters
    ----------
    apply : ``y (n, b) -> A y (n, b)``, float64.
    n, k : the order of ``A`` and the pairs wanted (``1 <= k < n``).
    block : ``b``, vectors per product (default 8 up to ``k = 128``, then 16).
    basis_size : ``m``, the basis size at which Rayleigh-Ritz and a restart happen (default
        ``max(2 k, k + 16 b)``, at most ``n / 2``).
    tol : converged when every ``||r_i|| <= tol * |θ_1|``.
    seed : seed of the Gaussian start block.
    max_products : stop (``converged=False``) after this many vectors (default ``max(40 k, 4000)``).
    start : a map applied to the start block (e.g. removing a known null vector).
    dense_max_n : up to this ``n``, and when a basis of ``k + 2 b`` vectors exceeds ``n / 2``,
        :func:`dense_top_eigh` instead.
    """
    b = int(block) if block is not None else (8 if k <= 128 else 16)
    m = int(basis_size) if basis_size is not None else max(2 * k, k + 16 * b)
    m = min(-(-m // b) * b, (n // 2) // b * b - b)  # whole blocks, the basis at most n / 2
    if n <= dense_max_n or m < k + 2 * b:
        return dense_top_eigh(apply, n, k)
    keep = min(m - b, -(-(k + (m - k) // 2) // b) * b)  # Ritz vectors kept at a restart
    limit = int(max_products) if max_products is not None else max(40 * k, 4000)
    rng = np.random.default_rng(seed)
    v = np.empty((n, m + b), order="F")
    h = np.zeros((m, m))
    q = rng.standard_normal((n, b))
    if start is not None:
        q = start(q)
    v[:, :b] = _orthonormalise(q)[0]
    coupling = np.zeros((b, b))  # A V = V H + Q_next coupling E^T (E: the last block)
    filled, products, restarts = 0, 0, 0
    while True:
        with blas_threads(1):  # many mid-sized calls: threads cost more than they gain
            while filled < m:
                cols = slice(filled, filled + b)
                z = np.asfortranarray(apply(v[:, cols]))
                products += b
                local = filled + b if filled == keep or filled < b else 2 * b
                c, q, coupling = _orthogonalise(z, v[:, : filled + b], local, rng)
                h[: filled + b, cols] = c
                h[cols, :filled] = c[:filled].T
                filled += b
                v[:, filled : filled + b] = q
        with blas_threads(1):  # threaded LAPACK here was 8x slower on 2 shared cores
            theta, y = sla.eigh(h, driver="evd", check_finite=False)  # faster than a subset
        theta, y = theta[::-1][:keep], y[:, ::-1][:, :keep]
        res = np.linalg.norm(coupling @ y[-b:], axis=0)
        done = bool(np.all(res[:k] <= tol * max(abs(theta[0]), 1e-300)))
        if done or products >= limit:
            u = v[:, :m] @ y[:, :k]
            return TopEigenpairs(
                theta[:k].copy(), u, res[:k], products, restarts, done, "block_krylov"
            )
        arrow = coupling @ y[-b:]  # A U = U Θ + Q_next arrow
        with blas_threads(1):
            v[:, :keep] = v[:, :m] @ y
        v[:, keep : keep + b] = v[:, m : m + b]
        h[:] = 0.0
        h[np.arange(keep), np.arange(keep)] = theta
        h[keep : keep + b, :keep] = arrow
        h[:keep, keep : keep + b] = arrow.T
        filled, restarts = keep, restarts + 1


def _centred(y: np.ndarray) -> np.ndarray:
    return y - y.mean(axis=0, keepdims=True)


def arpack_top_eigh(op: spla.LinearOperator, k: int, seed: int, tol: float) -> TopEigenpairs:
    """ARPACK's thick-restart Lanczos (``eigsh``, ``which="LA"``, centred seeded start vector,
    one BLAS thread) to ``tol`` relative to each eigenvalue (0: machine precision)."""
    n = op.shape[0]
    v0 = _centred(np.random.default_rng(seed).standard_normal((n, 1)))[:, 0]
    with blas_threads(1):
        vals, vecs = spla.eigsh(op, k=k, which="LA", v0=v0, tol=tol)
    order = np.argsort(vals)[::-1]
    return TopEigenpairs(vals[order], vecs[:, order], np.full(k, np.nan), 0, 0, True, "arpack")


def top_eigh(
    op: spla.LinearOperator,
    k: int,
    *,
    seed: int = 0,
    tol: float = 0.0,
    centred: bool = False,
    max_products: int | None = None,
) -> TopEigenpairs:
    """The top ``k`` eigenpairs of the symmetric operator ``op``: :func:`block_krylov_eigh`
    (residuals ``<= tol |λ_1|``, ``tol = 0``: :data:`DEFAULT_TOL`), else ARPACK when it does not
    converge. ``centred``: ``op`` annihilates the constant vector, so the start block is centred."""
    n = op.shape[0]
    tol_b, start = tol or DEFAULT_TOL, _centred if centred else None
    found = block_krylov_eigh(
        op.matmat, n, k, tol=tol_b, seed=seed, max_products=max_products, start=start
    )
    if found.converged:
        return found
    above = int(np.sum(found.residuals > tol_b * abs(found.values[0])))
    logger.info(
        "block Krylov: %d of %d eigenpairs above tolerance after %d products; ARPACK instead",
        above,
        k,
        found.products,
    )
    return arpack_top_eigh(op, k, seed, tol)
