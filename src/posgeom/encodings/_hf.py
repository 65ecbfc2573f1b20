"""Helpers the families' Hugging Face detectors share (torch-lazy: no torch import at the top).

A detector reads a loaded model generically (named modules, parameters, buffers and a few
configuration fields), never its name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.encodings._base import readonly


def config_get(config: Any, *names: str) -> Any:
    """The first of ``names`` that ``config`` sets (not ``None``), else ``None``."""
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return None


def num_heads(config: Any) -> int | None:
    """Attention heads: ``num_attention_heads`` / ``n_head`` / ``n_heads`` / ``num_heads``."""
    value = config_get(config, "num_attention_heads", "n_head", "n_heads", "num_heads")
    return None if value is None else int(value)


def head_dim(config: Any) -> int | None:
    """``config.head_dim``, else ``hidden_size / heads``, else ``None``."""
    value = getattr(config, "head_dim", None)
    if isinstance(value, int) and value > 0:
        return value
    hidden, heads = config_get(config, "hidden_size", "n_embd", "d_model"), num_heads(config)
    return int(hidden) // heads if hidden and heads else None


def text_config(config: Any) -> Any:
    """The language part of a configuration (``get_text_config()`` of a multimodal one)."""
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def query_head_dim(config: Any) -> int | None:
    """The query/key head width: ``qk_head_dim`` (MLA), ``qk_nope_head_dim + qk_rope_head_dim``,
    else ``head_dim`` / ``hidden_size / heads`` (:func:`head_dim`)."""
    value = getattr(config, "qk_head_dim", None)
    if isinstance(value, int) and value > 0:
        return value
    nope = getattr(config, "qk_nope_head_dim", None)
    rope = getattr(config, "qk_rope_head_dim", None)
    if isinstance(nope, int) and isinstance(rope, int):
        return nope + rope
    return head_dim(config)


def parent(model: Any, name: str) -> Any:
    """The module that owns the parameter, buffer or submodule ``name``."""
    if "." not in name:
        return model
    return model.get_submodule(name.rsplit(".", 1)[0])


def last_name(name: str) -> str:
    """The last component of a dotted module or parameter name."""
    return name.rsplit(".", 1)[-1]


def squeezed(tensor: Any) -> Any:
    """``tensor`` detached, without its leading axes of size 1 beyond the last two (a
    ``(1, P, d)`` table as ``(P, d)``)."""
    tensor = tensor.detach()
    while tensor.ndim > 2 and tensor.shape[0] == 1:
        tensor = tensor[0]
    return tensor


def to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor as a read-only float64 numpy copy (on the CPU)."""
    import torch

    return readonly(tensor.detach().to(device="cpu", dtype=torch.float64).numpy())


def is_embedding(module: Any) -> bool:
    """Whether ``module`` is a lookup table: a ``torch.nn.Embedding``, or a module that keeps
    one as an embedding does (a 2-D ``weight`` parameter and a ``padding_idx`` attribute: I-BERT's
    ``QuantEmbedding``, which looks rows up with ``F.embedding`` outside quantised mode)."""
    import torch

    if isinstance(module, torch.nn.Embedding):
        return True
    weight = getattr(module, "weight", None)
    return (
        isinstance(weight, torch.nn.Parameter)
        and weight.ndim == 2
        and hasattr(module, "padding_idx")
        and not isinstance(module, (torch.nn.Linear, torch.nn.modules.conv._ConvNd))
    )


def module_width(module: Any, config: Any) -> int | None:
    """The width a position module works at: its own ``embed_dim`` / ``embedding_dim`` /
    ``d_model`` / ``dim``, else its own configuration's or ``config``'s ``hidden_size`` /
    ``d_model`` / ``n_embd``, else twice the length of its frequency buffer."""
    for name in ("embed_dim", "embedding_dim", "d_model", "dim"):
        value = getattr(module, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    for cfg in (getattr(module, "config", None), config):  # the module's own (sub-)configuration
        value = config_get(cfg, "hidden_size", "d_model", "n_embd")
        if isinstance(value, int):
            return int(value)
    freqs = [b for b in module.buffers(recurse=False) if b.ndim == 1 and b.is_floating_point()]
    return 2 * int(freqs[0].shape[0]) if freqs else None  # a sinusoid's frequencies


def position_modules(model: Any, names: tuple[str, ...]) -> list[tuple[str, Any]]:
    """``(name, module)`` of the modules named in ``names`` that compute positions instead of
    looking a table up (not an embedding: Pegasus-X's ``embed_positions``, SpeechT5's)."""
    return [
        (name, module)
        for name, module in model.named_modules()
        if last_name(name) in names and not is_embedding(module)
    ]


def call_position_module(module: Any, length: int, width: int) -> Any:
    """What a position module returns for ``length`` positions, float64 on the CPU: called as
    ``module(x)`` with ``x`` zeros ``(1, length, width)`` (the hidden states its owner passes),
    float64 first (a module that computes in its input's dtype is then exact), then float32;
    ``None`` when it cannot be called so."""
    import torch

    for dtype in (torch.float64, torch.float32):
        try:
            with torch.no_grad():
                out = module(torch.zeros(1, length, width, dtype=dtype))
        except Exception:  # not this signature: the detector moves on
            continue
        out = out[0] if isinstance(out, (tuple, list)) and out else out
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            return out.detach().to(device="cpu", dtype=torch.float64)
    return None
