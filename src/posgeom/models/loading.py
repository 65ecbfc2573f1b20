"""Model access for the models layer: offline loading and one tokenizer adapter.

Loading. :func:`load_model` and :func:`load_tokenizer` load with ``local_files_only=True`` and
``trust_remote_code=False`` through :mod:`posgeom._hub`, the one module that calls
``from_pretrained``: posgeom never downloads a model and never runs code shipped with a
checkpoint. ``device`` and ``dtype`` (:mod:`posgeom._placement`) choose where the model runs and
its weights' precision; :func:`loaded_model` is what the analyses call on ``model=`` arguments.

Tokenizers. :func:`model_tokenizer` turns whatever the caller has (a name or path, a posgeom
tokenizer, a ``transformers`` tokenizer, a ``tokenizers.Tokenizer``) into a
:class:`ModelTokenizer`: the posgeom tokenizer (no padding, no truncation, special tokens added)
with ``special_ids`` (the special tokens **minus the unknown token**: an ``[UNK]`` stands for a
real word), ``unk_id``, ``pad_id`` and :meth:`ModelTokenizer.check_model`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from posgeom._errors import PosgeomError, require
from posgeom._hub import pretrained_model, pretrained_tokenizer
from posgeom._validation import is_integer
from posgeom.encodings._hf import config_get
from posgeom.encodings.learned import position_limit

__all__ = [
    "ModelTokenizer",
    "load_model",
    "load_tokenizer",
    "loaded_model",
    "model_info",
    "model_position_limit",
    "model_tokenizer",
    "padding_id",
]


#: Load a pretrained model offline, in eval mode (:func:`posgeom._hub.pretrained_model`).
load_model = pretrained_model
#: A ``transformers`` tokenizer, offline (:func:`posgeom._hub.pretrained_tokenizer`); for counting
#: and the model analysis :func:`model_tokenizer` wraps it.
load_tokenizer = pretrained_tokenizer


def loaded_model(model: Any, *, device: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
    """``model`` itself, or loaded with :func:`load_model` (``device``, ``dtype`` and ``kwargs``
    such as ``gguf_file=``) when it is a name or folder. A loaded model runs where it is:
    ``device``/``dtype`` with one is refused (move it with ``model.to(...)`` first), and so is
    anything but a torch module."""
    if isinstance(model, (str, os.PathLike)):
        return load_model(model, device=device, dtype=dtype, **kwargs)
    if device is not None or dtype is not None:
        raise PosgeomError(
            "device= and dtype= apply when posgeom loads the model from a name or folder; a "
            "loaded model runs where it is (move it with model.to(device, dtype) first)"
        )
    if not isinstance(model, require("torch", "torch").nn.Module):
        raise PosgeomError(
            f"model must be a torch model or a name/path, got {type(model).__name__}"
        )
    return model


def model_position_limit(model: Any) -> int | None:
    """How many positions the model can take: learned-table rows after the offset, else
    ``max_position_embeddings`` / ``n_positions`` / ``max_seq_len`` from the config, else None."""
    limit = position_limit(model)
    if limit is not None:
        return limit
    config = getattr(model, "config", None)
    value = config_get(config, "max_position_embeddings", "n_positions", "max_seq_len")
    return None if value is None else int(value)


def model_info(model: Any) -> dict[str, Any]:
    """What ``model`` is, where it runs and in what precision: its dtype, input device and device
    map, class, ``model_type``, layer count, width, position limit and parameter count (the
    ``model`` block of analyze-model's ``summary.json``)."""
    from posgeom._placement import input_device

    config = getattr(model, "config", None)
    param = next(model.parameters(), None)
    return {
        "dtype": None if param is None else str(param.dtype).removeprefix("torch."),
        "device": str(input_device(model)),
        "device_map": {k: str(v) for k, v in (getattr(model, "hf_device_map", None) or {}).items()}
        or None,
        "class": type(model).__name__,
        "model_type": getattr(config, "model_type", None),
        "num_hidden_layers": getattr(config, "num_hidden_layers", None),
        "hidden_size": getattr(config, "hidden_size", None),
        "position_limit": model_position_limit(model),
        "parameters": int(sum(p.numel() for p in model.parameters())),
    }


def _embedding_rows(model: Any) -> int | None:
    get = getattr(model, "get_input_embeddings", None)
    embeddings = get() if callable(get) else None
    weight = getattr(embeddings, "weight", None)
    return None if weight is None else int(weight.shape[0])


def padding_id(tokens: ModelTokenizer | None, model: Any) -> int:
    """The id a padded batch is filled with (padding is masked out: any embedding row serves):
    the tokenizer's pad id, else the model's ``config.pad_token_id``, else 0 (also when the id is
    negative or not a row of the model's input embedding)."""
    pad = tokens.pad_id if tokens is not None else None
    if pad is None:
        pad = getattr(getattr(model, "config", None), "pad_token_id", None)
    rows = _embedding_rows(model)
    if not is_integer(pad) or pad < 0 or (rows is not None and pad >= rows):
        return 0
    return int(pad)


@dataclass(frozen=True, eq=False)
class ModelTokenizer:
    """A posgeom tokenizer with the ids the models layer needs (see the module docstring).

    Attributes:
        tokenizer: the posgeom tokenizer (``encode_batch``, ``vocab_size``, ``identity``).
        special_ids: special token ids without the unknown token.
        unk_id, pad_id: the unknown and padding ids, or ``None``.
    """

    tokenizer: Any
    special_ids: frozenset[int]
    unk_id: int | None
    pad_id: int | None

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.vocab_size)

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self.tokenizer.identity)

    @property
    def name(self) -> str:
        return str(self.identity.get("name", type(self.tokenizer).__name__))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens added, no padding, no truncation."""
        return [list(ids) for ids in self.tokenizer.encode_batch(list(texts))]

    def check_model(self, model: Any, *, fix: str = "load the tokenizer of this model") -> None:
        """Raise :class:`PosgeomError` when this tokenizer evidently belongs to another model:
        the model must read token ids alone (:func:`~posgeom.models.token_input.check_token_input`),
        the vocabulary must fit its input embedding, and the padding ids must agree where both
        name one (a BERT tokenizer on MPNet fits, but pads with 0, not 1)."""
        from posgeom.models.token_input import check_token_input

        check_token_input(model)
        rows = _embedding_rows(model)
        if rows is not None and self.vocab_size > rows:
            raise PosgeomError(
                f"the tokenizer {self.name} has {self.vocab_size} tokens but the model's input "
                f"embedding has only {rows} rows: tokenizer and model do not match. Fix: {fix}"
            )
        config_pad = getattr(getattr(model, "config", None), "pad_token_id", None)
        if isinstance(config_pad, int) and self.pad_id is not None and self.pad_id != config_pad:
            raise PosgeomError(
                f"the tokenizer {self.name} pads with id {self.pad_id} but the model's config "
                f"says pad_token_id={config_pad}: tokenizer and model do not match. Fix: {fix}"
            )


def _posgeom_tokenizer(spec: Any, name: str | None) -> Any:
    """The posgeom tokenizer for ``spec`` (see :func:`model_tokenizer`)."""
    from posgeom.corpus import tokenize

    if isinstance(spec, (str, os.PathLike)):
        return tokenize.load_tokenizer(spec)
    from posgeom._paths import portable_path

    label = portable_path(name or getattr(spec, "name_or_path", None) or type(spec).__name__)
    if hasattr(spec, "all_special_ids"):  # a transformers tokenizer
        return tokenize.from_transformers(spec, name=label)
    if hasattr(spec, "get_added_tokens_decoder") and hasattr(spec, "to_str"):  # tokenizers
        backend = require("tokenizers", "hf").Tokenizer.from_str(spec.to_str())
        return tokenize.HFTokenizer(backend, name=label)
    if hasattr(spec, "encode_batch") and hasattr(spec, "identity"):  # already posgeom's
        return spec
    raise PosgeomError(
        f"cannot use a {type(spec).__name__} as a tokenizer; pass a tokenizer.json, a model "
        "folder or name, a transformers tokenizer or a tokenizers.Tokenizer"
    )


def model_tokenizer(spec: Any, *, name: str | None = None) -> ModelTokenizer:
    """A :class:`ModelTokenizer` for ``spec``: a :class:`ModelTokenizer` (returned as is), a
    name or path (:func:`posgeom.corpus.tokenize.load_tokenizer`), a posgeom tokenizer, a
    ``transformers`` tokenizer or a ``tokenizers.Tokenizer`` (a copy is used, with padding and
    truncation off; the caller's object is not changed)."""
    if isinstance(spec, ModelTokenizer):
        return spec
    tok = _posgeom_tokenizer(spec, name)
    if not getattr(tok, "fitted", True):
        raise PosgeomError(
            "the word tokenizer has no vocabulary: a model needs its own tokenizer; pass the "
            "model's tokenizer.json or folder"
        )
    unk = getattr(tok, "unk_id", None)
    pad = getattr(tok, "pad_id", None)
    special = frozenset(int(i) for i in tok.special_ids) - (
        {int(unk)} if unk is not None else set()
    )
    return ModelTokenizer(
        tokenizer=tok,
        special_ids=special,
        unk_id=None if unk is None else int(unk),
        pad_id=None if pad is None else int(pad),
    )
