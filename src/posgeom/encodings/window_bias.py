"""2-D relative position bias of window attention (Swin, Swin V2's tables, BEiT, Data2Vec-vision,
the Swin backbones of Mask2Former / MaskFormer / OneFormer).

Within a window of ``Wh x Ww`` patches (tokens in row-major order, ``p = (r, c)``), head ``h``
adds ``B_h(p, q) = table[(r_p - r_q + Wh - 1) (2 Ww - 1) + (c_p - c_q + Ww - 1), h]`` to the
logit of query ``p`` and key ``q``: a learned bias per 2-D offset, T5's relative bias
(:mod:`posgeom.encodings.t5`) on a grid instead of a sequence. BEiT keeps three more rows after
the ``(2 Wh - 1)(2 Ww - 1)`` offsets (its ``[CLS]`` token's bias to, from and with itself).

Geometry (:meth:`WindowBiasParams.to_encoding`): per head, the same bias-difference distance as
T5's, ``D_pq = (|B_h(p, q) - B_h(p, p)| + |B_h(q, p) - B_h(q, q)|) / 2``, over the window's
first ``n`` patches. Its positions are patches of an image window, not tokens of a text, so the
commands that score a corpus's positions or extend a context refuse it with one line
(:func:`refusal`); ``extract`` lists it with its window and the blocks that hold it.

Discovery: a 2-D parameter named ``relative_position_bias_table``; the window is its owner's
``window_size`` (an int or a pair), else read from the table's rows when they are
``(2 W - 1)^2`` (+ 3); LeViT's biases with their own index (:func:`_indexed_biases`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import refusing_extension
from posgeom.encodings._mechanism import Mechanism, MechanismParams, head_select
from posgeom.encodings._registry import Family, register

__all__ = ["WindowBiasParams", "refusal", "window_index"]

#: last name component of the tables
TABLE_NAME = "relative_position_bias_table"
#: BEiT's rows after the offsets: [CLS] to token, token to [CLS], [CLS] to [CLS]
CLS_ROWS = 3
#: LeViT's bias per offset (a parameter) and the offset of each patch pair (a buffer)
BIASES_NAME, INDEX_NAME = "attention_biases", "attention_bias_idxs"


def refusal(what: str) -> str:
    """The one line a command prints when it cannot use a window bias (``what``: the use)."""
    return (
        f"{what}: the model's positions are a 2-D relative bias of window attention (kind "
        "'window_bias': image patches in a window, not tokens of a text); extract lists it"
    )


def window_index(window: tuple[int, int]) -> np.ndarray:
    """``(N, N)`` table row of each patch pair of a ``Wh x Ww`` window (``N = Wh Ww``, row-major):
    ``(r_p - r_q + Wh - 1) (2 Ww - 1) + (c_p - c_q + Ww - 1)``."""
    wh, ww = (int(v) for v in window)
    r, c = np.divmod(np.arange(wh * ww), ww)
    return (r[:, None] - r[None, :] + wh - 1) * (2 * ww - 1) + (c[:, None] - c[None, :] + ww - 1)


@dataclass(frozen=True, eq=False)
class WindowBiasParams(MechanismParams):
    """``table`` ``(rows, heads)`` (the offsets' rows, then any ``extra_rows``), ``window``
    ``(Wh, Ww)``, ``extra_rows`` (BEiT: 3) and ``index`` ``(N, N)``, the table row of each patch
    pair when the model keeps its own (LeViT: a row per ``(|dr|, |dc|)``; ``None``: Swin's
    :func:`window_index`)."""

    key = "window_bias"
    _arrays = ("table",)
    representation = "distances"

    table: np.ndarray
    window: tuple[int, int] = (1, 1)
    extra_rows: int = 0
    index: np.ndarray | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.index is not None:  # integer rows, read-only
            index = np.array(self.index, dtype=np.int64, copy=True)
            index.setflags(write=False)
            object.__setattr__(self, "index", index)

    @property
    def num_heads(self) -> int:
        return int(self.table.shape[1])

    def summary(self) -> str:
        wh, ww = self.window
        extra = f" + {self.extra_rows} [CLS] rows" if self.extra_rows else ""
        return f"2-D window bias {wh}x{ww} patches, {self.num_heads} heads{extra}"

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "window": list(self.window)}

    def bias(self) -> np.ndarray:
        """``(heads, N, N)``: the bias each head adds within a window (module docstring; the
        model's own ``index`` when it keeps one)."""
        index = window_index(self.window) if self.index is None else self.index
        return np.ascontiguousarray(self.table[index].transpose(2, 0, 1))

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Distances ``(heads, n, n)`` (or ``(n, n)`` for ``head``) over the window's first
        ``n`` patches, row-major (module docstring)."""
        area = self.window[0] * self.window[1]
        if check_n(n, "n") > area:
            raise PosgeomError(f"the window has {area} patches, fewer than n={n}; use n <= {area}")
        b = self.bias()[:, :n, :n]
        own = np.diagonal(b, axis1=1, axis2=2)  # (H, n): B_h(p, p)
        diff = np.abs(b - own[:, :, None])
        return head_select(0.5 * (diff + diff.transpose(0, 2, 1)), head)

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        """None: a text's positions are not a window's patches (see :func:`refusal`)."""
        return {}


def _window(owner: Any, rows: int) -> tuple[tuple[int, int], int] | None:
    size = getattr(owner, "window_size", None)
    if isinstance(size, int) and not isinstance(size, bool):
        size = (size, size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        wh, ww = (int(v) for v in size)
        extra = rows - (2 * wh - 1) * (2 * ww - 1)
        return ((wh, ww), extra) if extra in (0, CLS_ROWS) else None
    for extra in (0, CLS_ROWS):
        side = math.isqrt(max(rows - extra, 0))
        if side * side == rows - extra and side % 2:
            return ((side + 1) // 2, (side + 1) // 2), extra
    return None


def _indexed_biases(model: Any) -> list[Mechanism]:
    """LeViT's attention biases: a parameter ``attention_biases`` ``(heads, offsets)`` and its
    owner's buffer ``attention_bias_idxs`` ``(N, N)``, the offset of each patch pair of the
    ``r x r`` grid (row-major; the subsampling attentions, ``(N', N)``, are left out)."""
    found = []
    for name, param in model.named_parameters():
        if _hf.last_name(name) != BIASES_NAME or param.ndim != 2:
            continue
        index = getattr(_hf.parent(model, name), INDEX_NAME, None)
        side = math.isqrt(int(index.shape[0])) if getattr(index, "ndim", 0) == 2 else 0
        if side == 0 or index.shape[0] != index.shape[1] or side * side != index.shape[0]:
            continue
        params = WindowBiasParams(
            _hf.to_numpy(param).T, (side, side), index=index.detach().cpu().numpy()
        )
        found.append(Mechanism("window_bias", name, params))
    return found


@register
class WindowBiasFamily(Family):
    """Swin / BEiT relative position bias tables: detected, a per-head geometry of a window's
    patches, refused by the commands that need a text's positions."""

    name = "window_bias"
    extension_type = refusing_extension(refusal)
    order = 96
    summary = "2-D relative position bias of window attention (Swin, BEiT); detection only"
    in_comparison = False
    mechanism_kind = "window_bias"
    mechanism_params = WindowBiasParams
    looks_for = (
        f"a 2-D parameter named {TABLE_NAME} (Swin, BEiT window attention), or {BIASES_NAME} "
        f"with its owner's {INDEX_NAME} (LeViT)"
    )
    detect_order = 55

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        """``window_bias(n, window=(Wh, Ww), table=None)``: with a ``table`` ``(rows, heads)``,
        its bias distances averaged over heads; without one, the offset the table is indexed
        by, ``D_pq = ||(r_p - r_q, c_p - c_q)||`` (patches row-major; the default window is the
        smallest square holding ``n`` patches)."""
        n = check_n(n_positions)
        side = math.isqrt(n - 1) + 1
        window = tuple(int(v) for v in params.get("window", (side, side)))
        table = params.get("table")
        if table is None:
            if n > window[0] * window[1]:
                raise PosgeomError(f"a {window[0]}x{window[1]} window has fewer than {n} patches")
            r, c = np.divmod(np.arange(n), window[1])
            dist = np.hypot(r[:, None] - r[None, :], c[:, None] - c[None, :])
        else:
            p = WindowBiasParams(np.asarray(table, dtype=np.float64), window)  # type: ignore[arg-type]
            dist = p.to_encoding(n).mean(axis=0)
        return PositionEncoding("window_bias", None, {"window": list(window)}, distance_matrix=dist)

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        found = _indexed_biases(model)
        for name, param in model.named_parameters():
            if _hf.last_name(name) != TABLE_NAME or param.ndim != 2:
                continue
            window = _window(_hf.parent(model, name), int(param.shape[0]))
            if window is None:
                raise PosgeomError(
                    f"{name} has {param.shape[0]} rows, not (2 Wh - 1)(2 Ww - 1) (+3) of its "
                    "owner's window_size; the checkpoint and its configuration disagree"
                )
            params = WindowBiasParams(_hf.to_numpy(param), window[0], window[1])
            found.append(Mechanism(self.mechanism_kind, name, params))
        return found
