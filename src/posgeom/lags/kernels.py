"""Lag kernels: what an encoding does to a query-key pair ``k`` tokens apart, one vector per lag.

A kernel gives ``(m, d)`` float64 vectors ``v_k`` for the lags ``k`` (``(m,)`` ints), so the
distances ``||v_k - v_k'||`` are a geometry across lags that the scores (stress, violation rate)
compare with the corpus's lag geometry (:func:`posgeom.lag_geometry`), as position vectors are
compared with the positional geometry. Each family owns its kernel (its ``extension``'s
:meth:`~posgeom.encodings._extension.Extension.lag_vectors`, in the family's file);
:func:`lag_vectors` asks the family registry for it. The named kernels (RoPE, ALiBi, T5, learned
tables, NoPE) are the families' own functions, in the families' files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from posgeom.encodings import extension_of
from posgeom.encodings._extension import ExtensionContext, Strategy

__all__ = [
    "lag_vectors",
    "nope_lag_vectors",
]


def lag_vectors(
    family_name: str,
    params: Mapping[str, Any],
    strategy: Strategy,
    lags: Any,
    *,
    trained_length: int,
    target_length: int,
    position_distances: Any = None,
) -> np.ndarray:
    """The ``(m, d)`` lag kernel of ``strategy`` on a model of family ``family_name`` with
    ``params`` at ``target_length`` (its family extension's :meth:`lag_vectors`; one line for a family
    without a kernel). ``position_distances``: the corpus's per-position geometry, for kernels
    that need it (the Gower extension of a learned table)."""
    ctx = ExtensionContext(int(trained_length), int(target_length), position_distances)
    return extension_of(family_name).lag_vectors(params, strategy, lags, ctx)


def nope_lag_vectors(lags: Any) -> np.ndarray:
    """``(m, 1)`` zeros: no position information, every lag alike (NoPE's kernel)."""
    none = Strategy("none", "nope", "none")
    return lag_vectors("nope", {}, none, lags, trained_length=1, target_length=1)
