"""What ``posgeom extend`` reads a model as (module docstring of :mod:`posgeom.extension.run`):
a family spec, a posgeom decoder (file or object: its recorded tokenizer), or a Hugging Face
folder or cached name, offline through :mod:`posgeom._hub` (its configuration alone when that
names the family, else its weights), and the encoder of its texts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, require
from posgeom._paths import portable_path
from posgeom.extension.decoder import decoder_source, is_decoder, is_decoder_path
from posgeom.extension.model import (
    ExtensionModel,
    config_model,
    is_family_spec,
    model_from_config,
    parse_family_spec,
)

__all__ = ["encoder", "is_spec", "load_extension_model"]


def is_spec(model: Any) -> bool:
    """``model`` names a family spec (``"rope:theta=..."``), not an existing path."""
    text = str(model)
    return not Path(text).exists() and is_family_spec(text)


def encoder(model: Any, tokenizer: Any, gguf_file: str | None) -> Callable | None:
    """Texts -> token ids for ``model``: ``tokenizer`` when given, else the model's own; None
    for a family spec without one or a posgeom decoder (its recorded tokenizer)."""
    if is_decoder_path(model) or is_decoder(model):
        if tokenizer is not None:
            raise PosgeomError(
                "a posgeom decoder reads its recorded tokenizer; drop --tokenizer for a decoder"
            )
        return None  # set by load_extension_model (the decoder's recorded tokenizer)
    if is_spec(model):
        if tokenizer is None:
            return None
    else:
        from posgeom._hub import check_model_source

        check_model_source(model, gguf_file)  # "the model folder ... does not exist", gguf
    if tokenizer is not None:
        from posgeom.corpus.tokenize import load_tokenizer

        tok = load_tokenizer(tokenizer, add_special_tokens=False)
        return lambda texts: tok.encode_batch(texts)
    from posgeom._hub import pretrained_tokenizer

    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    hf = pretrained_tokenizer(model, **kwargs)
    return lambda texts: [hf(t, add_special_tokens=False)["input_ids"] for t in texts]


def _model_class(config: Any, measure: Any) -> Any:
    """``AutoModelForCausalLM`` when transformers has a causal LM for ``config``; else, unless
    ``measure`` needs the losses, ``AutoModel`` (an encoder's or a vision-language model's weights,
    read for their position tables and projections only)."""
    transformers = require("transformers", "hf")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if getattr(config, "model_type", None) in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or measure:
        return transformers.AutoModelForCausalLM  # measure without one: transformers' own line
    return transformers.AutoModel


def load_extension_model(
    model: Any,
    gguf_file: str | None,
    *,
    weights: bool,
    placement: dict[str, Any],
    measure: Any = False,
) -> tuple[ExtensionModel, Any, Any]:
    """The :class:`ExtensionModel`, when ``weights`` the causal LM (else None; a posgeom decoder
    file always gives its decoder; ``placement``: its device and dtype) and the tokenizer a
    decoder file records (else None)."""
    hf = not (is_decoder(model) or is_decoder_path(model) or is_spec(model))
    if not hf and placement != {"device": "cpu", "dtype": "float32"}:
        raise PosgeomError("extend: device= and dtype= apply to a Hugging Face folder or name")
    source = decoder_source(model)
    if source is not None:
        return source
    if is_spec(model):
        if weights:
            raise PosgeomError(
                "--measure and embedding classes need a real model (a Hugging Face folder), not a "
                "family spec"
            )
        return parse_family_spec(str(model)), None, None
    from posgeom._hub import pretrained_config, pretrained_model

    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    name = portable_path(Path(model) / (gguf_file or ""))
    config = pretrained_config(model, **kwargs)
    from_config = None if weights else config_model(config, name=name)
    if from_config is not None:  # the configuration names the family (RoPE): no weights
        return from_config, None, None
    lm = pretrained_model(model, model_class=_model_class(config, measure), **placement, **kwargs)
    if not isinstance(lm, require("transformers", "hf").GenerationMixin):  # not a causal LM
        from posgeom.models.token_input import check_token_input

        check_token_input(lm)  # a vision or audio tower: no text context to extend
    return model_from_config(lm.config, model=lm, name=name), lm, None
