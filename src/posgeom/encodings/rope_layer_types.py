"""Rotary set-ups given per layer type (Gemma 3's ``rope_parameters`` ``{"full_attention":
{...}, "sliding_attention": {...}}``): which of them a context extension scales.

A longer context reaches the layers whose attention is not a local window, so a strategy
replaces the set-up of the long-range layer types only (``full_attention``); the types whose
name starts with one of :data:`LOCAL_LAYER_TYPES` (``sliding_attention``,
``chunked_attention``) keep their own. A model with one set-up for every layer gets the
strategy's parameters whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from posgeom.encodings._extension import Strategy

__all__ = [
    "LOCAL_LAYER_TYPES",
    "scaled_layer_types",
    "strategy_rope_parameters",
]

#: prefixes of the layer types whose attention is local (a window): not what a longer context reaches
LOCAL_LAYER_TYPES = ("sliding", "chunked")


def scaled_layer_types(current: Any) -> list[str] | None:
    """The layer types whose set-up a strategy replaces in ``rope_parameters`` given per layer
    type (a non-empty mapping of mappings): the long-range ones (not ``sliding*`` /
    ``chunked*``), every type when all are local; ``None`` for one set-up shared by every
    layer (replaced whole)."""
    if not (
        isinstance(current, Mapping)
        and current
        and all(isinstance(v, Mapping) for v in current.values())
    ):
        return None
    return [t for t in current if not str(t).startswith(LOCAL_LAYER_TYPES)] or list(current)


def strategy_rope_parameters(current: Any, strategy: Strategy) -> dict[str, Any]:
    """The ``rope_parameters`` a model whose own are ``current`` gets for ``strategy``: the
    strategy's, or for per-layer-type ones the same mapping with only
    :func:`scaled_layer_types` replaced (the sliding-window types keep their own)."""
    new = dict(strategy.rope_parameters or {})
    targets = scaled_layer_types(current)
    if targets is None:
        return new
    return {t: dict(new) if t in targets else dict(p) for t, p in current.items()}
