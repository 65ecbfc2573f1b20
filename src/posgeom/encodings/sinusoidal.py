"""Sinusoidal encoding (Vaswani et al., 2017)."""

from __future__ import annotations

import numpy as np

from posgeom.encodings._base import PositionEncoding, check_base, check_even, check_n


def sinusoidal_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """``(d/2,)`` angular frequencies ``omega_k = base^(-2k/d)``, ``k = 0 .. d/2 - 1`` (float64)."""
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def sinusoidal(n_positions: int, d: int = 768, base: float = 10000.0) -> PositionEncoding:
    """Vaswani sinusoidal vectors, interleaved layout, Euclidean distances.

    ``PE[i, 2k] = sin(i omega_k)``, ``PE[i, 2k+1] = cos(i omega_k)``, ``omega_k = base^(-2k/d)``,
    positions ``i = 0 .. n-1``. Every vector has norm ``sqrt(d/2)`` and
    ``||PE_i - PE_j||^2 = sum_k (2 - 2 cos((i-j) omega_k))`` depends only on ``|i - j|``.

    Returns a :class:`PositionEncoding` with ``vectors`` of shape ``(n, d)``.
    Raises :class:`PosgeomError` for ``n < 1``, odd ``d`` or ``d < 2``, and ``base <= 1``.
    """
    n = check_n(n_positions)
    d = check_even(d, "sinusoidal width d")
    base = check_base(base)
    angles = np.arange(n, dtype=np.float64)[:, None] * sinusoidal_frequencies(int(d), base)[None, :]
    pe = np.empty((n, int(d)))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return PositionEncoding("sinusoidal", pe, {"d": int(d), "base": base})
