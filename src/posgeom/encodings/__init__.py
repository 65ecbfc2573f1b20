"""Every common positional encoding as geometry, behind one registry.

Each constructor takes the number of positions first and returns a :class:`PositionEncoding` with
``name``, ``n_positions``, ``params``, ``vectors`` (``(n, d)`` float64 or ``None``) and
``distances()`` (``(n, n)`` float64, exactly symmetric, zero diagonal)::

    posgeom.encodings.sinusoidal(32, d=128)
    posgeom.encodings.get("rope", 32, head_dim=64, scaling="yarn", factor=4,
                          original_max_position_embeddings=8)
    posgeom.encodings.available()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings.alibi import ALiBiEncoding, alibi, alibi_slopes
from posgeom.encodings.basic import from_file, nope, random
from posgeom.encodings.learned import learned
from posgeom.encodings.mds import MDSEncoding, low_rank_mds, mds
from posgeom.encodings.rope import RoPEEncoding, rope, rope_inverse_frequencies
from posgeom.encodings.sinusoidal import sinusoidal
from posgeom.encodings.t5 import T5Encoding, t5, t5_relative_position_bucket
from posgeom.encodings.xpos import xpos


def _with_n(name: str, build: Callable[..., PositionEncoding]) -> Callable[..., PositionEncoding]:
    """Registry entry for constructors whose size comes from their input: check it equals n."""

    def entry(n_positions: int, *args: Any, **params: Any) -> PositionEncoding:
        enc = build(*args, **params)
        if enc.n_positions != n_positions:
            raise PosgeomError(
                f"{name}: the input has {enc.n_positions} positions, not {n_positions}"
            )
        return enc

    return entry


def _from_file_entry(n_positions: int, path: Any = None, **params: Any) -> PositionEncoding:
    if path is None:
        raise PosgeomError("from_file needs path=<.npy, .npz or .safetensors file>")
    return from_file(path, n_positions, **params)


_REGISTRY: dict[str, Callable[..., PositionEncoding]] = {
    "sinusoidal": sinusoidal,
    "learned": learned,
    "rope": rope,
    "alibi": alibi,
    "t5": t5,
    "xpos": xpos,
    "nope": nope,
    "random": random,
    "from_file": _from_file_entry,
    "mds": _with_n("mds", mds),
    "low_rank_mds": _with_n("low_rank_mds", low_rank_mds),
}


def available() -> list[str]:
    """Sorted names accepted by :func:`get`."""
    return sorted(_REGISTRY)


def get(name: str, n_positions: int, **params: Any) -> PositionEncoding:
    """Build the encoding ``name`` for ``n_positions`` positions with ``params``.

    ``from_file`` takes ``path=``; ``mds`` and ``low_rank_mds`` take ``source=`` (distances or
    distributions) and check that it has ``n_positions`` positions.
    """
    if name not in _REGISTRY:
        raise PosgeomError(f"unknown encoding {name!r}; known encodings: {', '.join(available())}")
    if name in ("mds", "low_rank_mds"):
        if "source" not in params:
            raise PosgeomError(f"{name} needs source=<(n, n) distances or (n, V) distributions>")
        return _REGISTRY[name](n_positions, params.pop("source"), **params)
    return _REGISTRY[name](n_positions, **params)


__all__ = [
    "ALiBiEncoding",
    "MDSEncoding",
    "PositionEncoding",
    "RoPEEncoding",
    "T5Encoding",
    "alibi",
    "alibi_slopes",
    "available",
    "from_file",
    "get",
    "learned",
    "mds",
    "nope",
    "random",
    "rope",
    "rope_inverse_frequencies",
    "sinusoidal",
    "t5",
    "t5_relative_position_bucket",
    "xpos",
]
