"""Deterministic MDS output: canonical bases in tied eigenspaces and sign rules ("Deterministic
output" in :mod:`posgeom.embed.mds`)."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["canonical_basis", "canonicalise"]


def _legendre_candidates(n: int, count: int) -> np.ndarray:
    x = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return np.polynomial.legendre.legvander(x, count)[:, 1:]


def canonical_basis(u: np.ndarray, extra: int = 5) -> np.ndarray:
    """A basis of span(u) that does not depend on which basis ``u`` the solver returned."""
    n, m = u.shape
    chosen: list[np.ndarray] = []
    units = (np.eye(1, n, k)[0] for k in range(n))
    for v in itertools.chain(_legendre_candidates(n, m + extra).T, units):
        if len(chosen) == m:
            break
        p = u @ (u.T @ v)
        for c in chosen:
            p -= c * (c @ p)
        if np.linalg.norm(p) > 1e-6 * max(np.linalg.norm(v), 1e-300):
            for c in chosen:  # re-orthogonalise once for stability
                p -= c * (c @ p)
            chosen.append(p / np.linalg.norm(p))
    return np.column_stack(chosen)


def _tie_groups(vals: np.ndarray, rtol: float) -> list[list[int]]:
    if not len(vals):
        return []
    scale = max(float(np.max(np.abs(vals), initial=0.0)), 1e-300)
    breaks = np.flatnonzero(~(np.abs(np.diff(vals)) <= rtol * scale)) + 1  # NaN: a break
    return [g.tolist() for g in np.split(np.arange(len(vals)), breaks)]


def _orient(vecs: np.ndarray) -> np.ndarray:
    n = vecs.shape[0]
    idx = np.arange(n, dtype=np.float64)
    idx -= idx.mean()
    cov = idx @ vecs
    flip = cov < -1e-12 * np.linalg.norm(idx)
    undecided = np.abs(cov) <= 1e-12 * np.linalg.norm(idx)
    if undecided.any():
        big = np.argmax(np.abs(vecs), axis=0)
        flip |= undecided & (vecs[big, np.arange(vecs.shape[1])] < 0)
    return vecs * np.where(flip, -1.0, 1.0)


def canonicalise(vals: np.ndarray, vecs: np.ndarray, r: int, rtol: float):
    """Canonical bases in tied eigenspaces that touch the top ``r``; deterministic signs.

    A group tied with zero (``lambda <= rtol * lambda_max``: the null space) is numerically null
    and keeps the solver's basis: its coordinates are at most ``sqrt(rtol * lambda_max)``, and
    Gram-Schmidt over hundreds of vectors would cost seconds per MDS.
    """
    vecs = vecs.copy()
    ties = []
    null = rtol * max(float(np.max(np.abs(vals), initial=0.0)), 1e-300)
    for g in _tie_groups(vals, rtol):
        if len(g) > 1 and g[0] < r and vals[g[0]] > null:
            vecs[:, g] = canonical_basis(vecs[:, g])
            ties.append(tuple(g))
    return _orient(vecs), tuple(ties)
