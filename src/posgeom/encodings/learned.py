"""Learned absolute position tables of Hugging Face models.

The rows used for positions ``0 .. n-1`` of the model's position table:

- BERT, DistilBERT, ELECTRA, MPNet, RoBERTa, XLM-R ...: ``embeddings.position_embeddings``;
  GPT-2: ``wpe``; OPT, BART ...: ``embed_positions``.
- Offset: a table module with an ``offset`` attribute (OPT, BART: 2) starts at that row; a table
  with a ``padding_idx`` (RoBERTa, MPNet, XLM-R: ``padding_idx = 1``) starts at ``padding_idx + 1``
  because those models number real tokens from ``padding_idx + 1``. ``offset=`` overrides both.
- ``beyond="error"`` (default) refuses ``n`` larger than the table; ``beyond="interpolate"``
  resamples the ``N`` available rows linearly: position ``i`` reads the table at
  ``t = i (N - 1) / (n - 1)``, ``(1 - frac t) row[floor t] + (frac t) row[floor t + 1]``, so the
  first and last positions are the first and last rows (the same rule as position interpolation).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom.encodings._base import PositionEncoding, check_n

_TABLE_NAMES = ("position_embeddings", "wpe", "embed_positions")


def _load_model(model: Any) -> Any:
    if not isinstance(model, (str, os.PathLike)):
        return model
    require("torch", "torch")
    transformers = require("transformers", "hf")
    try:
        return transformers.AutoModel.from_pretrained(
            str(model), local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError) as exc:
        raise PosgeomError(
            f"cannot load model {str(model)!r} offline: {exc}. Pass a local folder, a name already "
            "in the Hugging Face cache (posgeom never downloads), or a loaded model"
        ) from exc


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


def find_position_table(model: Any) -> tuple[str, Any]:
    """``(name, module)`` of the position table of a loaded model, or :class:`PosgeomError`."""
    found = [
        (name, mod)
        for name, mod in model.named_modules()
        if name.rsplit(".", 1)[-1] in _TABLE_NAMES
        and getattr(getattr(mod, "weight", None), "ndim", 0) == 2
    ]
    if not found:
        raise PosgeomError(_no_table_message(model))
    return min(found, key=lambda item: item[0].count("."))  # the encoder's (shallowest) table


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
    source = str(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__
    net = _load_model(model)
    name, module = find_position_table(net)
    if offset is None:
        pad = getattr(module, "padding_idx", None)
        offset = int(getattr(module, "offset", 0) or (pad + 1 if pad is not None else 0))
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
        t = np.arange(n) * (rows - 1) / (n - 1)
        lo = np.minimum(np.floor(t).astype(int), rows - 2)
        frac = (t - lo)[:, None]
        vectors = (1 - frac) * table[lo] + frac * table[lo + 1]
    params = {
        "model": source,
        "table": name,
        "offset": offset,
        "beyond": beyond,
        "table_rows": rows,
    }
    return PositionEncoding("learned", vectors, params)
