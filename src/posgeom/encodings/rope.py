"""Rotary position embedding (RoPE, Su et al.) and its context-extension variants, as geometry.

RoPE has no position vectors: it rotates each 2-D plane ``k`` of a query/key head by the angle
``i * theta_k``. Following the paper, the position vector of ``i`` is the rotation ``R_i`` applied
to a fixed unit vector in every plane, ``[cos(i theta_k), sin(i theta_k)]``. The direction of the
fixed vector does not matter: ``||R_i u - R_j u|| = 2 |sin((i-j) theta_k / 2)| ||u||`` per plane, so
the distances depend only on the frequencies. With ``normalize="plane"`` (default) every plane
carries a unit vector, the total norm is ``sqrt(head_dim/2)`` and, for the same width and base, the
geometry is *identical* to the sinusoidal encoding's; ``normalize="vector"`` divides by
``sqrt(head_dim/2)`` (unit-norm position vectors).

Inverse frequencies ``theta_k`` follow Hugging Face ``transformers`` (``modeling_rope_utils``), in
float64 (Hugging Face computes in float32):

- ``scaling=None`` (default): ``theta_k = base^(-2k/h)``, ``h = head_dim``;
- ``"linear"`` (position interpolation): ``theta_k / factor``;
- ``"ntk"`` (alias ``"dynamic"``, dynamic NTK-aware):
  ``base' = base * (factor L / L0 - (factor - 1))^(h/(h-2))`` with ``L = max(n, L0)`` and
  ``L0 = original_max_position_embeddings`` (default ``n``): no change while ``n <= L0``, as in
  Hugging Face;
- ``"yarn"``: YaRN's ramp between interpolated and extrapolated frequencies (``beta_fast``,
  ``beta_slow``, ``truncate``); its ``attention_factor`` multiplies cos and sin in Hugging Face and
  is applied to the vectors only with ``apply_attention_factor=True``.

Layout ``"half"`` (Hugging Face ``rotate_half``: plane ``k`` = coordinates ``k`` and ``k + h/2``,
vectors ``[cos(i theta), sin(i theta)]`` in two halves) or ``"interleaved"`` (RoFormer/Meta: plane
``k`` = coordinates ``2k, 2k+1``). Distances do not depend on the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding, check_base, check_even, check_n

_SCALINGS = {
    None: "default",
    "default": "default",
    "linear": "linear",
    "ntk": "dynamic",
    "dynamic": "dynamic",
    "yarn": "yarn",
}


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def rope_inverse_frequencies(
    head_dim: int = 64,
    base: float = 10000.0,
    *,
    scaling: str | None = None,
    factor: float = 1.0,
    seq_len: int | None = None,
    original_max_position_embeddings: int | None = None,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    attention_factor: float | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
) -> tuple[np.ndarray, float]:
    """``(theta, attention_factor)``: ``(head_dim/2,)`` float64 inverse frequencies as Hugging Face
    computes them for ``scaling`` (see the module docstring), and the cos/sin scale (1 except YaRN).
    ``seq_len`` is used by dynamic NTK only; ``original_max_position_embeddings`` defaults to
    ``seq_len`` (dynamic NTK: no effect) and is required for YaRN."""
    check_even(head_dim, "RoPE head_dim")
    base = check_base(base)
    if scaling not in _SCALINGS:
        raise PosgeomError(
            f"unknown RoPE scaling {scaling!r}; use one of None, 'linear', 'ntk', 'yarn'"
        )
    kind = _SCALINGS[scaling]
    factor = float(factor)
    if not np.isfinite(factor) or factor <= 0:
        raise PosgeomError(f"RoPE scaling factor must be a positive number, got {factor!r}")
    h = int(head_dim)
    exponents = np.arange(0, h, 2, dtype=np.float64) / h
    att = 1.0
    if kind == "default":
        theta = base**-exponents
    elif kind == "linear":
        theta = base**-exponents / factor
    elif kind == "dynamic":
        if h <= 2:
            raise PosgeomError("dynamic NTK scaling needs head_dim > 2")
        l0 = original_max_position_embeddings or seq_len
        if l0 is None:
            raise PosgeomError("dynamic NTK scaling needs original_max_position_embeddings")
        length = max(seq_len or l0, l0)
        new_base = base * ((factor * length / l0) - (factor - 1)) ** (h / (h - 2))
        theta = new_base**-exponents
    else:  # yarn
        l0 = original_max_position_embeddings
        if l0 is None:
            raise PosgeomError(
                "YaRN needs original_max_position_embeddings (the pre-training context)"
            )
        if attention_factor is None:
            if mscale and mscale_all_dim:
                att = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
            else:
                att = _yarn_mscale(factor)
        else:
            att = float(attention_factor)

        def correction_dim(rotations: float) -> float:
            return (h * math.log(l0 / (rotations * 2 * math.pi))) / (2 * math.log(base))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, h - 1)
        if low == high:
            high += 0.001  # Hugging Face's guard against a zero-width ramp
        ramp = np.clip((np.arange(h // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        extrapolation = 1.0 - ramp  # weight of the unscaled frequencies
        pos_freqs = base**exponents
        theta = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (
            1.0 / pos_freqs
        ) * extrapolation
    return theta, att


@dataclass(frozen=True, eq=False)
class RoPEEncoding(PositionEncoding):
    """RoPE as geometry; ``inv_freq`` ``(head_dim/2,)``, ``attention_factor`` and ``layout``."""

    inv_freq: np.ndarray | None = None
    attention_factor: float = 1.0
    layout: str = "half"

    def __post_init__(self) -> None:
        super().__post_init__()
        theta = np.array(self.inv_freq, dtype=np.float64, copy=True)
        theta.setflags(write=False)
        object.__setattr__(self, "inv_freq", theta)

    def rotate(self, x: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """Apply ``R_i`` to ``x`` of shape ``(..., m, head_dim)`` at ``positions`` (default
        ``0 .. m-1``), in this encoding's layout; with ``"half"`` this equals Hugging Face's
        ``q * cos + rotate_half(q) * sin`` (without the attention factor)."""
        x = np.asarray(x, dtype=np.float64)
        h = 2 * self.inv_freq.shape[0]
        if x.ndim < 2 or x.shape[-1] != h:
            raise PosgeomError(f"rotate expects (..., positions, {h}), got shape {x.shape}")
        pos = (
            np.arange(x.shape[-2]) if positions is None else np.asarray(positions, dtype=np.float64)
        )
        ang = pos[:, None] * self.inv_freq[None, :]
        cos, sin = np.cos(ang), np.sin(ang)
        if self.layout == "half":
            a, b = x[..., : h // 2], x[..., h // 2 :]
            return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return out


def rope(
    n_positions: int,
    head_dim: int = 64,
    base: float = 10000.0,
    *,
    scaling: str | None = None,
    factor: float = 1.0,
    original_max_position_embeddings: int | None = None,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    attention_factor: float | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    normalize: str = "plane",
    layout: str = "half",
    apply_attention_factor: bool = False,
) -> RoPEEncoding:
    """RoPE position vectors ``(n, head_dim)``: ``[cos(i theta_k), sin(i theta_k)]`` per plane.

    See the module docstring for the frequency schedules, normalisation and layout.
    """
    n = check_n(n_positions)
    if normalize not in ("plane", "vector"):
        raise PosgeomError(f"normalize must be 'plane' or 'vector', got {normalize!r}")
    if layout not in ("half", "interleaved"):
        raise PosgeomError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    theta, att = rope_inverse_frequencies(
        head_dim,
        base,
        scaling=scaling,
        factor=factor,
        seq_len=n,
        original_max_position_embeddings=original_max_position_embeddings,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
        truncate=truncate,
        attention_factor=attention_factor,
        mscale=mscale,
        mscale_all_dim=mscale_all_dim,
    )
    ang = np.arange(n, dtype=np.float64)[:, None] * theta[None, :]
    if layout == "half":
        vec = np.concatenate([np.cos(ang), np.sin(ang)], axis=1)
    else:
        vec = np.empty((n, 2 * theta.shape[0]))
        vec[:, 0::2], vec[:, 1::2] = np.cos(ang), np.sin(ang)
    if normalize == "vector":
        vec /= math.sqrt(theta.shape[0])
    if apply_attention_factor:
        vec *= att
    params = {
        "head_dim": int(head_dim),
        "base": float(base),
        "scaling": _SCALINGS[scaling],
        "factor": float(factor),
        "original_max_position_embeddings": original_max_position_embeddings,
        "normalize": normalize,
        "layout": layout,
        "apply_attention_factor": apply_attention_factor,
    }
    if _SCALINGS[scaling] == "yarn":
        params.update(
            beta_fast=beta_fast, beta_slow=beta_slow, truncate=truncate, attention_factor=att
        )
    return RoPEEncoding("rope", vec, params, inv_freq=theta, attention_factor=att, layout=layout)
