"""``posgeom extend`` on a posgeom decoder (:mod:`posgeom.nn.decoder`): the model, its tokenizer,
and each strategy applied to it.

- :func:`decoder_model`: the :class:`~posgeom.extension.model.ExtensionModel` of the decoder's
  position module, its parameters read by its family (``extension_from_decoder``), the trained
  length from the file;
- :func:`byte_encoder`: the ``"bytes"`` tokenizer; plain-text files are read as their raw bytes;
- :class:`DecoderRunner`: ``--measure`` on the decoder: the family's ``decoder_strategy_module``
  gives the position module that runs a strategy (a strategy it cannot apply is refused, never
  run as ``none``); :meth:`DecoderRunner.restore` puts the trained module back."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of
from posgeom.encodings._extension import ExtensionContext, Strategy
from posgeom.extension.model import ExtensionModel

__all__ = [
    "DecoderRunner",
    "byte_encoder",
    "check_token_ids",
    "decoder_model",
    "decoder_source",
    "is_decoder",
    "is_decoder_path",
    "load_decoder_file",
]


class _ByteEncoder:
    """Texts -> their UTF-8 bytes as ids; ``reads_raw_bytes``: plain files are read unchanged."""

    reads_raw_bytes = True

    def __call__(self, texts: list[str]) -> list[list[int]]:
        return [list(t.encode("utf-8")) for t in texts]


def byte_encoder() -> _ByteEncoder:
    return _ByteEncoder()


def decoder_model(decoder: Any, name: str) -> ExtensionModel:
    """The :class:`ExtensionModel` of a :class:`~posgeom.nn.decoder.CausalDecoder` (its
    position family reads the parameters of its position module)."""
    c = decoder.config
    params = extension_of(c.position).extension_from_decoder(decoder.position)
    return ExtensionModel(c.position, name, int(c.trained_length), params, "posgeom decoder")


def check_token_ids(docs: list[np.ndarray], decoder: Any) -> None:
    """Refuse, before any work, token ids the decoder has no embedding for."""
    top = max((int(d.max()) for d in docs if d.size), default=0)
    if top >= decoder.config.vocab_size:
        raise PosgeomError(
            f"the corpus has token id {top} but the decoder's vocabulary is "
            f"0 .. {decoder.config.vocab_size - 1}; give token ids of its tokenizer "
            f"{decoder.config.tokenizer!r} (or plain text)"
        )


def _encoder_of(tokenizer: str) -> Any:
    if tokenizer == "bytes":
        return byte_encoder()
    from posgeom.corpus.tokenize import load_tokenizer

    return load_tokenizer(tokenizer, add_special_tokens=False).encode_batch


def load_decoder_file(path: str | os.PathLike) -> tuple[ExtensionModel, Any, Any]:
    """``(ExtensionModel, decoder, encode)`` of a file written by ``save_decoder``; one line
    (:class:`~posgeom._errors.ArtifactError`) for a corrupt or foreign file."""
    from posgeom._errors import require

    require("torch", "torch")
    from posgeom.nn.decoder import load_decoder

    decoder, _meta = load_decoder(path)
    return decoder_model(decoder, str(path)), decoder, _encoder_of(decoder.config.tokenizer)


def decoder_source(model: Any) -> tuple[ExtensionModel, Any, Any] | None:
    """``(ExtensionModel, decoder, encode)`` for a decoder file or a ``CausalDecoder`` object
    (in eval mode), None for anything else."""
    if is_decoder_path(model):
        return load_decoder_file(model)
    if is_decoder(model):
        name = f"CausalDecoder({model.config.position})"
        return decoder_model(model.eval(), name), model, _encoder_of(model.config.tokenizer)
    return None


class DecoderRunner:
    """Applies strategies to a ``CausalDecoder`` for ``--measure`` (module docstring);
    ``position_distances``: the corpus's ``(L, L)`` per-position geometry (``gower`` only)."""

    target = "decoder"

    def __init__(self, decoder: Any, position_distances: Any = None) -> None:
        self.decoder = decoder
        self.trained = decoder.position
        self.model = decoder_model(decoder, "decoder")
        self.position_distances = position_distances

    @property
    def identity(self) -> str:
        """A digest of the weights (the measure cache must not outlive a retrained model)."""
        h = hashlib.sha256()
        for key, value in self.decoder.state_dict().items():
            h.update(key.encode() + value.detach().cpu().numpy().tobytes())
        return h.hexdigest()[:20]

    def supports(self, strategy: Strategy) -> bool:
        """Whether the decoder's family can run ``strategy`` (its family's ``can_apply``)."""
        ext = extension_of(self.model.family)
        return strategy.family == self.model.family and ext.can_apply(strategy, "decoder")

    def apply(self, strategy: Strategy, trained_length: int, target_length: int) -> None:
        """Give the decoder the position module of ``strategy`` (one line when its family cannot
        apply it)."""
        ctx = ExtensionContext(int(trained_length), int(target_length), self.position_distances)
        ext = extension_of(self.model.family)
        module = ext.decoder_strategy_module(self.model.params, strategy, self.trained, ctx)
        self.decoder.set_position(module)

    def restore(self) -> None:
        self.decoder.set_position(self.trained)

    def hidden_and_head(self, x: Any) -> tuple[Any, Any]:
        """``(hidden (L, d), head)`` of one window ``x`` (1, L)."""
        return self.decoder.hidden(x)[0], self.decoder.head


def is_decoder(model: Any) -> bool:
    """A posgeom ``CausalDecoder`` object (checked without importing torch)."""
    return type(model).__name__ == "CausalDecoder" and hasattr(model, "set_position")


def is_decoder_path(model: Any) -> bool:
    """A model argument that is a file (not a folder, not a family spec): a decoder file."""
    return isinstance(model, (str, os.PathLike)) and Path(model).is_file()
