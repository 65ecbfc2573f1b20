"""The models a layer probe reads, and the hidden states of one batch.

:func:`open_model` turns what the user passes into a :class:`ProbedModel`:

* a Hugging Face model (object, name or local folder, loaded offline through
  :func:`posgeom.models.loading.load_model`) with its tokenizer: the states are
  ``output_hidden_states=True``'s ``L + 1`` tensors (the embedding output, then every block);
* a posgeom decoder file or :class:`~posgeom.nn.decoder.CausalDecoder` (byte tokenizer), or a
  :class:`~posgeom.nn.encoder.TinyEncoder` (token ids only): the states are the input of the first
  block and the output of every block, read with forward hooks on ``model.layers`` (the model's
  own forward runs unchanged; the final LayerNorm is not a layer).

Every state is ``(B, T, d)``; padding (mask 0) is never read by the callers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from posgeom._errors import PosgeomError
from posgeom._paths import portable_path
from posgeom.models.token_input import forward_module, hidden_states

__all__ = ["ProbedModel", "open_model"]


@dataclass(frozen=True, eq=False)
class ProbedModel:
    """A model ready for a pass: ``encode(texts) -> token-id lists`` (``None``: ids only),
    ``states(ids, mask) -> L + 1`` tensors, the pad id, the special ids, the limit of tokens per
    sequence and a name."""

    module: torch.nn.Module
    encode: Callable[[list[str]], list[Any]] | None
    states: Callable[[torch.Tensor, torch.Tensor], Sequence[torch.Tensor]]
    limit: int | None
    name: str
    pad_id: int = 0
    special_ids: tuple[int, ...] = ()
    tokenizer: Any = None  # the ModelTokenizer of a Hugging Face model

    @property
    def device(self) -> torch.device:
        """Where the inputs go (:func:`posgeom._placement.input_device`)."""
        from posgeom._placement import input_device

        return input_device(self.module)


def _hooked_states(model: torch.nn.Module, call: Callable) -> Callable:
    """States of a posgeom model: the first block's input and every block's output."""
    layers = getattr(model, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList) or len(layers) == 0:
        raise PosgeomError(
            f"{type(model).__name__} has no blocks in .layers; pass a Hugging Face model, a "
            "posgeom CausalDecoder or a TinyEncoder"
        )

    def states(ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        seen: list[torch.Tensor] = []
        hooks = [layers[0].register_forward_pre_hook(lambda m, args: seen.append(args[0]))]
        hooks += [
            layer.register_forward_hook(lambda m, a, out: seen.append(out)) for layer in layers
        ]
        try:
            call(ids, mask)
        finally:
            for hook in hooks:
                hook.remove()
        return seen

    return states


def _posgeom_model(model: Any) -> ProbedModel | None:
    from posgeom.extension.decoder import decoder_source

    source = decoder_source(model)
    if source is not None:
        _, decoder, encode = source
        return ProbedModel(
            module=decoder.eval(),
            encode=encode,
            states=_hooked_states(decoder, lambda ids, mask: decoder.hidden(ids)),
            limit=int(decoder.config.trained_length),
            name=portable_path(model) if isinstance(model, (str, os.PathLike)) else source[0].name,
        )
    if type(model).__name__ == "TinyEncoder":
        return ProbedModel(
            module=model.eval(),
            encode=None,
            states=_hooked_states(model, lambda ids, mask: model.encode(ids, mask)),
            limit=int(model.max_len),
            name=f"TinyEncoder({type(model.position).__name__ if model.position else 'NoPE'})",
        )
    return None


def open_model(
    model: Any,
    tokenizer: Any = None,
    *,
    gguf_file: str | None = None,
    name: str | None = None,
    device: Any = None,
    dtype: Any = None,
) -> ProbedModel:
    """A :class:`ProbedModel` of ``model`` (module docstring); ``tokenizer`` defaults to the
    Hugging Face model's own (a name or folder), ``gguf_file`` names a GGUF checkpoint in it;
    ``device``/``dtype``: where and how a named model loads (:func:`load_model`)."""
    own = _posgeom_model(model)
    if own is not None:
        given = {"tokenizer": tokenizer, "gguf_file": gguf_file}
        if any(v is not None for v in given.values()):
            shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
            raise PosgeomError(
                f"{own.name} is a posgeom model with its own tokenizer; {shown} (of a Hugging "
                "Face model) does not apply to it: drop it"
            )
        return own
    from posgeom.models.loading import (
        load_tokenizer,
        loaded_model,
        model_position_limit,
        model_tokenizer,
        padding_id,
    )

    label = name or (portable_path(model) if isinstance(model, (str, os.PathLike)) else None)
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    if isinstance(model, (str, os.PathLike)) and tokenizer is None:
        tokenizer = load_tokenizer(model, **kwargs) if gguf_file else model
    model = loaded_model(model, device=device, dtype=dtype, **kwargs)
    if tokenizer is None:
        raise PosgeomError("a Hugging Face model object needs its tokenizer: pass tokenizer=...")
    tok = model_tokenizer(tokenizer)
    tok.check_model(model, fix="pass the tokenizer that belongs to this model")
    return ProbedModel(
        module=model.eval(),
        encode=tok.encode,
        states=functools.partial(hidden_states, forward_module(model)),  # (ids, mask) -> states
        pad_id=padding_id(tok, model),
        special_ids=tuple(sorted(int(i) for i in tok.special_ids)),
        limit=model_position_limit(model),
        name=label or type(model).__name__,
        tokenizer=tok,
    )
