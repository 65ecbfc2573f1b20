"""The common shape of every encoding, :class:`PositionEncoding`: a name, parameters, position
vectors and/or distances (every array read-only, ``distances`` too: copy it to modify it), and
the validators the family constructors share.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._distance_matrix import DistanceMatrix, euclidean_distances
from posgeom._errors import PosgeomError
from posgeom._validation import check_int, is_integer

MAX_HEADS = 256  # ALiBi and RoPE heads scored or built from a spec (real models use at most 128)
#: the widest model width d (and head width) accepted: 2**16, over twice the widest Transformer
#: published (25,600)
MAX_WIDTH = 65_536


def check_n(n_positions: Any, name: str = "n_positions") -> int:
    """Return ``n_positions`` as an int >= 1 or raise :class:`PosgeomError` (the integer rule of
    :mod:`posgeom._validation`: ``int`` or NumPy integer, never ``bool`` or ``3.0``)."""
    if not is_integer(n_positions):
        check_int(n_positions, name, 1)  # raises: the package's integer rule
    if n_positions < 1:
        raise PosgeomError(f"{name} must be >= 1, got {n_positions}; pass the number of positions")
    return int(n_positions)


def check_width(value: Any, name: str = "d") -> int:
    """Return ``value`` as a model width, an int ``1 <= value <= MAX_WIDTH``, or raise."""
    return check_int(value, name, 1, MAX_WIDTH)


def check_even(value: Any, name: str) -> int:
    """Return ``value`` as an even int ``2 <= value <= MAX_WIDTH`` (a width made of 2-D planes)
    or raise."""
    if not is_integer(value) or value < 2 or value % 2 or value > MAX_WIDTH:
        raise PosgeomError(f"{name} must be an even integer >= 2 and <= {MAX_WIDTH}, got {value!r}")
    return int(value)


def check_base(base: Any, name: str = "base") -> float:
    """Return ``base`` as a finite float > 1 (base <= 1: constant or growing frequencies)."""
    try:
        value = float(base)
    except (TypeError, ValueError):
        raise PosgeomError(f"{name} must be a number > 1, got {base!r}") from None
    if not np.isfinite(value) or value <= 1.0:
        raise PosgeomError(f"{name} must be a finite number > 1 (e.g. 10000), got {base!r}")
    return value


def symmetrize(matrix: np.ndarray) -> np.ndarray:
    """``(M + M^T) / 2`` with the diagonal set to exactly zero (float64)."""
    out = 0.5 * (matrix + matrix.T)
    np.fill_diagonal(out, 0.0)
    return out


def vector_lag_profile(vectors: np.ndarray) -> np.ndarray:
    """``f(k) = ||p_k - p_0||``: the lag profile of translation-invariant vectors (``(n,)``)."""
    v = np.asarray(vectors, dtype=np.float64)
    out = np.sqrt(np.sum((v - v[:1]) ** 2, axis=1))
    out[0] = 0.0
    return out


def readonly(array: Any) -> Any:
    """A read-only float64 copy of ``array`` (``None`` stays ``None``); the one helper for the
    read-only arrays of encodings and mechanisms."""
    if array is None:
        return None
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class PositionEncoding:
    """A positional encoding as geometry.

    Attributes
    ----------
    name: family name as registered in :func:`posgeom.encodings.available`.
    vectors: ``(n, d)`` float64 position vectors, or ``None`` (ALiBi and T5 have biases, not
        vectors; a distance file has only distances).
    params: the parameters that built it (JSON-friendly values).
    distance_matrix: ``(n, n)`` float64 distances when they are not the Euclidean distances of
        ``vectors`` (distance files); ``None`` otherwise.
    lag_profile: ``(n,)`` float64 ``f(k)`` with ``D_ij = f(|i - j|)`` (``f(0) = 0``) for a
        translation-invariant encoding (sinusoidal, RoPE, ALiBi, T5, NoPE); ``None`` otherwise.
        Without vectors or a matrix it defines the distances (T5: long contexts never need its
        ``(n, n)`` matrix, and the separation margin is ``min_{k >= 1} f(k)``, exactly).
    distances: the ``(n, n)`` matrix, exactly symmetric with a zero diagonal, built on first use.
    """

    name: str
    vectors: np.ndarray | None
    params: Mapping[str, Any] = field(default_factory=dict)
    distance_matrix: np.ndarray | None = field(default=None, repr=False)
    lag_profile: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.vectors is None and self.distance_matrix is None and self.lag_profile is None:
            raise PosgeomError("an encoding needs vectors, a distance matrix or a lag profile")
        lag = readonly(self.lag_profile)
        if lag is not None and (
            lag.ndim != 1 or lag.size < 1 or lag[0] != 0 or not np.all(lag >= 0)
        ):
            raise PosgeomError(
                "a lag profile is (n,) non-negative finite distances f(k) with f(0) = 0"
            )
        object.__setattr__(self, "lag_profile", lag)
        vec = readonly(self.vectors)
        if vec is not None and vec.ndim != 2:
            raise PosgeomError(f"position vectors must be 2-D (n, d), got shape {vec.shape}")
        dist = readonly(self.distance_matrix)
        if dist is not None:
            n = dist.shape[0]
            if dist.shape != (n, n) or (vec is not None and vec.shape[0] != n):
                raise PosgeomError(f"distance matrix {dist.shape} does not fit the vectors")
        sizes = {a.shape[0] for a in (vec, dist, lag) if a is not None}
        if len(sizes) > 1:
            raise PosgeomError(f"the vectors, distances and lag profile have {sorted(sizes)} rows")
        object.__setattr__(self, "vectors", vec)
        object.__setattr__(self, "distance_matrix", dist)
        object.__setattr__(self, "params", dict(self.params))

    @property
    def n_positions(self) -> int:
        """Number of positions ``n``."""
        for src in (self.vectors, self.distance_matrix, self.lag_profile):
            if src is not None:
                return int(src.shape[0])
        raise AssertionError("unreachable: __post_init__ requires one of them")

    @property
    def dim(self) -> int | None:
        """Width ``d`` of the vectors, or ``None`` when there are none."""
        return None if self.vectors is None else int(self.vectors.shape[1])

    @functools.cached_property
    def typed_distances(self) -> DistanceMatrix:
        """The position distances as a :class:`~posgeom._distance_matrix.DistanceMatrix`, built on
        first use and kept: a stored ``distance_matrix`` validated (it came from outside), a lag
        profile read at ``|i - j|`` (valid by construction: ``f(0) = 0``, ``f >= 0``, checked in
        the constructor) or the Euclidean distances of the vectors (valid by construction)."""
        if self.distance_matrix is not None:
            return DistanceMatrix.validated(self.distance_matrix, name=f"{self.name} distances")
        if self.lag_profile is not None:
            idx = np.arange(self.n_positions)
            lags = self.lag_profile[np.abs(idx[:, None] - idx[None, :])]
            return DistanceMatrix.derived(lags)
        return DistanceMatrix.derived(euclidean_distances(self.vectors))

    @property
    def distances(self) -> np.ndarray:
        """``(n, n)`` float64 position distances: exactly symmetric, zero diagonal, read-only
        (:attr:`typed_distances`)."""
        return self.typed_distances.distances

    def __repr__(self) -> str:
        shape = None if self.vectors is None else tuple(self.vectors.shape)
        return (
            f"{type(self).__name__}(name={self.name!r}, n={self.n_positions}, "
            f"vectors={shape}, params={self.params})"
        )


def restricted(enc: Any, positions: np.ndarray) -> PositionEncoding:
    """``enc`` (built for positions ``0 .. N-1``) restricted to ``positions`` (itself when they
    are all of them: a long context's lag profile stays a profile)."""
    if len(positions) == enc.n_positions and np.array_equal(positions, np.arange(len(positions))):
        return enc
    if getattr(enc, "vectors", None) is not None and getattr(enc, "distance_matrix", None) is None:
        return PositionEncoding(enc.name, enc.vectors[positions], enc.params)
    dist = enc.distances[np.ix_(positions, positions)]
    vec = None if enc.vectors is None else enc.vectors[positions]
    return PositionEncoding(enc.name, vec, enc.params, dist)
