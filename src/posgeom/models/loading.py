"""Offline loading of Hugging Face models and tokenizers.

Everything here loads with ``local_files_only=True`` and ``trust_remote_code=False``: posgeom never
downloads from a model hub and never runs code shipped with a checkpoint. A name that is not in the
local Hugging Face cache raises :class:`~posgeom._errors.PosgeomError` explaining how to point at a
local folder instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
import transformers

from posgeom._errors import PosgeomError

__all__ = ["load_model", "load_tokenizer"]


def _one_line(exc: Exception, limit: int = 400) -> str:
    """The exception text on one line (the CLI prints only the first line of an error)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _offline_error(name: str, what: str, exc: Exception) -> PosgeomError:
    return PosgeomError(
        f"could not load the {what} {name!r} offline (posgeom loads with local_files_only=True and "
        f"never downloads): {_one_line(exc)} Fix: pass the path of a local folder that holds "
        "config.json and the weights (e.g. model.safetensors) and tokenizer files, or put the "
        "model in the local Hugging Face cache first (on a connected machine: `hf download "
        "NAME`, then copy the cache or the folder here)."
    )


def _describe(name_or_path: str | os.PathLike[str]) -> str:
    path = Path(name_or_path).expanduser()
    return str(path) if path.exists() else str(name_or_path)


def load_model(
    name_or_path: str | os.PathLike[str],
    *,
    model_class: Any = None,
    **from_pretrained_kwargs: Any,
) -> torch.nn.Module:
    """Load a pretrained model by hub name (from the local cache only) or local folder.

    ``model_class`` defaults to ``transformers.AutoModel`` (the bare model, whose forward returns
    hidden states). Extra keyword arguments go to ``from_pretrained`` (e.g. ``gguf_file=...``,
    ``torch_dtype=...``); ``local_files_only`` and ``trust_remote_code`` cannot be overridden.
    The model is returned in eval mode.
    """
    for key in ("local_files_only", "trust_remote_code"):
        if key in from_pretrained_kwargs:
            raise PosgeomError(
                f"{key} cannot be set: posgeom always loads with local_files_only=True and "
                "trust_remote_code=False; remove that argument"
            )
    cls = model_class if model_class is not None else transformers.AutoModel
    target = _describe(name_or_path)
    try:
        model = cls.from_pretrained(
            target, local_files_only=True, trust_remote_code=False, **from_pretrained_kwargs
        )
    except (OSError, ValueError, KeyError) as exc:
        text = str(exc)
        if "trust_remote_code" in text or "does not recognize this architecture" in text:
            raise PosgeomError(
                f"the model {target!r} needs code that is not part of transformers "
                f"(trust_remote_code), which posgeom never runs: {_one_line(exc)} Fix: use a "
                "model whose architecture transformers supports natively, or upgrade transformers"
            ) from exc
        raise _offline_error(target, "model", exc) from exc
    model.eval()
    return model


def load_tokenizer(name_or_path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """Load a tokenizer offline with ``AutoTokenizer`` (local cache or local folder only)."""
    for key in ("local_files_only", "trust_remote_code"):
        if key in kwargs:
            raise PosgeomError(
                f"{key} cannot be set: posgeom always loads with local_files_only=True and "
                "trust_remote_code=False; remove that argument"
            )
    target = _describe(name_or_path)
    try:
        return transformers.AutoTokenizer.from_pretrained(
            target, local_files_only=True, trust_remote_code=False, **kwargs
        )
    except (OSError, ValueError, KeyError) as exc:
        raise _offline_error(target, "tokenizer", exc) from exc
