"""ALiBi (Press et al., 2022) as geometry.

ALiBi adds the bias ``-m_h |i - j|`` to the attention logits of head ``h``; it has no vectors. The
bias implies a one-dimensional (rank-1) geometry per head: position vector ``m_h * i`` (an
``(n, 1)`` column) and distance ``m_h |i - j|``.

Slopes as the reference code sets them (``get_slopes`` in ofirpress/attention_with_linear_biases):
for a power of two ``H``, ``m_h = 2^(-8h/H)``, ``h = 1 .. H`` (head index ``h - 1`` here); otherwise
the slopes of the closest lower power of two ``P``, followed by every other slope of ``2P``
(``[0::2][:H-P]``). For ``H = 12``: ``2^-1 .. 2^-8`` then ``2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5``.

``head=None`` stacks all heads as columns, vectors ``(n, H)`` with column ``h`` equal to ``m_h * i``
(Euclidean distance ``||m|| |i - j|``); ``head=h`` is one head; ``head="best"`` picks the head
with the lowest stress against ``target`` (see :meth:`ALiBiEncoding.best_head`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding, check_n, check_positive_int


def alibi_slopes(n_heads: int) -> np.ndarray:
    """``(n_heads,)`` float64 ALiBi slopes, exactly as the reference ``get_slopes``."""
    n_heads = check_positive_int(n_heads, "ALiBi n_heads")

    def power_of_2(h: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(h) - 3)))
        return [start * start**i for i in range(h)]

    def slopes(h: int) -> list[float]:
        if math.log2(h).is_integer():
            return power_of_2(h)
        closest = 2 ** math.floor(math.log2(h))
        return power_of_2(closest) + slopes(2 * closest)[0::2][: h - closest]

    return np.asarray(slopes(n_heads), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ALiBiEncoding(PositionEncoding):
    """ALiBi geometry; ``slopes`` holds all ``H`` slopes, ``head`` the chosen head or ``None``."""

    slopes: tuple[float, ...] = ()
    head: int | None = None

    def per_head(self) -> list[ALiBiEncoding]:
        """One rank-1 encoding per head, in head order."""
        return [alibi(self.n_positions, len(self.slopes), head=h) for h in range(len(self.slopes))]

    def head_stresses(self, target: Any, *, kind: str = "paper") -> np.ndarray:
        """``(H,)`` stress of every head against ``target`` (``posgeom.scores.stress.stress``)."""
        from posgeom.scores.stress import stress

        return np.array([stress(enc, target, kind=kind) for enc in self.per_head()])

    def best_head(self, target: Any, *, kind: str = "paper") -> ALiBiEncoding:
        """The single-head encoding with the lowest stress against ``target`` (first on ties)."""
        return self.per_head()[int(np.argmin(self.head_stresses(target, kind=kind)))]


def alibi(
    n_positions: int,
    n_heads: int = 12,
    head: int | str | None = None,
    *,
    target: Any = None,
    kind: str = "paper",
) -> ALiBiEncoding:
    """ALiBi geometry: vectors ``m_h * i`` (see the module docstring).

    ``head``: ``None`` (all heads as columns), an index ``0 .. H-1``, or ``"best"`` (needs
    ``target``, an ``(n, n)`` distance matrix such as the Hellinger matrix; ``kind``: the stress).
    """
    n = check_n(n_positions)
    slopes = alibi_slopes(n_heads)
    if isinstance(head, str):
        if head != "best":
            raise PosgeomError(f"ALiBi head must be None, an integer or 'best', got {head!r}")
        if target is None:
            raise PosgeomError(
                "ALiBi head='best' needs target=<(n, n) distance matrix> to score heads"
            )
        return alibi(n, n_heads).best_head(target, kind=kind)
    pos = np.arange(n, dtype=np.float64)[:, None]
    if head is None:
        vectors, params = pos * slopes[None, :], {"n_heads": int(n_heads), "head": None}
    else:
        if (
            isinstance(head, bool)
            or not isinstance(head, (int, np.integer))
            or not 0 <= head < len(slopes)
        ):
            raise PosgeomError(f"ALiBi head must be in 0 .. {len(slopes) - 1}, got {head!r}")
        head = int(head)
        vectors = pos * slopes[head]
        params = {"n_heads": int(n_heads), "head": head, "slope": float(slopes[head])}
    scale = float(np.linalg.norm(vectors[1])) if n > 1 else 0.0  # ||m|| or m_h
    gaps = np.abs(pos - pos.T)
    return ALiBiEncoding(
        "alibi", vectors, params, scale * gaps, slopes=tuple(float(s) for s in slopes), head=head
    )
