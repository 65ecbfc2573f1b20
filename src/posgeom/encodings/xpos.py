"""xPos (Sun et al., 2023, "A Length-Extrapolatable Transformer") as geometry.

xPos is RoPE with a per-plane exponential scale: the query at position ``i`` is rotated by
``i theta_k`` and multiplied by ``zeta_k^((i - c) / scale_base)``, the key by the inverse, so that
``q_i . k_j`` carries ``zeta_k^((i - j) / scale_base)``. Here, as in the reference code
(torchscale ``XPOS``): ``theta_k = base^(-2k/h)``, ``zeta_k = (2k/h + gamma) / (1 + gamma)`` with
``gamma = 0.4``, and the exponent positions are centred, ``c = ceil(n / 2)`` (torchscale's
``min_pos = -n // 2``). The position vector is the query side (``side="key"`` uses ``1/zeta``):
``[zeta_k^((i-c)/s) cos(i theta_k), zeta_k^((i-c)/s) sin(i theta_k)]`` per plane, ``"half"`` layout.
"""

from __future__ import annotations

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding, check_base, check_even, check_n
from posgeom.encodings._registry import ComparisonContext, Family, register


def xpos(
    n_positions: int,
    head_dim: int = 64,
    base: float = 10000.0,
    *,
    scale_base: float = 512.0,
    gamma: float = 0.4,
    side: str = "query",
) -> PositionEncoding:
    """xPos position vectors ``(n, head_dim)``; see the module docstring."""
    n = check_n(n_positions)
    check_even(head_dim, "xPos head_dim")
    base = check_base(base)
    if side not in ("query", "key"):
        raise PosgeomError(f"side must be 'query' or 'key', got {side!r}")
    if scale_base <= 0 or gamma <= 0:
        raise PosgeomError("xPos needs scale_base > 0 and gamma > 0")
    k2 = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    theta, zeta = base**-k2, (k2 + gamma) / (1 + gamma)
    pos = np.arange(n, dtype=np.float64)[:, None]
    power = (pos - (n + 1) // 2) / scale_base * (1.0 if side == "query" else -1.0)
    amp = zeta[None, :] ** power
    vec = np.concatenate([amp * np.cos(pos * theta), amp * np.sin(pos * theta)], axis=1)
    params = {
        "head_dim": int(head_dim),
        "base": base,
        "scale_base": float(scale_base),
        "gamma": float(gamma),
        "side": side,
    }
    return PositionEncoding("xpos", vec, params)


@register
class XPosFamily(Family):
    """xPos: RoPE with a per-plane exponential scale (not in the default comparison)."""

    name = "xpos"
    order = 110
    summary = "xPos (Sun et al.): RoPE with per-plane exponential decay"
    in_comparison = False
    build = staticmethod(xpos)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        """``model_dim / rope_head_dim`` heads of the query-side xPos vectors, concatenated."""
        heads = ctx.model_dim // ctx.rope_head_dim
        one = xpos(ctx.n_positions, head_dim=ctx.rope_head_dim, base=ctx.rope_base)
        return PositionEncoding(
            "xpos", np.tile(one.vectors, (1, heads)), dict(one.params, n_heads=heads)
        )

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        p = encoding.params
        return (
            f"xPos, {p['n_heads']} heads x head_dim {p['head_dim']} concatenated, base "
            f"{p['base']:g}, scale_base {p['scale_base']:g}, query side"
        )
