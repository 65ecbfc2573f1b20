"""Which layers rotate, read from what the model runs: one short forward pass.

Every attention module whose ``forward`` takes ``position_embeddings`` (the rotary module's
``(cos, sin)``, GPT-J's ``(sin, cos)``, Llama 4's complex ``freqs_cis``) is recorded during a
forward pass of ``LENGTH`` tokens, then called once more with the position embeddings of position
0 at every position (the identity rotation, whatever the tensors' order or form). A layer whose
output does not change did not rotate (Cohere 2's global layers, SmolLM3's NoPE layers); a layer
whose output is constant cannot tell, and the configuration decides. The tensors a layer received
also say which of several rotary set-ups it used (:func:`uses_frequencies`). Where the forward
pass on token ids alone raises, :func:`probe_rotation` returns ``None`` and the layer map falls
back to the configuration.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LENGTH", "LayerCall", "probe_rotation", "uses_frequencies"]

#: tokens of the probe's forward pass
LENGTH = 6


@dataclass(frozen=True)
class LayerCall:
    """One attention module's call: ``name`` (module path), ``rotates`` (its output changed when
    the rotation became the identity) and ``cos_columns`` ``(LENGTH, m)`` float64, every column
    of the position tensors it received (real parts of complex ones)."""

    name: str
    rotates: bool
    cos_columns: np.ndarray


def _takes_position_embeddings(module: Any) -> bool:
    try:
        return "position_embeddings" in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def _attention_modules(model: Any) -> dict[str, Any]:
    """The innermost modules taking ``position_embeddings`` (attention, not the decoder layer)."""
    takers = {name: m for name, m in model.named_modules() if _takes_position_embeddings(m)}
    return {
        name: m
        for name, m in takers.items()
        if not any(other.startswith(f"{name}.") for other in takers if other != name)
    }


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _at_position_zero(value: Any) -> Any:
    """The same structure with every position's entry replaced by position 0's."""
    import torch

    if isinstance(value, torch.Tensor):
        return value[..., :1, :].expand_as(value).clone()
    return type(value)(_at_position_zero(v) for v in value)


def _columns(value: Any) -> np.ndarray:
    import torch

    cols = []
    for t in _tensors(value):
        t = t.detach().to("cpu")
        t = t.real if torch.is_complex(t) else t
        flat = t.to(torch.float64).reshape(-1, t.shape[-2], t.shape[-1])[0]
        cols.append(flat.numpy())
    return np.concatenate(cols, axis=1) if cols else np.zeros((LENGTH, 0))


def _first(output: Any) -> Any:
    return output[0] if isinstance(output, (tuple, list)) else output


def _inputs(model: Any) -> dict[str, Any]:
    import torch

    config = getattr(model, "config", None)
    vocab = int(getattr(config, "vocab_size", None) or 32)
    device = model.get_input_embeddings().weight.device
    ids = (torch.arange(LENGTH, device=device) % max(vocab - 3, 1) + 3)[None]
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = ids
    params = inspect.signature(model.forward).parameters
    if "use_cache" in params:
        inputs["use_cache"] = False
    return inputs


def _record(model: Any, modules: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``name -> (bound arguments, output)`` of each module's call in one forward pass."""
    import torch

    calls: dict[str, tuple[Any, Any]] = {}

    def hook(name: str, module: Any) -> Any:
        def record(mod: Any, args: Any, kwargs: Any, output: Any) -> None:
            if name not in calls:
                calls[name] = (inspect.signature(mod.forward).bind(*args, **kwargs), output)

        return module.register_forward_hook(record, with_kwargs=True)

    handles = [hook(name, m) for name, m in modules.items()]
    try:
        with torch.no_grad():
            model(**_inputs(model))
    finally:
        for h in handles:
            h.remove()
    return calls


def _rotates(module: Any, bound: Any, output: Any) -> bool | None:
    import torch

    pos = bound.arguments.get("position_embeddings")
    tensors = _tensors(pos)
    if not tensors or any(t.ndim < 2 or t.shape[-2] != LENGTH for t in tensors):
        return None
    first = _first(output)
    if not isinstance(first, torch.Tensor) or bool(torch.all(first == first.flatten()[0])):
        return None  # a constant output (a zero output projection) cannot tell
    bound.arguments["position_embeddings"] = _at_position_zero(pos)
    with torch.no_grad():
        again = module(*bound.args, **bound.kwargs)
    bound.arguments["position_embeddings"] = pos
    return not torch.equal(_first(again), _first(output))


def probe_rotation(model: Any) -> list[LayerCall] | None:
    """One :class:`LayerCall` per attention module that takes ``position_embeddings``, in call
    order; ``None`` when the model has none or its forward pass on token ids alone raises (the
    model's own error, not posgeom's: the caller falls back to the configuration)."""
    modules = _attention_modules(model)
    if not modules:
        return None
    was_training = bool(getattr(model, "training", False))
    model.eval()
    try:
        calls = _record(model, modules)
        out = []
        for name, (bound, output) in calls.items():
            cols = _columns(bound.arguments.get("position_embeddings"))
            rotates = _rotates(modules[name], bound, output)
            if rotates is not None:  # unknown (no position tensors): the config decides
                out.append(LayerCall(name, rotates, cols))
    except Exception:
        return None
    finally:
        model.train(was_training)
    return out or None


def uses_frequencies(call: LayerCall, inv_freq: np.ndarray, *, atol: float = 1e-5) -> bool:
    """Whether every ``cos(p w_k)``, ``p = 0 .. LENGTH - 1``, is a column of what the layer got
    (each column divided by its value at position 0: cosines scaled by an attention factor)."""
    if call.cos_columns.shape[1] == 0:
        return False
    expected = np.cos(np.outer(np.arange(LENGTH), np.asarray(inv_freq)))  # (LENGTH, K)
    cols = call.cos_columns
    scale = cols[0]  # cosines are scale * cos(p w): YaRN's and LongRoPE's attention factor
    keep = np.abs(scale) > 1e-6
    cols = cols[:, keep] / scale[keep]
    if cols.shape[1] == 0:
        return False
    close = np.abs(expected[:, :, None] - cols[:, None, :]).max(axis=0) <= atol  # (K, m)
    return bool(close.any(axis=1).all())
