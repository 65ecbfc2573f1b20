"""Install a posgeom position embedding into a Hugging Face BERT-like model.

Target: ``<base model>.embeddings.position_embeddings`` (an ``nn.Embedding``) of BERT
(``BertModel``, ``BertFor…``), RoBERTa / XLM-R / CamemBERT and MPNet. The replacement is a
:class:`PositionAdapter` that

1. maps the model's position ids to posgeom positions: ``p = id - offset``, where ``offset = 0``
   for BERT and ``padding_idx + 1`` for models whose embeddings carry a ``padding_idx``
   (RoBERTa-style, real tokens use ids ``padding_idx+1 …``; padding tokens get id ``padding_idx``
   and the adapter returns a zero vector for them, like the zeroed padding row of the original);
2. embeds them with the posgeom module ``(..., L) -> (..., L, d)``;
3. maps width ``d`` to the hidden size ``H``: identity if ``d == H``, else a trainable
   ``nn.Linear(d, H, bias=False)`` (``project_to_hidden=True``; default PyTorch init).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom.nn.position import PositionEmbedding

__all__ = ["PositionAdapter", "find_position_embeddings", "install_position_embedding"]


class PositionAdapter(nn.Module):
    """``position_ids (B, L) -> (B, L, H)`` through a posgeom module and an optional projection."""

    def __init__(
        self,
        module: PositionEmbedding,
        hidden_size: int,
        *,
        offset: int = 0,
        project_to_hidden: bool = True,
    ) -> None:
        super().__init__()
        self.module = module
        self.offset = int(offset)
        self.hidden_size = int(hidden_size)
        d = int(module.dim)
        if d == hidden_size:
            self.projection: nn.Module = nn.Identity()
        elif project_to_hidden:
            self.projection = nn.Linear(d, hidden_size, bias=False)
        else:
            raise PosgeomError(
                f"the position module has width d={d} but the model's hidden size is "
                f"{hidden_size}; pass project_to_hidden=True (adds a trainable {d}x{hidden_size} "
                f"map) or build the module with d={hidden_size}"
            )

    def forward(self, position_ids: Tensor) -> Tensor:
        p = position_ids.long() - self.offset
        pad = p < 0
        out = self.projection(self.module(p.clamp(min=0)))
        if bool(pad.any()):
            out = out.masked_fill(pad.unsqueeze(-1), 0.0)
        return out


def find_position_embeddings(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """Return ``(embeddings, position_embeddings)`` of a BERT-like Hugging Face model."""
    names = ("base_model", "bert", "roberta", "mpnet", "xlm_roberta", "camembert", "electra")
    for cand in [model, *(getattr(model, name, None) for name in names)]:
        emb = getattr(cand, "embeddings", None)
        if isinstance(emb, nn.Module) and isinstance(
            getattr(emb, "position_embeddings", None), nn.Module
        ):
            return emb, emb.position_embeddings
    raise PosgeomError(
        f"{type(model).__name__} has no embeddings.position_embeddings; "
        "install_position_embedding supports BERT-like models (BERT, RoBERTa, MPNet) with "
        "learned absolute positions"
    )


def install_position_embedding(
    model: nn.Module,
    module: PositionEmbedding,
    *,
    project_to_hidden: bool = True,
    position_offset: int | None = None,
) -> PositionAdapter:
    """Replace ``model.embeddings.position_embeddings`` with ``module`` (in place).

    Args:
        model: a Hugging Face BERT-like model (``BertModel``, ``BertForSequenceClassification``,
            ``RobertaModel``, ``MPNetModel``, …).
        module: a :class:`~posgeom.nn.position.PositionEmbedding` of width ``d``.
        project_to_hidden: allow a linear ``d -> hidden_size`` map when the widths differ.
        position_offset: override the id offset (default: ``padding_idx + 1`` if the embeddings
            have a ``padding_idx``, else 0).

    Returns:
        The installed :class:`PositionAdapter` (also reachable as
        ``model.<base>.embeddings.position_embeddings``). It is moved to the device and floating
        dtype of the replaced table.
    """
    if not isinstance(module, PositionEmbedding):
        raise PosgeomError(
            f"module must be a posgeom.nn PositionEmbedding, got {type(module).__name__}"
        )
    emb, old = find_position_embeddings(model)
    weight = getattr(old, "weight", None)
    if isinstance(old, PositionAdapter):
        hidden, ref = old.hidden_size, next(old.parameters(), None)
    elif isinstance(weight, Tensor):
        hidden, ref = int(weight.shape[-1]), weight
    else:
        raise PosgeomError("cannot read the hidden size from the model's position_embeddings")
    if position_offset is None:
        pad = getattr(emb, "padding_idx", None)
        position_offset = (int(pad) + 1) if pad is not None else 0
    adapter = PositionAdapter(
        module, hidden, offset=position_offset, project_to_hidden=project_to_hidden
    )
    if ref is not None:
        adapter = adapter.to(device=ref.device)
        if ref.dtype != torch.float32 and ref.is_floating_point():
            adapter = adapter.to(dtype=ref.dtype)
    emb.position_embeddings = adapter
    return adapter
