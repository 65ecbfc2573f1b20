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
    hidden = config_get(config, "hidden_size", "n_embd", "d_model")
    heads = num_heads(config)
    if hidden and heads:
        return int(hidden) // heads
    return None


def parent(model: Any, name: str) -> Any:
    """The module that owns the parameter, buffer or submodule ``name``."""
    if "." not in name:
        return model
    return model.get_submodule(name.rsplit(".", 1)[0])


def last_name(name: str) -> str:
    """The last component of a dotted module or parameter name."""
    return name.rsplit(".", 1)[-1]


def to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor as a read-only float64 numpy copy (on the CPU)."""
    import torch

    return readonly(tensor.detach().to(device="cpu", dtype=torch.float64).numpy())


def is_embedding(module: Any) -> bool:
    """Whether ``module`` is a ``torch.nn.Embedding``."""
    import torch

    return isinstance(module, torch.nn.Embedding)
