"""A small causal language model of posgeom blocks, saved as one safetensors file.

Architecture (pre-LN, GPT-style, no dropout, nothing tied), for token ids ``x`` of shape ``(B, L)``:

    h_0 = E[x] (+ P[0 .. L-1] for an additive position module)                 (B, L, d)
    h_l = h_{l-1} + MHA(LN(h_{l-1}); causal mask + bias);  h_l += FFN(LN(h_l))  l = 1 .. n_layers
    logits = W LN(h_n) + b                                                      (B, L, V)

with the causal mask ``-inf`` above the diagonal (``(1, L, L)``), the blocks
:class:`posgeom.nn.encoder.EncoderLayer` (GELU FFN of width ``d_ff``) and the position module
built by the family ``position`` names (its extension's ``decoder_module``;
:func:`decoder_positions` lists the families that have one: ``rope``, ``alibi``, ``t5``,
``learned``, ``sinusoidal``, ``nope``, ...). This is the Track B model of the context-extension
study (``studies/extension/track_b.py``); the position module can be swapped for an extended one
(:meth:`CausalDecoder.set_position`), as ``posgeom extend --measure`` does.

File (:func:`save_decoder` / :func:`load_decoder`): the ``state_dict`` tensors plus the metadata
entry ``"posgeom"`` = ``{"format": "posgeom.decoder/1", "class": "CausalDecoder", "config":
<DecoderConfig fields>, "dtype": ..., "info": {...}}``; ``config["tokenizer"]`` names the
tokenizer the model reads (``"bytes"``: raw UTF-8 bytes, ids 0 .. 255). No pickle. Loading
checks the configuration's sizes (``_LIMITS``) and that the file holds at least
:meth:`DecoderConfig.weights_at_least` numbers before the model is built, then every shape.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from posgeom._errors import ArtifactError, PosgeomError
from posgeom._validation import check_int, check_real
from posgeom.encodings import extension_of, families
from posgeom.encodings._extension import has_decoder_module
from posgeom.nn.alibi import AttentionBias
from posgeom.nn.encoder import EncoderLayer, run_layers
from posgeom.nn.io import read_tensors, write_tensors
from posgeom.nn.position import PositionEmbedding
from posgeom.nn.rotary import RotaryEmbedding

__all__ = [
    "DECODER_FORMAT",
    "CausalDecoder",
    "DecoderConfig",
    "decoder_positions",
    "load_decoder",
    "save_decoder",
]

DECODER_FORMAT = "posgeom.decoder/1"


def decoder_positions() -> tuple[str, ...]:
    """The families with a decoder position module (their ``decoder_module``), registry order."""
    return tuple(name for name, fam in families().items() if has_decoder_module(fam.extension))


_LIMITS = {  # (least, most) of each size: a file declaring more is refused before allocating
    "vocab_size": (1, 1 << 20),
    "d_model": (1, 1 << 14),
    "n_heads": (1, 1 << 10),
    "n_layers": (1, 1 << 10),
    "d_ff": (1, 1 << 16),
    "trained_length": (1, 1 << 20),
    "t5_num_buckets": (2, 1 << 16),
    "t5_max_distance": (2, 1 << 24),
}


@dataclass(frozen=True)
class DecoderConfig:
    """Sizes and position family of a :class:`CausalDecoder` (module docstring)."""

    position: str = "rope"
    vocab_size: int = 256
    d_model: int = 64
    n_heads: int = 2
    n_layers: int = 2
    d_ff: int = 256
    trained_length: int = 128
    rope_theta: float = 10000.0
    sinusoidal_base: float = 10000.0
    t5_num_buckets: int = 32
    t5_max_distance: int = 128
    tokenizer: str = "bytes"

    def __post_init__(self) -> None:
        if self.position not in decoder_positions():
            raise PosgeomError(
                f"unknown position {self.position!r}; use one of {', '.join(decoder_positions())}"
            )
        for name, (least, most) in _LIMITS.items():
            check_int(getattr(self, name), name, least, most)
        for name in ("rope_theta", "sinusoidal_base"):
            check_real(getattr(self, name), name, 1.0, 1e12, closed="neither")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise PosgeomError(
                f"d_model={self.d_model} must be n_heads={self.n_heads} times an even head width"
            )
        if self.t5_max_distance <= self.t5_num_buckets // 2:
            raise PosgeomError(
                f"t5_max_distance={self.t5_max_distance} must exceed the exact buckets "
                f"t5_num_buckets // 2 = {self.t5_num_buckets // 2}"
            )
        if not isinstance(self.tokenizer, str) or not self.tokenizer:
            raise PosgeomError(f"tokenizer must name a tokenizer ('bytes'), got {self.tokenizer!r}")
        if self.tokenizer == "bytes" and self.vocab_size < 256:
            raise PosgeomError(f"the byte tokenizer needs vocab_size >= 256, got {self.vocab_size}")

    def weights_at_least(self) -> int:
        """A lower bound of the model's parameter count: embedding and head ``2 V d``, per layer
        attention ``4 d^2`` and FFN ``2 d d_ff``, and what the position family says its module
        stores (a learned or sinusoidal table ``L d``; the biases, norms and T5's small table are
        left out). Computed before anything is built."""
        d = self.d_model
        layers = self.n_layers * (4 * d * d + 2 * d * self.d_ff)
        position = extension_of(self.position).decoder_weights_at_least(self)
        return 2 * self.vocab_size * d + layers + position

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def position_module(self, generator: torch.Generator | None = None) -> nn.Module | None:
        """A freshly initialised position module of this configuration, built by its family
        (``decoder_module``; ``None``: NoPE)."""
        return extension_of(self.position).decoder_module(self, generator)


class CausalDecoder(nn.Module):
    """The causal decoder of the module docstring.

    Args:
        config: a :class:`DecoderConfig`.
        seed: with a seed, the weights are drawn from it (torch's global generator forked and
            seeded, the position module from ``torch.Generator().manual_seed(seed)``), so one seed
            gives one model and the caller's random state is left as it was; ``None``: torch's
            global generator.

    ``forward(ids (B, L)) -> logits (B, L, vocab_size)``; ``hidden(ids)`` the final normalised
    states ``(B, L, d_model)``; the state_dict keys are ``tok.weight``, ``position.*``,
    ``layers.{i}.*``, ``ln.*``, ``head.*``.
    """

    def __init__(self, config: DecoderConfig, *, seed: int | None = None) -> None:
        super().__init__()
        self.config = config
        if seed is None:
            self._build(None)
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build(torch.Generator().manual_seed(seed))

    def _build(self, generator: torch.Generator | None) -> None:
        c = self.config
        position = c.position_module(generator)  # drawn first, as in Track B's models
        self.tok = nn.Embedding(c.vocab_size, c.d_model)
        self.position = position
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.n_heads, c.d_ff) for _ in range(c.n_layers)
        )
        self.ln = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab_size)

    def set_position(self, module: nn.Module | None) -> None:
        """Replace the position module (e.g. by an extended table or a scaled RoPE)."""
        kinds = (PositionEmbedding, RotaryEmbedding, AttentionBias)
        if module is not None and not isinstance(module, kinds):
            raise PosgeomError(
                f"a decoder position module must be a posgeom.nn position module or None, got "
                f"{type(module).__name__}"
            )
        self.position = module

    def hidden(self, ids: Tensor) -> Tensor:
        """Final normalised hidden states ``(B, L, d_model)`` of token ids ``(B, L)``."""
        if ids.ndim != 2 or ids.is_floating_point():
            raise PosgeomError(f"ids must be integer (batch, seq_len), got {tuple(ids.shape)}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise PosgeomError(
                f"token ids must lie in 0 .. {self.config.vocab_size - 1}, got "
                f"{int(ids.min())} .. {int(ids.max())}; tokenize with {self.config.tokenizer!r}"
            )
        return self.ln(run_layers(self.position, self.tok(ids), self.layers, causal=True))

    def forward(self, ids: Tensor) -> Tensor:
        """Next-token logits ``(B, L, vocab_size)``."""
        return self.head(self.hidden(ids))


def save_decoder(
    model: CausalDecoder, path: str | os.PathLike, *, info: dict[str, Any] | None = None
) -> Path:
    """Write ``model`` to ``path`` (one safetensors file, module docstring); ``info``: free JSON
    (how it was trained). Returns the path."""
    if not isinstance(model, CausalDecoder):
        raise PosgeomError(f"save_decoder saves a CausalDecoder, got {type(model).__name__}")
    meta = {
        "format": DECODER_FORMAT,
        "class": "CausalDecoder",
        "config": dataclasses.asdict(model.config),
        "dtype": str(model.tok.weight.dtype).removeprefix("torch."),
        "info": dict(info or {}),
    }
    return write_tensors(path, model.state_dict(), meta)


def load_decoder(path: str | os.PathLike) -> tuple[CausalDecoder, dict[str, Any]]:
    """``(model, meta)`` of a file written by :func:`save_decoder` (in eval mode); a missing,
    corrupt or foreign file raises :class:`~posgeom._errors.ArtifactError` (one line)."""
    path = Path(path)
    meta, tensors = read_tensors(path, writer="posgeom.nn.decoder.save_decoder")
    if meta.get("format") != DECODER_FORMAT:
        raise ArtifactError(
            f"{path} holds {meta.get('format')!r}, not a posgeom decoder ({DECODER_FORMAT!r}); "
            "pass a file written by posgeom.nn.decoder.save_decoder"
        )
    try:
        config = DecoderConfig(**meta["config"])
    except (KeyError, TypeError, PosgeomError) as exc:
        raise ArtifactError(f"{path}: the decoder configuration is unreadable ({exc})") from exc
    mismatch = ArtifactError(
        f"{path}: its tensors do not match its configuration {meta['config']}; the file "
        "was edited or truncated, write it again with save_decoder"
    )
    if config.weights_at_least() > sum(t.numel() for t in tensors.values()):
        raise mismatch  # before the model is built: a forged size allocates nothing
    model = CausalDecoder(config, seed=0)
    expected = model.state_dict()
    if set(expected) != set(tensors) or any(
        tuple(tensors[k].shape) != tuple(v.shape) for k, v in expected.items()
    ):
        raise mismatch
    model.load_state_dict(tensors)
    return model.eval(), meta
