"""Every common positional encoding as geometry, behind one family registry.

Each family lives in one module (the only place its mathematics lives) and registers a
:class:`~posgeom.encodings._registry.Family` by decorator; see :mod:`posgeom.encodings._registry`.
Each constructor takes the number of positions first and returns a :class:`PositionEncoding` with
``name``, ``n_positions``, ``params``, ``vectors`` (``(n, d)`` float64 or ``None``) and
``distances`` (``(n, n)`` float64, read-only, exactly symmetric, zero diagonal)::

    posgeom.encodings.sinusoidal(32, d=128)
    posgeom.encodings.get("rope", 32, head_dim=64, scaling="yarn", factor=4,
                          original_max_position_embeddings=8)
    posgeom.encodings.available()
"""

from __future__ import annotations

from typing import Any

from posgeom._discovery import import_public_modules
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._mechanism import Mechanism, MechanismParams
from posgeom.encodings._registry import (
    Family,
    extension_of,
    families,
    families_with_role,
    family,
    family_of_mechanism,
    is_candidate,
    register,
    role_of,
)
from posgeom.encodings.alibi import ALiBiEncoding, alibi, alibi_slopes
from posgeom.encodings.basic import from_file, nope, random
from posgeom.encodings.learned import learned
from posgeom.encodings.mds import MDSEncoding, low_rank_mds, mds, smacof
from posgeom.encodings.rope import default_rope_head_dim, rope, rope_heads
from posgeom.encodings.rope_mechanism import RoPEEncoding
from posgeom.encodings.rope_types import ROPE_TYPES, rope_frequencies, rope_inverse_frequencies
from posgeom.encodings.sinusoidal import sinusoidal
from posgeom.encodings.t5 import T5Encoding, t5
from posgeom.encodings.t5_mechanism import t5_relative_position_bucket
from posgeom.encodings.xpos import xpos

import_public_modules(__name__, __path__)  # a new module is found: one file, no list


def available() -> list[str]:
    """Sorted names accepted by :func:`get`."""
    return sorted(families())


def get(name: str, n_positions: int, **params: Any) -> PositionEncoding:
    """Build the encoding ``name`` for ``n_positions`` positions with ``params``.

    ``from_file`` takes ``path=``; ``mds``, ``low_rank_mds`` and ``mds+smacof`` take ``source=``
    (distances or distributions) and check that it has ``n_positions`` positions; ``learned``
    takes ``model=``.
    """
    return family(name).build(n_positions, **params)


__all__ = [
    "ROPE_TYPES",
    "ALiBiEncoding",
    "Family",
    "MDSEncoding",
    "Mechanism",
    "MechanismParams",
    "PositionEncoding",
    "RoPEEncoding",
    "T5Encoding",
    "alibi",
    "alibi_slopes",
    "available",
    "default_rope_head_dim",
    "extension_of",
    "families",
    "families_with_role",
    "family",
    "family_of_mechanism",
    "from_file",
    "get",
    "is_candidate",
    "learned",
    "low_rank_mds",
    "mds",
    "nope",
    "random",
    "register",
    "role_of",
    "rope",
    "rope_frequencies",
    "rope_heads",
    "rope_inverse_frequencies",
    "sinusoidal",
    "smacof",
    "t5",
    "t5_relative_position_bucket",
    "xpos",
]
