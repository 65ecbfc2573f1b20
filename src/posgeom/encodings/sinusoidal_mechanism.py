"""Sinusoids a model computes instead of storing: found by calling its position modules.

A fixed sinusoidal table kept as a buffer is read as a table (``learned``, :mod:`.learned`); a
model that computes its sinusoid in the forward pass keeps no table, so posgeom calls the
module that computes it and reads the sinusoid off its output (:func:`fit_sinusoid`):

- absolute, added to the input (Pegasus-X's ``embed_positions``): a module named as a position
  table (:data:`~posgeom.encodings.learned.LEARNED_NAMES`) with no parameter and no table
  buffer, called on hidden states ``(1, L, d)``; row ``p`` of what it returns is position ``p``
  (when it returns ``2 L - 1`` rows, one per offset, it is relative: wav2vec 2.0-conformer);
- absolute, a fixed table kept as a plain tensor attribute (VideoMAE's
  ``embeddings.position_embeddings``, neither parameter nor buffer) named as a position table:
  read as it is, row ``p`` position ``p``;
- relative, inside attention (Transformer-XL, XLNet: ``relative_positional_encoding(qlen,
  klen)``, the sinusoid of every offset ``i - j``, which each layer projects and adds to its
  scores): a module with that method, called with ``qlen = klen = L``; the row of offset 0 is
  the one that reads ``(0, .., 0, 1, .., 1)`` and offsets run from it in one direction;
- relative, kept in a buffer: a table of a row per offset whose middle row is offset 0
  (FastSpeech2-Conformer's ``pos_enc``), or the frequencies of a timing signal
  ``[sin(r w) | cos(r w)]`` of the offset (Gemma 3n audio's ``inv_timescales``).

The fit: at position 0 a sine column is 0 and a cosine column 1; the ``k``-th sine column pairs
with the ``k``-th cosine column (``layout``: ``"concat"``, all sines then all cosines, or
``"interleaved"``); ``w_k`` is read from the angle ``atan2(sin, cos)`` at position 1 and
refined at positions 2, 4, 8, ... (the whole turns counted from the previous estimate); the
table must then be ``sin(p w_k)``, ``cos(p w_k)`` to ``1e-5`` at every position, else nothing is
reported. Geometry: the vectors ``(sin p w_k, cos p w_k)`` in the model's column order, so
``||PE_i - PE_j||^2 = sum_k 2 - 2 cos((i - j) w_k)``; for the relative kind this is also
``||R_{i-j} - R_0||``, the offset's distance from offset 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._mechanism import Mechanism, MechanismParams

__all__ = [
    "FIT_LENGTH",
    "SinusoidalParams",
    "detect_sinusoids",
    "fit_sinusoid",
    "refusal",
]

#: positions a position module is called on for the fit
FIT_LENGTH = 64
#: last name of a buffer of timing-signal frequencies (Gemma 3n audio's relative positions)
TIMESCALES = "inv_timescales"
_ATOL = 1e-5


def _layout(first: np.ndarray) -> tuple[str, np.ndarray, np.ndarray] | None:
    d = first.shape[0]
    sines = np.flatnonzero(np.abs(first) <= _ATOL)
    cosines = np.flatnonzero(np.abs(first - 1.0) <= _ATOL)
    half = np.arange(d // 2)
    if d < 2 or d % 2 or len(sines) != d // 2 or len(cosines) != d // 2:
        return None
    if np.array_equal(sines, half) and np.array_equal(cosines, half + d // 2):
        return "concat", sines, cosines
    if np.array_equal(sines, 2 * half) and np.array_equal(cosines, 2 * half + 1):
        return "interleaved", sines, cosines
    return None


def fit_sinusoid(table: Any) -> tuple[np.ndarray, str] | None:
    """``(w (d/2,), layout)`` of a table whose row ``p`` is the sinusoid of position ``p``
    (module docstring), or ``None`` when it is not one."""
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 3:
        return None
    found = _layout(t[0])
    if found is None:
        return None
    layout, sines, cosines = found
    s, c = t[:, sines], t[:, cosines]
    w = np.arctan2(s[1], c[1])
    p = 2
    while p < t.shape[0]:
        theta = np.arctan2(s[p], c[p])
        w = (theta + 2 * np.pi * np.round((p * w - theta) / (2 * np.pi))) / p
        p *= 2
    angles = np.arange(t.shape[0])[:, None] * w[None, :]
    error = max(np.abs(np.sin(angles) - s).max(), np.abs(np.cos(angles) - c).max())
    return (w, layout) if error <= _ATOL and np.all(w >= 0) else None


@dataclass(frozen=True, eq=False)
class SinusoidalParams(MechanismParams):
    """A sinusoid the model computes: ``inv_freq`` ``(K,)`` (``w_k``), ``layout``
    (``"concat"`` or ``"interleaved"``), ``relative`` (of the offset ``i - j`` inside attention,
    else added to the input) and ``clamp`` (offsets clamped to ``+-clamp``; 0: none)."""

    key = "sinusoidal"
    _arrays = ("inv_freq",)

    inv_freq: np.ndarray
    layout: str = "interleaved"
    relative: bool = False
    clamp: int = 0

    @property
    def scope(self) -> str:
        """Where it acts: ``"input"`` (added before the first block) or ``"stack"``."""
        return "stack" if self.relative else "input"

    def summary(self) -> str:
        where = "relative (of i - j, in every layer's attention)" if self.relative else "absolute"
        return f"sinusoidal {where}, width {2 * self.inv_freq.shape[0]}, {self.layout} columns"

    def vectors(self, positions: np.ndarray) -> np.ndarray:
        """``(m, 2K)``: ``sin(p w_k)`` and ``cos(p w_k)`` in the model's column order."""
        p = np.asarray(positions, dtype=np.float64)
        if self.clamp > 0:
            p = np.clip(p, -self.clamp, self.clamp)
        angles = p[:, None] * self.inv_freq[None, :]
        if self.layout == "concat":
            return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
        out = np.empty((p.shape[0], 2 * self.inv_freq.shape[0]))
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
        return out

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Vectors ``(n, 2K)`` of positions (offsets) ``0 .. n-1``."""
        return self.vectors(np.arange(n))

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        vectors = self.vectors(np.arange(start, start + n))
        extra = {"layout": self.layout, "relative": self.relative, "d": vectors.shape[1]}
        return {"": PositionEncoding("sinusoidal", vectors, dict(params, **extra))}

    def standard_base(self) -> float | None:
        """The base ``b`` when ``w_k = b^(-2k/d)`` (Vaswani's formula: a geometric series from
        ``w_0 = 1``, so Pegasus-X's ``10000^(-k/(d/2 - 1))`` is base ``10000^(d/(d - 2))``) to a
        relative ``1e-5``, else ``None``."""
        w, d = self.inv_freq, 2 * self.inv_freq.shape[0]
        if w.shape[0] < 2 or abs(w[0] - 1.0) > 1e-6 or w[1] <= 0:
            return None
        base = float(w[1] ** (-d / 2))
        want = base ** (-2 * np.arange(w.shape[0]) / d)
        return base if np.allclose(w, want, rtol=1e-5, atol=0) else None


def _absolute(model: Any, config: Any, names: tuple[str, ...]) -> list[Mechanism]:
    found = []
    for name, module in _hf.position_modules(model, names):
        if any(True for _ in module.parameters()) or any(b.ndim == 2 for b in module.buffers()):
            continue  # a table (learned), or a module that learns something
        width = _hf.module_width(module, config)
        out = _hf.call_position_module(module, FIT_LENGTH, width) if width else None
        if out is None or out.ndim < 2:
            continue
        table = out.reshape(-1, *out.shape[-2:])[0].numpy()
        relative = table.shape[0] == 2 * FIT_LENGTH - 1  # a row per offset (conformers)
        fit = _offset_fit(table) if relative else None
        if table.shape[0] == FIT_LENGTH:
            fit = fit_sinusoid(table)
        if fit is not None:
            params = SinusoidalParams(fit[0], fit[1], relative=relative)
            found.append(Mechanism("sinusoidal", name, params))
    return found


def _offset_fit(table: np.ndarray) -> tuple[np.ndarray, str] | None:
    """The fit (:func:`fit_sinusoid`) of the rows of offsets ``0 .. FIT_LENGTH - 1`` of a
    relative table (module docstring), or ``None``."""
    pattern = np.all((np.abs(table) <= _ATOL) | (np.abs(table - 1) <= _ATOL), axis=1)
    for zero in np.flatnonzero(pattern):
        for step in (-1, 1):
            rows = zero + step * np.arange(FIT_LENGTH)
            if rows.min() >= 0 and rows.max() < table.shape[0]:
                fit = fit_sinusoid(table[rows])
                if fit is not None:
                    return fit
    return None


def _relative(model: Any) -> list[Mechanism]:
    import torch

    found = []
    for name, module in model.named_modules():
        method = getattr(module, "relative_positional_encoding", None)
        if not callable(method):
            continue
        try:
            with torch.no_grad():
                out = method(FIT_LENGTH, FIT_LENGTH)
        except Exception:  # another signature: not this kind
            continue
        table = out.detach().to(torch.float64).reshape(out.shape[0], -1).cpu().numpy()
        fit = _offset_fit(table)
        if fit is None:
            continue
        clamp = getattr(module, "clamp_len", 0)
        clamp = int(clamp) if isinstance(clamp, int) and clamp > 0 else 0
        params = SinusoidalParams(fit[0], fit[1], relative=True, clamp=clamp)
        source = f"{name}.relative_positional_encoding" if name else "relative_positional_encoding"
        found.append(Mechanism("sinusoidal", source, params))
    return found


def _attribute_tables(model: Any, names: tuple[str, ...]) -> list[Mechanism]:
    """Sinusoidal tables kept as a plain tensor attribute named in ``names`` (module
    docstring)."""
    import torch

    found = []
    for name, module in model.named_modules():
        for attr in names:
            value = vars(module).get(attr)
            if not isinstance(value, torch.Tensor) or isinstance(value, torch.nn.Parameter):
                continue
            if value.is_complex():  # a rotation (Llama 4's freqs_cis), not an added sinusoid
                continue
            table = _hf.squeezed(value).to(torch.float64).cpu()
            fit = fit_sinusoid(table.numpy()) if table.ndim == 2 else None
            if fit is not None:
                source = f"{name}.{attr}" if name else attr
                found.append(Mechanism("sinusoidal", source, SinusoidalParams(fit[0], fit[1])))
    return found


def _relative_buffers(model: Any) -> list[Mechanism]:
    """Relative sinusoids kept in a buffer (module docstring): a table with a row per offset
    (found by its rows, as :func:`_offset_fit` reads them) or the frequencies of a timing
    signal."""
    import torch

    found = []
    for name, buffer in model.named_buffers():
        if buffer.is_complex():  # a rotation (Llama 4's freqs_cis), not an added sinusoid
            continue
        if _hf.last_name(name) == TIMESCALES and buffer.numel() >= 2:
            w = buffer.detach().to(torch.float64).cpu().numpy().ravel()
            found.append(Mechanism("sinusoidal", name, SinusoidalParams(w, "concat", True)))
            continue
        table = _hf.squeezed(buffer).to(torch.float64).cpu()
        if table.ndim != 2 or table.shape[0] < 2 * FIT_LENGTH - 1 or table.shape[0] % 2 == 0:
            continue
        middle = table[table.shape[0] // 2].numpy()
        if _layout(middle) is None:  # offset 0 sits in the middle: sin 0, cos 1
            continue
        fit = _offset_fit(table.numpy())
        if fit is not None:
            found.append(Mechanism("sinusoidal", name, SinusoidalParams(fit[0], fit[1], True)))
    return found


def detect_sinusoids(model: Any, config: Any, names: tuple[str, ...]) -> list[Mechanism]:
    """Every sinusoid ``model`` computes or keeps (module docstring); ``names``: the last names
    of absolute position modules and tensor attributes."""
    return [
        *_absolute(model, config, names),
        *_attribute_tables(model, names),
        *_relative(model),
        *_relative_buffers(model),
    ]


def refusal(params: SinusoidalParams) -> str:
    """Why ``extend`` cannot read a sinusoid whose frequencies are not Vaswani's formula."""
    return (
        "extend cannot read the model's sinusoid: its frequencies are not base^(-2k/d) for one "
        f"base (width {2 * params.inv_freq.shape[0]}); pass a family spec such as "
        "sinusoidal:d=128,base=10000"
    )
