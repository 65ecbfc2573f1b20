"""Bootstrap weights of sequences: counter-based, so a sequence's weights depend only on
(seed, stream, its index in the stream, replicate), never on batching or workers (see
:mod:`posgeom.corpus.bootstrap` for the schemes).
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, check_int, is_integer

__all__ = [
    "MAX_POISSON_WEIGHT",
    "MAX_REPLICATES",
    "PROBE_REPLICATES",
    "REPLICATES",
    "SCHEMES",
    "check_replicates",
    "check_scheme",
    "sequence_weights",
]

SCHEMES = ("half", "poisson")
#: replicates of a bootstrap (or half-sample) run: at least 2; past 10,000 an interval's Monte
#: Carlo error is negligible while the work and the (nnz, B) replicate counts keep growing
MAX_REPLICATES = 10_000
REPLICATES = Interval(Integral, 2, MAX_REPLICATES)
#: half-sample replicates of ``probe``'s per-layer stress intervals by default (analyze-model:
#: 100; a probe keeps its cost low, the interval's ends are then rougher); here, not in
#: :mod:`posgeom.probes`, so that the command line reads it without importing scipy.stats
PROBE_REPLICATES = 20

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
# Poisson(1) CDF for k = 0 .. 20; P(K > 20) < 1e-19 is below the 2^-53 resolution of u
_CDF = np.cumsum([np.exp(-1.0) / math.factorial(k) for k in range(21)])


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function on a uint64 array (wrapping arithmetic)."""
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def check_replicates(replicates: Any) -> int:
    """``B`` as an int, or a :class:`PosgeomError` unless it is an integer in :data:`REPLICATES`."""
    if not is_integer(replicates):
        raise PosgeomError(f"bootstrap must be an integer number of replicates, got {replicates!r}")
    if replicates < 2:
        raise PosgeomError(
            f"bootstrap needs at least 2 replicates, got {replicates}; use 200 or more for 95% "
            "intervals"
        )
    if replicates > MAX_REPLICATES:
        raise PosgeomError(
            f"bootstrap asks for {replicates} replicates, more than {MAX_REPLICATES}; 200 to "
            "2000 give 95% intervals"
        )
    return int(replicates)


def sequence_weights(
    index: np.ndarray,
    *,
    replicates: int | np.ndarray,
    seed: int = 0,
    stream: int = 0,
    scheme: str = "half",
) -> np.ndarray:
    """Weights ``w[s, b]`` of the sequences ``index`` (see the module docstring).

    ``index``: ``(m,)`` non-negative sequence indices of one stream; ``replicates``: ``B`` (the
    replicates ``0 .. B-1``) or an array of replicate numbers; ``scheme``: ``"half"``
    (Bernoulli(1/2)) or ``"poisson"`` (Poisson(1)). Returns ``(m, B)`` uint8.
    """
    seed = check_int(seed, "seed", 0, 2**64 - 1)
    stream = check_int(stream, "stream", 0, 2**64 - 1)
    check_scheme(scheme)
    reps = np.arange(replicates) if np.isscalar(replicates) else np.asarray(replicates)
    base = _mix(_mix(np.array([seed], dtype=np.uint64)) ^ np.uint64(stream))
    per_seq = _mix(base ^ np.asarray(index, dtype=np.uint64).reshape(-1))
    h = _mix(per_seq[:, None] ^ reps.astype(np.uint64)[None, :])
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    if scheme == "half":
        return (u < 0.5).astype(np.uint8)
    return np.searchsorted(_CDF, u, side="right").astype(np.uint8)


def check_scheme(scheme: Any) -> str:
    if scheme not in SCHEMES:
        raise PosgeomError(
            f"unknown bootstrap scheme {scheme!r}; choose one of {', '.join(SCHEMES)}"
        )
    return scheme


MAX_POISSON_WEIGHT = int(_CDF.size)  # bound on a Poisson(1) weight: k <= 20 (see _CDF)
