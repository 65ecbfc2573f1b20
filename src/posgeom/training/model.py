"""The models: a TinyEncoder with the position module of ``cfg.encoding``, or MiniLM.

``"tiny"``: :class:`posgeom.nn.TinyEncoder` (pre-LN, mean pooling, 2 classes), or for
``imdb-mlm`` the encoder with a vocabulary head on every token; its position module
(:func:`position_encoding`) comes from the family registry. ``"minilm"``: the real
all-MiniLM-L6-v2 weights (offline), mean pooling over real tokens and a linear head; its own
learned absolute table is fine-tuned. torch and transformers are imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from posgeom._errors import PosgeomError
from posgeom.training.config import TrainConfig
from posgeom.training.data import minilm_path

__all__ = [
    "build_model",
    "n_position_parameters",
    "position_encoding",
    "position_module",
]


def build_model(cfg: TrainConfig, vocab_size: int, geometry: Any = None) -> Any:
    """The torch model of ``cfg`` (seeded by the caller); ``geometry`` feeds the MDS encodings."""
    from posgeom.nn import TinyEncoder

    masked_lm, minilm = _lazy_modules()
    if cfg.model == "minilm":
        return minilm(cfg)
    pos = position_encoding(cfg, geometry)
    encoder = TinyEncoder(
        vocab_size,
        cfg.d_model,
        cfg.n_heads,
        cfg.n_layers,
        cfg.max_len,
        pos,
        n_classes=2,
        d_ff=cfg.d_ff,
        dropout=cfg.dropout,
    )
    return masked_lm(encoder, vocab_size) if cfg.task == "imdb-mlm" else encoder


def position_encoding(cfg: TrainConfig, geometry: Any = None) -> Any:
    """The position module of ``cfg.encoding`` for the tiny model (``None`` for NoPE), built by
    the family's ``torch_module`` (``geometry``, a ``GeometryResult``, feeds the MDS families).
    ``cfg.train_positions`` overrides the family's default; a fixed table (a buffer) that is to be
    trained becomes a parameter."""
    from torch import nn

    from posgeom.encodings import family

    pos = family(cfg.encoding).torch_module(cfg.torch_spec(geometry))
    if cfg.train_positions is not None and isinstance(pos, nn.Module):
        for p in pos.parameters():
            p.requires_grad_(bool(cfg.train_positions))
        if cfg.train_positions and "weight" in pos._buffers:
            weight = pos.weight.detach().clone()
            del pos._buffers["weight"]
            pos.weight = nn.Parameter(weight)
    return pos


def _lazy_modules() -> tuple[type, type]:
    from torch import nn

    class MaskedLM(nn.Module):
        """TinyEncoder + a vocabulary head on every token: ``(B, L) -> (B, L, V)``."""

        def __init__(self, encoder: Any, vocab_size: int) -> None:
            super().__init__()
            self.encoder = encoder
            self.lm_head = nn.Linear(encoder.d_model, vocab_size)

        @property
        def position(self) -> Any:
            return self.encoder.position

        def forward(self, tokens: Any, attention_mask: Any = None, select: Any = None) -> Any:
            """Logits ``(B, L, V)``, or ``(k, V)`` for the ``k`` positions of bool ``select``."""
            h = self.encoder.encode(tokens, attention_mask)
            return self.lm_head(h if select is None else h[select])

    class MiniLMClassifier(nn.Module):
        """all-MiniLM-L6-v2 (BertModel), mean pooling over real tokens, a linear head."""

        def __init__(self, cfg: TrainConfig) -> None:
            super().__init__()
            from posgeom._hub import pretrained_model

            self.bert = pretrained_model(minilm_path())
            hidden = int(self.bert.config.hidden_size)
            if cfg.max_len > int(self.bert.config.max_position_embeddings):
                raise PosgeomError(
                    f"max_len={cfg.max_len} is beyond MiniLM's "
                    f"{self.bert.config.max_position_embeddings} positions"
                )
            self.head = nn.Linear(hidden, 2)
            self.max_len = cfg.max_len

        def forward(self, tokens: Any, attention_mask: Any = None) -> Any:
            import torch

            if attention_mask is None:
                attention_mask = torch.ones_like(tokens)
            h = self.bert(input_ids=tokens, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.to(h.dtype).unsqueeze(-1)
            return self.head((h * m).sum(1) / m.sum(1).clamp(min=1))

    return MaskedLM, MiniLMClassifier


def position_module(model: Any) -> Any:
    """The position module of a tiny model (``None`` for NoPE and for MiniLM)."""
    return None if hasattr(model, "bert") else model.position


def n_position_parameters(model: Any) -> int:
    """Trained position parameters (MiniLM: its whole position table)."""
    if hasattr(model, "bert"):
        return int(model.bert.embeddings.position_embeddings.weight.numel())
    pos = position_module(model)
    return 0 if pos is None else int(sum(p.numel() for p in pos.parameters() if p.requires_grad))
