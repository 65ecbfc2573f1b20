"""Relative position embeddings of disentangled attention (DeBERTa, DeBERTa-v2/v3, SEW-D), and
the same kind of table looked up per clipped offset (SpeechT5's encoder).

The model keeps one embedding row per (log-bucketed) relative distance, ``rel_embeddings``
``(2 span, hidden)``, projects it with the layer's own query/key projections and adds
content-to-position and position-to-content terms (``pos_att_type``: ``c2p``, ``p2c``) to every
layer's attention scores. The positional signal is a function of ``i - j`` passed through
learned projections of each layer: posgeom names and reads it (table, buckets, span, terms)
but defines no position geometry for it, so the commands that need one (an encoding to
score, a strategy to extend) refuse it with one line instead of calling the model "none".

As a family, :func:`relative_embeddings` builds the one geometry the mechanism has without its
learned table: the bucketing, ``D_ij = |b(i - j)|`` with DeBERTa's log buckets ``b``
(:func:`log_bucket_position`; exact offsets below ``position_buckets / 2``, logarithmic up to
``max_relative_positions``), a lag profile. It is not the model's geometry (that goes through
the table and each layer's projections), so a model's mechanism is still refused.

Discovery: an ``nn.Embedding`` named in :data:`RELATIVE_TABLE_NAMES` (``position_buckets``,
``max_relative_positions`` and ``pos_att_type`` read from its owner, its attention modules, then
the configuration), a position module whose output is a table row per offset (SpeechT5,
:func:`_computed_tables`), an attention's relative key parameter (VITS, :func:`_key_tables`) and
decomposed relative positions (SAM, :func:`_axis_tables`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import is_integer
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import refusing_extension
from posgeom.encodings._mechanism import Mechanism, RefusingParams
from posgeom.encodings._registry import Family, register

__all__ = [
    "RELATIVE_AXIS_NAMES",
    "RELATIVE_KEY_NAMES",
    "RELATIVE_TABLE_NAMES",
    "RelativeEmbeddingParams",
    "log_bucket_position",
    "refusal",
    "relative_embeddings",
]

#: last name components of relative position tables (DeBERTa's disentangled attention; Granite
#: Speech's ``rel_pos_emb`` and wav2vec2-BERT's ``relative_key`` ``distance_embedding``, a row
#: per clipped offset)
RELATIVE_TABLE_NAMES = ("rel_embeddings", "rel_pos_emb", "distance_embedding")
#: last name components of relative key embeddings kept as an attention's parameter, a row per
#: offset within its ``window_size`` (VITS, after Shaw et al. 2018)
RELATIVE_KEY_NAMES = ("emb_rel_k",)
#: decomposed relative positions over a patch grid, one table per axis (SAM's ViT attention)
RELATIVE_AXIS_NAMES = {"rel_pos_h": "height", "rel_pos_w": "width"}


def refusal(what: str) -> str:
    """The one line a command prints when it cannot use these embeddings (``what``: the use)."""
    return (
        f"{what}: the model's positions are relative position embeddings (a learned vector per "
        "offset i - j inside attention: DeBERTa, SpeechT5; kind 'relative_embeddings'), which "
        "have no position geometry in posgeom; extract lists them, analyze-model measures the "
        "layers' signal without them"
    )


def log_bucket_position(relative: np.ndarray, bucket_size: int, max_position: int) -> np.ndarray:
    """DeBERTa-v2's ``make_log_bucket_position``: offsets ``|r| < bucket_size // 2`` kept, larger
    ones ``sign(r) (ceil(ln(|r| / mid) / ln((max_position - 1) / mid) (mid - 1)) + mid)``;
    computed in float32 as the model does (the buckets' boundaries are the model's)."""
    r = np.asarray(relative, dtype=np.int64)
    mid = bucket_size // 2
    if mid < 2 or max_position <= mid + 1:
        raise PosgeomError(
            f"log buckets need position_buckets >= 4 and max_relative_positions > "
            f"position_buckets / 2 + 1, got {bucket_size} and {max_position}"
        )
    inner = (r < mid) & (r > -mid)
    abs_pos = np.where(inner, mid - 1, np.abs(r)).astype(np.float32)
    scale = np.log(np.float32((max_position - 1) / mid))
    log_pos = np.ceil(np.log(abs_pos / np.float32(mid)) / scale * np.float32(mid - 1)) + mid
    return np.where(abs_pos <= mid, r, log_pos * np.sign(r)).astype(np.int64)


def relative_embeddings(
    n_positions: int, *, position_buckets: int = 256, max_relative_positions: int = 512
) -> PositionEncoding:
    """The bucketing's geometry ``D_ij = |b(i - j)|`` (lag profile ``f(k) = |b(k)|``)."""
    n = check_n(n_positions)
    lags = np.abs(log_bucket_position(np.arange(n), position_buckets, max_relative_positions))
    params = {
        "position_buckets": position_buckets,
        "max_relative_positions": max_relative_positions,
    }
    return PositionEncoding("relative_embeddings", None, params, lag_profile=lags.astype(float))


@dataclass(frozen=True, eq=False)
class RelativeEmbeddingParams(RefusingParams):
    """``table`` ``(2 span, hidden)`` (one row per bucketed relative distance, float64),
    ``position_buckets`` (``-1``: no log buckets), ``max_relative_positions``, ``terms``
    (``pos_att_type``: ``("c2p", "p2c")`` for DeBERTa-v3), ``axis`` (``"height"`` / ``"width"``
    for a decomposed table of a patch grid's row or column offsets, else ``""``)."""

    key = "relative_embeddings"
    _arrays = ("table",)
    refusal = staticmethod(refusal)

    table: np.ndarray
    position_buckets: int = -1
    max_relative_positions: int = -1
    terms: tuple[str, ...] = ()
    axis: str = ""

    def summary(self) -> str:
        rows, width = self.table.shape
        if self.axis:  # a row per row or column offset of a patch grid (SAM)
            return (
                f"decomposed relative positions {rows}x{width} (a row per {self.axis} offset "
                f"of two patches, max_relative_positions={self.max_relative_positions})"
            )
        if not self.terms and self.position_buckets < 0:  # a row per clipped offset (SpeechT5)
            return (
                f"relative position embeddings {rows}x{width} (a row per offset i - j, "
                f"max_relative_positions={self.max_relative_positions})"
            )
        return (
            f"relative position embeddings {rows}x{width} (disentangled attention "
            f"{'+'.join(self.terms) or 'no terms'}, position_buckets={self.position_buckets}, "
            f"max_relative_positions={self.max_relative_positions})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "terms": list(self.terms)}


#: positions a relative position module is called on (:func:`_computed_tables`)
CALL_LENGTH = 16


def _mech(source: str, table: Any, **fields: Any) -> Mechanism:
    """A ``relative_embeddings`` mechanism of the tensor ``table`` (read as float64)."""
    params = RelativeEmbeddingParams(table=_hf.to_numpy(table), **fields)
    return Mechanism("relative_embeddings", source, params)


def _offset_rows(out: Any, table: Any) -> np.ndarray | None:
    """``(2 L - 1,)`` table row of each offset ``i - j = -(L-1) .. L-1`` when ``out[i, j]``
    ``(L, L, e)`` is one table row that depends on ``i - j`` only, else ``None``."""
    import torch

    n = out.shape[0]
    if out.ndim != 3 or out.shape[1] != n or out.shape[2] != table.shape[1]:
        return None
    dist = torch.cdist(out.reshape(n * n, -1), table.to(out.dtype))  # (n n, rows)
    rows = dist.argmin(dim=1)
    if float(dist.min(dim=1).values.max()) > 1e-6:
        return None
    rows = rows.reshape(n, n).numpy()
    i, j = np.indices((n, n))
    by_offset = np.full(2 * n - 1, -1)
    by_offset[(i - j + n - 1).ravel()] = rows.ravel()
    return by_offset if np.array_equal(by_offset[i - j + n - 1], rows) else None


def _computed_tables(model: Any, config: Any) -> list[Mechanism]:
    """Relative tables looked up by a position module (SpeechT5's ``embed_positions``: one
    ``nn.Embedding`` of ``2 M`` rows, row ``clip(i - j, -M, M - 1) + M`` for the pair
    ``(i, j)``): the module is called on hidden states ``(1, L, d)``, and reported when every
    ``(i, j)`` of its output ``(L, L, e)`` is the table row of offset ``i - j``."""
    from posgeom.encodings.learned import LEARNED_NAMES

    found = []
    for name, module in _hf.position_modules(model, LEARNED_NAMES):
        tables = [(n, m) for n, m in module.named_modules() if n and _hf.is_embedding(m)]
        width = _hf.module_width(module, config)
        if len(tables) != 1 or not width:
            continue
        out = _hf.call_position_module(module, CALL_LENGTH, width)
        weight = tables[0][1].weight.detach().cpu()
        if out is None or _offset_rows(out, weight) is None:
            continue
        source = f"{name}.{tables[0][0]}.weight"
        found.append(_mech(source, weight, max_relative_positions=int(weight.shape[0]) // 2))
    return found


def _key_tables(model: Any) -> list[Mechanism]:
    """Relative key embeddings kept as a parameter of the attention (VITS's ``emb_rel_k``
    ``(1, 2 w + 1, head_dim)``, :data:`RELATIVE_KEY_NAMES`): row ``r + w`` is offset ``r`` for
    ``|r| <= w`` (the attention's ``window_size``), offsets beyond get a zero vector; one
    mechanism per attention."""
    found = []
    for name, weight in model.named_parameters():
        if _hf.last_name(name) not in RELATIVE_KEY_NAMES or weight.ndim != 3:
            continue
        window = getattr(_hf.parent(model, name), "window_size", None)
        if not is_integer(window) or weight.shape[1] != 2 * window + 1:
            continue
        found.append(_mech(name, weight[0], max_relative_positions=window))
    return found


def _axis_tables(model: Any) -> list[Mechanism]:
    """Decomposed relative positions (:data:`RELATIVE_AXIS_NAMES`): an attention holding both
    ``rel_pos_h`` and ``rel_pos_w`` as 2-D parameters of an odd number ``2 S - 1`` of rows; row
    ``r + S - 1`` is the offset ``r`` of the query's and the key's row (column)."""
    found = []
    for name, weight in model.named_parameters():
        axis = RELATIVE_AXIS_NAMES.get(_hf.last_name(name))
        owner = _hf.parent(model, name)
        pair = [getattr(owner, other, None) for other in RELATIVE_AXIS_NAMES]
        if axis is None or weight.ndim != 2 or weight.shape[0] % 2 != 1:
            continue
        if not all(getattr(p, "ndim", 0) == 2 for p in pair):
            continue
        rows = weight.shape[0] // 2
        found.append(_mech(name, weight, max_relative_positions=rows, axis=axis))
    return found


def _setting(model: Any, owner: Any, config: Any, name: str) -> Any:
    """``name`` from the table's owner, else the first module that sets it, else the config."""
    for module in (owner, *model.modules()):
        value = getattr(module, name, None)
        if value is not None and not callable(value):
            return value
    return getattr(config, name, None)


@register
class RelativeEmbeddingFamily(Family):
    """DeBERTa's relative position embeddings: detected and named, no geometry (refused)."""

    name = "relative_embeddings"
    order = 95
    summary = "relative position embeddings of disentangled attention (DeBERTa); detection only"
    in_comparison = False
    mechanism_kind = "relative_embeddings"
    mechanism_params = RelativeEmbeddingParams
    looks_for = (
        "an nn.Embedding named rel_embeddings (DeBERTa disentangled attention), a position "
        "module whose output is a table row per offset i - j (SpeechT5), or an attention's "
        "emb_rel_k parameter (VITS) or rel_pos_h / rel_pos_w pair (SAM)"
    )
    detect_order = 50
    extension_type = refusing_extension(refusal)
    build = staticmethod(relative_embeddings)

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        found = [*_computed_tables(model, config), *_key_tables(model), *_axis_tables(model)]
        for name, module in model.named_modules():
            if _hf.last_name(name) not in RELATIVE_TABLE_NAMES or not _hf.is_embedding(module):
                continue
            owner = _hf.parent(model, name)
            terms = _setting(model, owner, config, "pos_att_type") or ()
            buckets = _setting(model, owner, config, "position_buckets") or -1
            span = _setting(model, owner, config, "max_relative_positions")
            found.append(
                _mech(
                    f"{name}.weight",
                    module.weight,
                    position_buckets=int(buckets),
                    max_relative_positions=int(span or module.weight.shape[0] // 2),
                    terms=tuple(str(t) for t in terms),
                )
            )
        return found
