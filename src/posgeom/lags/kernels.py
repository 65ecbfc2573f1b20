"""Lag kernels: what an encoding does to a query-key pair ``k`` tokens apart, one vector per lag.

Each function returns ``(m, d)`` float64 vectors ``v_k`` for the lags ``k`` (``(m,)`` ints), so the
distances ``||v_k - v_k'||`` are a geometry across lags that the scores (stress, violation rate)
compare with the corpus's lag geometry (:func:`posgeom.lag_geometry`), as position vectors are
compared with the positional geometry. The formulas are the families' own (no copy here):

- RoPE: ``v_k = a^2 (cos k w_f, sin k w_f)_f`` (:func:`posgeom.encodings.rope.rotary_vectors` at
  the positions ``k``): the rotation of each frequency ``w_f`` by ``k``, scaled by the logit scale
  ``a^2`` (``a`` the attention factor multiplying cos and sin, on queries and keys). Its inner
  product kernel is ``<v_0, v_k> = a^4 sum_f cos(k w_f)``.
- ALiBi: ``v_k = (m_h k)_h``, the bias of each head (:func:`~posgeom.encodings.alibi.alibi_slopes`).
- T5: the bias table row of ``bucket(-k)`` (a causal query looking ``k`` back;
  :func:`~posgeom.encodings.t5.t5_relative_position_bucket`), or the bucket index without a table.
- learned absolute table ``p`` (``(n, d)``): ``v_k = mean_{i < n - k} p_i * p_{i+k}``
  (elementwise), whose sum is the mean inner product ``mean_i <p_i, p_{i+k}>``.
- NoPE: ``v_k = 0`` for every lag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "alibi_lag_vectors",
    "learned_lag_vectors",
    "nope_lag_vectors",
    "rope_lag_vectors",
    "t5_lag_vectors",
]


def _lags(lags: Any) -> np.ndarray:
    arr = np.asarray(lags)
    if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0:
        raise PosgeomError(f"lags must be a 1-D array of non-negative integers, got {lags!r}")
    return arr.astype(np.int64)


def rope_lag_vectors(inv_freq: Any, lags: Any, *, attention_factor: float = 1.0) -> np.ndarray:
    """``(m, 2F)``: ``attention_factor^2 (cos k w_f, sin k w_f)`` per lag (module docstring)."""
    from posgeom.encodings.rope import rotary_vectors

    w = np.asarray(inv_freq, dtype=np.float64)
    return float(attention_factor) ** 2 * rotary_vectors(w, _lags(lags), layout="half")


def alibi_lag_vectors(slopes: Any, lags: Any) -> np.ndarray:
    """``(m, H)``: ``m_h k`` per lag and head."""
    return _lags(lags).astype(np.float64)[:, None] * np.asarray(slopes, dtype=np.float64)[None, :]


def t5_lag_vectors(
    lags: Any,
    *,
    bias: Any = None,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = False,
) -> np.ndarray:
    """``(m, H)`` bias rows of ``bucket(-k)`` (``bias``: ``(num_buckets, H)``), or ``(m, 1)``
    bucket indices without a table."""
    from posgeom.encodings.t5 import t5_relative_position_bucket

    buckets = t5_relative_position_bucket(
        -_lags(lags),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    if bias is None:
        return buckets.astype(np.float64)[:, None]
    table = np.asarray(bias, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != num_buckets:
        raise PosgeomError(f"bias must be (num_buckets={num_buckets}, H), got {table.shape}")
    return table[buckets]


def learned_lag_vectors(table: Any, lags: Any) -> np.ndarray:
    """``(m, d)``: ``mean_{i < n-k} p_i * p_{i+k}`` of the ``(n, d)`` table; every lag ``< n``."""
    p = np.asarray(table, dtype=np.float64)
    lag = _lags(lags)
    if p.ndim != 2 or lag.max() >= p.shape[0]:
        raise PosgeomError(
            f"a learned table of {p.shape[0] if p.ndim == 2 else '?'} rows has no lag "
            f"{int(lag.max())}; extend the table to the target length first"
        )
    return np.stack([(p[: p.shape[0] - k] * p[k:]).mean(axis=0) for k in lag])


def nope_lag_vectors(lags: Any) -> np.ndarray:
    """``(m, 1)`` zeros: no position information, every lag alike."""
    return np.zeros((_lags(lags).size, 1))
