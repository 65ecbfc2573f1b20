"""Learned absolute position tables of Hugging Face models.

The rows used for positions ``0 .. n-1`` of the model's position table:

- Discovery (one rule for every layer): an ``nn.Embedding`` whose last name component is one of
  :data:`LEARNED_NAMES` (BERT, DistilBERT, ELECTRA, MPNet, RoBERTa, XLM-R:
  ``embeddings.position_embeddings``; GPT-2: ``wpe``; OPT, BART: ``embed_positions``), or a
  parameter of that name (ViT-style ``pos_embed``); the encoder's table is the shallowest. A
  matrix its owner uses to project coordinates is no table
  (:func:`~posgeom.encodings.value_sinusoid.projects_coordinates`: SAM's Fourier features).
- Offset (:func:`table_offset`): a table module with an integer ``offset`` attribute (OPT, BART: 2)
  starts at that row; a table with a ``padding_idx`` (RoBERTa, MPNet, XLM-R: ``padding_idx = 1``)
  starts at ``padding_idx + 1`` because those models number real tokens from ``padding_idx + 1``;
  otherwise 0 (BERT, GPT-2). ``offset=`` overrides both.
- ``beyond="error"`` (default) refuses ``n`` larger than the table; ``beyond="interpolate"``
  resamples the ``N`` available rows linearly: position ``i`` reads the table at
  ``t = i (N - 1) / (n - 1)``, ``(1 - frac t) row[floor t] + (frac t) row[floor t + 1]``, so the
  first and last positions are the first and last rows (the same rule as position interpolation).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._mechanism import Mechanism, MechanismParams
from posgeom.encodings._registry import ComparisonContext, Family, TorchSpec, register
from posgeom.encodings.learned_extension import LearnedExtension, extend_table
from posgeom.encodings.value_sinusoid import projects_coordinates

#: Last name components of learned absolute position tables.
LEARNED_NAMES = (
    "position_embeddings",
    "position_embedding",
    "wpe",
    "embed_positions",
    "pos_embed",
    "pos_embeddings",
    "positional_embedding",
    "positions_embed",
    "char_position_embeddings",
    "position_embeds_layer",
    "position_enc",
)
#: fixed (sinusoidal) absolute tables kept as buffers: a buffer of one of these names or of
#: :data:`LEARNED_NAMES` (Qwen3-ASR's ``positional_embedding``), or a ``weights`` buffer of a
#: module named in :data:`LEARNED_NAMES` (M2M-100, NLLB-MoE)
TABLE_BUFFERS = ("pos_encoding",)


def _no_table_message(model: Any) -> str:
    config = getattr(model, "config", None)
    mtype = getattr(config, "model_type", type(model).__name__)

    def has(*keys: str) -> bool:
        return any(getattr(config, k, None) is not None for k in keys)

    if has("rope_theta", "rope_parameters", "rope_scaling", "rotary_dim", "rotary_pct"):
        hint = "it uses rotary embeddings: use posgeom.encodings.rope(n, head_dim=..., base=...)"
    elif getattr(config, "alibi", False) or mtype in ("bloom", "mpt", "falcon"):
        hint = "it uses ALiBi biases: use posgeom.encodings.alibi(n, n_heads=...)"
    elif has("relative_attention_num_buckets"):
        hint = "it uses T5 relative buckets: use posgeom.encodings.t5(n, num_buckets=..., bias=...)"
    else:
        hint = "its positions are not a learned absolute table"
    return f"model {mtype!r} has no learned position table; {hint}"


def table_offset(module: Any, offset: int | None = None) -> int:
    """First row a real token uses (see the module docstring); ``offset`` overrides."""
    if offset is not None:
        return int(offset)
    if isinstance(getattr(module, "offset", None), int):
        return int(module.offset)
    pad = getattr(module, "padding_idx", None)
    return 0 if pad is None else int(pad) + 1


def position_tables(model: Any) -> list[tuple[str, Any, Any]]:
    """``(name, module or None, 2-D weight)`` of every learned position table, embeddings first
    (one entry per shared weight), then bare parameters named in :data:`LEARNED_NAMES`."""
    found: list[tuple[str, Any, Any]] = []
    seen: set[int] = set()
    for name, module in model.named_modules():
        if _hf.last_name(name) in LEARNED_NAMES and _hf.is_embedding(module):
            if id(module.weight) not in seen:
                seen.add(id(module.weight))
                found.append((name, module, module.weight))
    for name, param in model.named_parameters():
        if _hf.last_name(name) not in LEARNED_NAMES or id(param) in seen:
            continue
        tensor = _hf.squeezed(param)
        if tensor.ndim == 2 and not projects_coordinates(_hf.parent(model, name), tensor):
            seen.add(id(param))
            found.append((name, None, tensor))
    return found


def _buffer_tables(model: Any) -> list[tuple[str, Any, Any]]:
    """``(name, owner, buffer)`` of absolute tables kept as 2-D buffers (:data:`TABLE_BUFFERS`);
    the owner's ``offset`` / ``padding_idx`` give the first row."""
    found = []
    for name, buffer in model.named_buffers():
        owner = _hf.parent(model, name)
        owner_name = _hf.last_name(name.rsplit(".", 1)[0]) if "." in name else ""
        named = _hf.last_name(name) in (*TABLE_BUFFERS, *LEARNED_NAMES) or (
            _hf.last_name(name) == "weights" and owner_name in LEARNED_NAMES
        )
        if (
            named
            and buffer.ndim == 2
            and buffer.is_floating_point()
            and not projects_coordinates(owner, buffer)
        ):
            found.append((name, owner, buffer))
    return found


def find_position_table(model: Any) -> tuple[str, Any]:
    """``(name, module)`` of the encoder's (shallowest) learned table, or :class:`PosgeomError`."""
    found = [(name, mod) for name, mod, _ in position_tables(model) if mod is not None]
    if not found:
        raise PosgeomError(_no_table_message(model))
    return min(found, key=lambda item: item[0].count("."))


def position_limit(model: Any) -> int | None:
    """Rows of the first learned table after its offset (``None``: the model has none)."""
    for _, module, weight in position_tables(model):
        if module is not None:
            return int(weight.shape[0]) - table_offset(module)
    return None


def learned(
    n_positions: int,
    model: Any,
    *,
    offset: int | None = None,
    beyond: str = "error",
) -> PositionEncoding:
    """Rows ``offset .. offset+n-1`` of a model's learned position table, float64 ``(n, d)``.

    ``model``: a Hugging Face name (already cached) or local folder, loaded offline with
    ``local_files_only=True, trust_remote_code=False``; or a loaded ``torch.nn.Module``.
    See the module docstring for offsets and ``beyond``.
    """
    n = check_n(n_positions)
    if beyond not in ("error", "interpolate"):
        raise PosgeomError(f"beyond must be 'error' or 'interpolate', got {beyond!r}")
    source, net = type(model).__name__, model
    if isinstance(model, (str, os.PathLike)):
        from posgeom._hub import pretrained_model

        source, net = str(model), pretrained_model(model)
    name, module = find_position_table(net)
    offset = table_offset(module, offset)
    table = module.weight.detach().cpu().double().numpy()[offset:]
    rows = table.shape[0]
    if n <= rows:
        vectors = table[:n]
    elif beyond == "error" or rows < 2:
        raise PosgeomError(
            f"{source} has {rows} position rows (after offset {offset}) but n_positions={n}; "
            f"use n_positions <= {rows} or beyond='interpolate'"
        )
    else:
        vectors = extend_table(table, n, "interpolate")
    params = {
        "model": source,
        "table": name,
        "offset": offset,
        "beyond": beyond,
        "table_rows": rows,
    }
    return PositionEncoding("learned", vectors, params)


# ------------------------------------------------------------------------------ mechanism
@dataclass(frozen=True, eq=False)
class LearnedParams(MechanismParams):
    """A learned absolute table ``(n_positions, d)`` from row ``offset`` on, so row ``i`` is the
    vector added at position ``i`` of a sequence (OPT, RoBERTa, MPNet: offset 2)."""

    key = "learned"
    _arrays = ("table",)

    table: np.ndarray
    offset: int = 0

    @property
    def n_positions(self) -> int:
        return int(self.table.shape[0])

    def summary(self) -> str:
        rows, width = self.table.shape
        return f"learned absolute {rows}x{width} (offset {self.offset})"

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Vectors ``(n, d)``: rows ``0 .. n-1`` after the offset."""
        if n > self.n_positions:
            raise PosgeomError(
                f"the learned table has {self.n_positions} positions, fewer than n={n}; "
                f"use n <= {self.n_positions}"
            )
        return np.array(self.table[:n], dtype=np.float64)

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        table = self.to_encoding(n + start)[start:]
        params = dict(params, offset=self.offset, table_rows=self.n_positions)
        return {"": PositionEncoding("learned", table, params)}


# ------------------------------------------------------------------------------ family
@register
class LearnedFamily(Family):
    """Learned absolute tables: a model's rows as geometry; trained tables in the trainer; its
    extension side (``extend``, the decoder) is ``extension``, a :class:`LearnedExtension`."""

    name = "learned"
    order = 70
    summary = "learned absolute position table (BERT, GPT-2, RoBERTa, OPT, ...)"
    requires = ("model",)
    mechanism_kind = "learned"
    mechanism_params = LearnedParams
    looks_for = "learned tables (nn.Embedding or parameters named " + ", ".join(LEARNED_NAMES) + ")"
    detect_order = 10
    comparison_needs = "learned_model"
    torch_class = "posgeom.nn.position:LearnedPositionEmbedding"
    trained_by_default = True
    extension_type = LearnedExtension

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        if "model" not in params:
            raise PosgeomError("learned needs model=<Hugging Face folder, cached name or model>")
        return learned(n_positions, **params)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding | None:
        return None if ctx.learned_model is None else learned(ctx.n_positions, ctx.learned_model)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        p = encoding.params
        source = p.get("model") or p.get("source") or "the model"  # a mechanism names its source
        text = f"learned table of {source!s}"[:120].replace("|", "/")
        return text + f" (rows {p.get('offset', p.get('start', 0))}.., width {encoding.dim})"

    def parameter_count(self, ctx: ComparisonContext, encoding: PositionEncoding) -> int:
        return ctx.n_kept * int(encoding.dim or 0)

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        found = []
        for name, module, weight in [*position_tables(model), *_buffer_tables(model)]:
            off = table_offset(module, options.get("learned_offset"))
            if off >= weight.shape[0]:
                raise PosgeomError(
                    f"offset {off} leaves no rows in {name} ({weight.shape[0]} rows); "
                    "pass a smaller learned_offset"
                )
            source = f"{name}.weight" if _hf.is_embedding(module) else name
            found.append(
                Mechanism("learned", source, LearnedParams(_hf.to_numpy(weight[off:]), off))
            )
        return found

    def torch_module(self, spec: TorchSpec) -> Any:
        import torch

        gen = None if spec.seed is None else torch.Generator().manual_seed(spec.seed)
        return self.torch_class_object()(spec.n, spec.d, generator=gen)
