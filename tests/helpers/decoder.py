"""References for the decoder tests (tests/nn/test_nn_decoder.py, tests/extension/test_extension_decoder.py)."""

from __future__ import annotations

import numpy as np


def gower_rows_reference(table: np.ndarray, upto: int) -> np.ndarray:
    """Track B's Gower rows as first written (the exact MDS by SVD of the centred table)."""
    from posgeom.embed.extend import gower_extension

    n = len(table)
    sq = ((table[:, None, :] - table[None, :, :]) ** 2).sum(-1)
    profile = np.array([np.mean(np.diagonal(sq, k)) for k in range(n)])
    far = float(np.mean(profile[-16:]))
    mean = table.mean(0)
    u, s, vt = np.linalg.svd(table - mean, full_matrices=False)
    keep = s > 1e-9 * s[0]
    coords, eig, vt = u[:, keep] * s[keep], s[keep] ** 2, vt[keep]
    lags = np.arange(n, upto)[:, None] - np.arange(n)[None, :]
    new_sq = np.where(lags < n, profile[np.minimum(lags, n - 1)], far)
    return mean + gower_extension(coords, eig, sq, new_sq) @ vt
