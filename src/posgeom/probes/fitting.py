"""The probes' estimators, in numpy/scipy (float64), and the folds they are scored on
(posgeom's core needs only numpy and scipy; ``tests/probes/test_probes.py`` checks each against
a pseudo-inverse or scikit-learn, a test dependency only).

* :func:`least_squares` is ordinary least squares with an intercept: the minimum-norm
  least-squares coefficients of the centred data, ``w = pinv(X - x̄) (y - ȳ)``, ``b = ȳ - x̄ w``,
  singular values below ``max(m, p) · eps · s_max`` counting as zero (numpy's
  ``lstsq(rcond=None)`` and ``pinv`` convention; LAPACK's default cutoff ``eps`` keeps or drops
  the round-off singular value a table wider than a fold leaves after centring by the last bits
  of the BLAS). For a table narrower than a fold it is scikit-learn's ``LinearRegression()``.
  ``alpha > 0`` adds ``alpha ||w||²`` (``Ridge(alpha)``, through the eigendecomposition of
  ``Xcᵀ Xc``).
* :func:`logistic_regression` is ``LogisticRegression()`` (L2, ``C = 1``, intercept not
  penalised, labels 0/1): ``argmin_{w,b} ½||w||² + C Σ_i log(1 + exp(-s_i (x_i w + b)))`` with
  ``s_i = 2 y_i - 1``, by L-BFGS on the exact gradient. The design is a linear operator
  (``matvec``/``rmatvec``), so the order probe never builds its ``(m, 2d)`` pair matrix.
* :func:`kfold` is the shuffled K-fold of the PE-Study protocol (``rng.permutation``, then
  ``numpy.array_split`` into ``K`` folds), :func:`group_kfold` the same over groups (held-out
  sequences).
* :func:`rounded_mae` is PE-Study's error: ``mean |round(ŷ) - y|``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, optimize
from scipy.sparse import linalg as sparse_linalg

from posgeom._errors import PosgeomError

__all__ = [
    "LinearFit",
    "PairDesign",
    "group_kfold",
    "kfold",
    "least_squares",
    "logistic_regression",
    "rounded_mae",
]


@dataclass(frozen=True)
class LinearFit:
    """``predict(X) = X @ coef + intercept`` (float64)."""

    coef: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64) @ self.coef + self.intercept


def least_squares(x: np.ndarray, y: np.ndarray, *, alpha: float = 0.0) -> LinearFit:
    """Least squares with an intercept (``alpha = 0``: the minimum-norm fit, singular values
    below ``max(m, p) · eps · s_max`` dropped; ``alpha > 0``: ``Ridge(alpha)``; module
    docstring). ``x`` ``(m, p)``, ``y`` ``(m,)``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x_mean, y_mean = x.mean(axis=0), y.mean()
    xc, yc = x - x_mean, y - y_mean
    if alpha > 0:
        lam, v = linalg.eigh(xc.T @ xc)  # (p, p): cheaper than the SVD of a tall X
        coef = v @ ((v.T @ (xc.T @ yc)) / (np.clip(lam, 0.0, None) + alpha))
    else:
        cutoff = max(xc.shape) * np.finfo(np.float64).eps  # relative to s_max (numpy's rcond=None)
        coef = linalg.lstsq(xc, yc, cond=cutoff, lapack_driver="gelsd")[0]
    return LinearFit(coef, float(y_mean - x_mean @ coef))


@dataclass(frozen=True)
class PairDesign:
    """The order probe's design ``X = [P[first], P[second]]`` ``(m, 2d)`` as an operator: a row
    is the concatenation of two table rows; ``X w`` and ``Xᵀ r`` cost ``O(m + n d)``."""

    table: np.ndarray  # (n, d) float64
    first: np.ndarray  # (m,) row indices
    second: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.first.size), 2 * int(self.table.shape[1])

    def matvec(self, w: np.ndarray) -> np.ndarray:
        first, second = (self.table @ w.reshape(2, -1).T).T  # one pass over the table
        return first[self.first] + second[self.second]

    def rmatvec(self, r: np.ndarray) -> np.ndarray:
        n = self.table.shape[0]
        a = np.bincount(self.first, weights=r, minlength=n)
        b = np.bincount(self.second, weights=r, minlength=n)
        return (self.table.T @ np.stack([a, b], axis=1)).T.ravel()

    def rows(self, keep: np.ndarray) -> PairDesign:
        return PairDesign(self.table, self.first[keep], self.second[keep])

    def dense(self) -> np.ndarray:
        """The ``(m, 2d)`` matrix itself (for checks)."""
        return np.hstack([self.table[self.first], self.table[self.second]])


def logistic_regression(
    design: PairDesign | np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    tol: float = 1e-8,
    max_iter: int = 2000,
) -> Callable[[PairDesign | np.ndarray], np.ndarray]:
    """L2 logistic regression (module docstring); returns ``predict(design) -> (m,) {0, 1}``."""
    op = _operator(design)
    s = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
    p = op.shape[1]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:p], theta[p]
        z = s * (op.matvec(w) + b)
        e = np.exp(-np.abs(z))  # log σ(z) = min(z, 0) - log1p(e); σ(-z) = [e or 1] / (1 + e)
        value = 0.5 * w @ w - C * float(np.sum(np.minimum(z, 0.0) - np.log1p(e)))
        r = -C * s * (np.where(z >= 0, e, 1.0) / (1.0 + e))  # d loss / d margin
        return float(value), np.concatenate([w + op.rmatvec(r), [r.sum()]])

    res = optimize.minimize(
        loss,
        np.zeros(p + 1),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15},
    )
    w, b = res.x[:p], float(res.x[p])

    def predict(new: PairDesign | np.ndarray) -> np.ndarray:
        return (_operator(new).matvec(w) + b > 0).astype(np.int64)

    return predict


def _operator(design: PairDesign | np.ndarray) -> Any:
    """A pair design as it is, a dense ``(m, p)`` matrix as a scipy ``LinearOperator``."""
    if isinstance(design, PairDesign):
        return design
    return sparse_linalg.aslinearoperator(np.asarray(design, np.float64))


def kfold(m: int, k: int, seed: int) -> list[np.ndarray]:
    """The ``k`` test folds of ``m`` shuffled rows: ``array_split(default_rng(seed).permutation(m),
    k)``; every row is tested exactly once."""
    if m < k:
        raise PosgeomError(f"{m} rows cannot make {k} folds; use more positions or fewer folds")
    return np.array_split(np.random.default_rng(seed).permutation(m), k)


def group_kfold(groups: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """Test folds of rows such that all rows of a group (a sequence) are in one fold: the groups
    are shuffled with ``seed`` and split into ``k`` parts."""
    groups = np.asarray(groups)
    unique = np.unique(groups)
    if unique.size < k:
        raise PosgeomError(
            f"{unique.size} sequences cannot make {k} held-out folds; use more sequences"
        )
    parts = np.array_split(np.random.default_rng(seed).permutation(unique), k)
    return [np.flatnonzero(np.isin(groups, part)) for part in parts]


def rounded_mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """``mean |round(ŷ) - y|`` (PE-Study's absolute-position error, in positions)."""
    return float(np.mean(np.abs(np.round(y_pred) - np.asarray(y_true, dtype=np.float64))))
