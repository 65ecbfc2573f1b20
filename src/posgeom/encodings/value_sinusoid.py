"""An ``inv_freq`` buffer that embeds a value, not a rotation of token positions.

Rotary modules keep their frequencies in an ``inv_freq`` buffer; so do modules that turn a
*value* into sinusoidal features ``[sin(v w_k) | cos(v w_k)]`` for a projection: BROS's layout
embedding of bounding-box coordinates (``BrosPositionalEmbedding1D(pos_seq)``) and
Voxtral-realtime's time conditioning (``VoxtralRealtimeTimeEmbedding(time_tensor)``). Neither
rotates queries and keys by token position.

The test reads what the module computes (:func:`embeds_values`): a module whose forward takes
one tensor is called on two inputs of the same shape, ``v`` and ``v + 1``; a rotary module reads
only the shape (the sequence length, the dtype) of its ``x`` and answers both the same, a value
embedding answers differently. The shapes tried are ``(1, P)``, ``(1, 1, P)``, ``(P,)`` and
``(1,)`` (``P = 4``); a module that none of them fits, or whose forward takes other arguments
(``(x, position_ids)``), is not judged (it stays rotary).

The same holds for a matrix named like a position table that projects coordinates (SAM's
Fourier features, :func:`projects_coordinates`): its rows are coordinate axes, not positions.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["embeds_values", "projects_coordinates"]

#: the input shapes a one-tensor forward is called with
SHAPES = ((1, 4), (1, 1, 4), (4,), (1,))


def _one_tensor_forward(module: Any) -> bool:
    try:
        params = inspect.signature(module.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    required = [p for p in params.values() if p.default is inspect.Parameter.empty]
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return len(required) == 1 and required[0].kind in kinds


def _flat(output: Any) -> Any:
    import torch

    if isinstance(output, torch.Tensor):
        return output.detach().to(torch.float64).reshape(-1)
    if isinstance(output, (tuple, list)) and output:
        parts = [_flat(o) for o in output]
        return None if any(p is None for p in parts) else torch.cat(parts)
    return None


def embeds_values(module: Any) -> bool:
    """Whether ``module`` (the owner of an ``inv_freq`` buffer) turns the values of its one
    input into features rather than rotating by positions (module docstring)."""
    import torch

    if not _one_tensor_forward(module):
        return False
    for shape in SHAPES:
        v = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape)
        try:
            with torch.no_grad():
                a, b = _flat(module(v)), _flat(module(v + 1.0))
        except (TypeError, ValueError, RuntimeError, IndexError):  # not this shape
            continue
        if a is None or b is None or a.shape != b.shape:
            continue
        return not torch.allclose(a, b, rtol=0.0, atol=1e-9)
    return False


def projects_coordinates(owner: Any, table: Any) -> bool:
    """Whether ``owner`` uses its 2-D ``table`` ``(k, m)`` as a projection of coordinates: its
    one-tensor forward, called on coordinates ``(1, 1, 4, k)`` (values ``v`` and ``v + 1``),
    answers features ``(..., 4, 2 m)`` that change with the values (SAM's prompt encoder:
    ``[sin(2 pi c' W) | cos(2 pi c' W)]`` of coordinates ``c' = 2 c - 1``)."""
    import torch

    if table.ndim != 2 or not _one_tensor_forward(owner):
        return False
    k, m = int(table.shape[0]), int(table.shape[1])
    v = torch.linspace(0.0, 1.0, 4 * k, dtype=torch.float32).reshape(1, 1, 4, k)
    try:
        with torch.no_grad():
            a, b = owner(v), owner(v + 1.0)
    except (TypeError, ValueError, RuntimeError, IndexError):
        return False
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if tuple(a.shape) != (1, 1, 4, 2 * m):
        return False
    return not torch.allclose(a.double(), b.double(), rtol=0.0, atol=1e-9)
