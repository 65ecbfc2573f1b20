"""The layers each positional mechanism acts on, and the layers with none.

A model's blocks are the ``nn.ModuleList`` s whose length is one of the configuration's layer
counts (``num_hidden_layers``, ``n_layer``, ``num_layers``, ``encoder_layers``,
``decoder_layers``, ...; :func:`layer_stacks`); a mechanism's ``layers`` are 0-based indices
into its ``stack`` (the list's module path). Where they come from, first source first:

1. the module that holds the mechanism: a buffer inside block ``i`` acts on block ``i``
   (per-layer rotary modules); a shared one (``model.rotary_emb``) acts on every block of the
   stack nearest to it, as do the kinds computed once per stack (:data:`SCOPE`: T5's bias
   held by block 0, ALiBi, DeBERTa's relative table), unless several blocks hold one each
   (Granite Speech's per-block relative tables: each acts on its block);
2. per-layer-type set-ups (Gemma 3's ``sliding_attention`` / ``full_attention`` bases): the
   blocks whose attention received that set-up's cosines in a forward pass
   (:mod:`posgeom.models.rotation_probe`), else the configuration's ``layer_types``;
3. blocks that do not rotate, for a rotary mechanism: the forward probe (a block whose
   attention output is unchanged by the identity rotation: Cohere 2's global layers), else a
   ``use_rope`` attribute of the block's modules (SmolLM3, Llama 4), else the configuration's
   ``no_rope_layers`` (``0``: no rotation).

An input-level table (``learned``) has ``layers=None``. The blocks of a stack that no
per-layer mechanism covers get a mechanism of their own, ``kind="none"``, with those layers
(SmolLM3's NoPE layers); a model with only an input-level table gets no such entry (its
positions reach every block through the residual stream). Nothing is read from the model's name.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from posgeom.encodings import Mechanism, family
from posgeom.encodings._hf import text_config
from posgeom.models.rotation_probe import LayerCall, probe_rotation, uses_frequencies

__all__ = ["LAYER_COUNT_FIELDS", "assign_layers", "layer_stacks"]

#: configuration fields that count a model's blocks
LAYER_COUNT_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_layers",
    "num_decoder_layers",
    "encoder_layers",
    "decoder_layers",
    "conf_num_hidden_layers",  # Gemma 3n's audio conformer
)

#: where a mechanism kind acts: ``"input"`` (a table added before the first block: layers
#: ``None``), ``"stack"`` (computed once, used by every block of its stack: T5's bias lives in
#: block 0 and is passed on, ALiBi, DeBERTa's table); any other kind acts in the block that
#: holds it (or, held outside the blocks, in every block of the nearest stack)
SCOPE = {
    "learned": "input",
    "relative_buckets": "stack",
    "alibi": "stack",
    "relative_embeddings": "stack",
    "conv_positions": "input",
}


def _counts(config: Any) -> set[int]:
    """The configuration's layer counts, with the blocks of each stage of a hierarchical
    model (Swin's ``depths``)."""
    out = set()
    for cfg in {id(config): config, id(text_config(config)): text_config(config)}.values():
        for name in LAYER_COUNT_FIELDS:
            value = getattr(cfg, name, None)
            if isinstance(value, int) and value > 0:
                out.add(value)
        depths = getattr(cfg, "depths", None)
        if isinstance(depths, (list, tuple)):
            out.update(v for v in depths if isinstance(v, int) and v > 0)
    return out


def layer_stacks(model: Any) -> dict[str, int]:
    """``module path -> number of blocks`` of the model's block lists (outermost lists whose
    length is one of the configuration's layer counts)."""
    import torch

    counts = _counts(getattr(model, "config", None))
    lists = {
        name: len(m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and len(m) in counts and name
    }
    return {
        name: n
        for name, n in lists.items()
        if not any(name.startswith(f"{other}.") for other in lists if other != name)
    }


def _block_of(name: str, stacks: dict[str, int]) -> tuple[str, int] | None:
    for stack in stacks:
        head = f"{stack}."
        if name.startswith(head):
            index = name[len(head) :].split(".", 1)[0]
            if index.isdigit():
                return stack, int(index)
    return None


def _common(a: str, b: str) -> int:
    """How many leading module-path components ``a`` and ``b`` share."""
    pairs = zip(a.split("."), b.split("."), strict=False)
    return len(list(itertools.takewhile(lambda pair: pair[0] == pair[1], pairs)))


def _nearest_stacks(source: str, stacks: dict[str, int]) -> list[str]:
    """The stacks sharing the longest module-path prefix with ``source``'s owner."""
    owner = source.rsplit(".", 1)[0] if "." in source else ""
    best = max(_common(owner, s) for s in stacks)
    return [s for s in stacks if _common(owner, s) == best]


def _module_flags(model: Any, stack: str, n: int, attr: str) -> dict[int, bool]:
    """``block -> bool(attr)`` for the blocks with a module setting ``attr`` (``use_rope``)."""
    flags: dict[int, bool] = {}
    for name, module in model.get_submodule(stack).named_modules():
        value = getattr(module, attr, None)
        index = name.split(".", 1)[0]
        if isinstance(value, (bool, int)) and index.isdigit() and int(index) < n:
            flags.setdefault(int(index), bool(value))
    return flags


def _config_flags(config: Any, n: int) -> dict[int, bool]:
    flags = getattr(text_config(config), "no_rope_layers", None)  # 1: rotates, 0: NoPE
    if isinstance(flags, (list, tuple)) and len(flags) == n:
        return {i: bool(v) for i, v in enumerate(flags)}
    return {}


def _rotary_layers(
    mech: Mechanism, model: Any, stack: str, layers: list[int], probe: dict[int, LayerCall]
) -> tuple[list[int], str]:
    """The ``layers`` of ``stack`` where ``mech`` really rotates, and what said so."""
    config = getattr(model, "config", None)
    n = len(model.get_submodule(stack))
    layer_type = getattr(mech.params, "layer_type", None)
    if probe and all(i in probe for i in layers):
        used = [
            i
            for i in layers
            if probe[i].rotates and uses_frequencies(probe[i], mech.params.inv_freq)
        ]
        return used, "forward probe"
    text = stack in _text_stacks(model)  # the (text) configuration's lists are its stack's
    types = getattr(text_config(config), "layer_types", None) if text and layer_type else None
    if isinstance(types, (list, tuple)) and len(types) == n and layer_type in types:
        layers = [i for i in layers if types[i] == layer_type]
    flags = _module_flags(model, stack, n, "use_rope") or (_config_flags(config, n) if text else {})
    return [i for i in layers if flags.get(i, True)], "configuration"


def _text_stacks(model: Any) -> list[str]:
    """The stacks nearest the input embeddings (a multimodal model's language stack)."""
    stacks = layer_stacks(model)
    get = getattr(model, "get_input_embeddings", None)
    try:
        embeddings = get() if callable(get) else None
    except (AttributeError, NotImplementedError):
        embeddings = None
    name = next((n for n, m in model.named_modules() if m is embeddings), None)
    return list(stacks) if name is None or not stacks else _nearest_stacks(name + ".x", stacks)


def _probe_by_block(model: Any, stacks: dict[str, int], kinds: set[str]) -> dict[str, dict]:
    if "rotary" not in kinds:
        return {}
    calls = probe_rotation(model) or []
    out: dict[str, dict[int, LayerCall]] = {}
    for call in calls:
        where = _block_of(call.name, stacks)
        if where is not None:
            out.setdefault(where[0], {}).setdefault(where[1], call)
    return out


def _per_block(found: Sequence[Mechanism], stacks: dict[str, int]) -> set[tuple[str, str]]:
    """``(kind, stack)`` of the kinds held by more than one block of a stack: each block's own
    table (Granite Speech), not one computed in block 0 and passed on (T5, WavLM)."""
    held: dict[tuple[str, str], set[int]] = {}
    for mech in found:
        where = _block_of(mech.source, stacks)
        if where is not None:
            held.setdefault((mech.kind, where[0]), set()).add(where[1])
    return {key for key, blocks in held.items() if len(blocks) > 1}


def _placed(
    mech: Mechanism, model: Any, stacks: dict[str, int], probe: dict, per_block: set
) -> list[Mechanism]:
    """``mech`` with its stack and layers (one copy per stack it acts on)."""
    scope = getattr(mech.params, "scope", None) or SCOPE.get(mech.kind, "block")
    block = _block_of(mech.source, stacks)
    if block is not None and (mech.kind, block[0]) in per_block:
        scope = "block"
    if scope == "input" or not stacks:
        return [mech]
    block = block if scope == "block" else None
    targets = (
        [(block[0], [block[1]])]
        if block
        else [(s, list(range(stacks[s]))) for s in _nearest_stacks(mech.source, stacks)]
    )
    out = []
    for stack, layers in targets:
        if mech.kind == "rotary":
            layers, _ = _rotary_layers(mech, model, stack, layers, probe.get(stack, {}))
        out.append(dataclasses.replace(mech, layers=tuple(layers), stack=stack))
    return out


def _one_setup_per_layer(placed: list[Mechanism]) -> list[Mechanism]:
    """A block claimed by two per-layer-type rotary set-ups of one stack keeps the one with
    more planes: the forward probe finds every cosine of a set-up among what the block got, so
    a set-up whose frequencies are a subset of the other's (NeoMME's full-attention base,
    ``w = (1, 0.001)``, inside its window base's eight) matches the other's blocks too."""
    claims: dict[tuple[str | None, int], list[int]] = {}
    for k, mech in enumerate(placed):
        if mech.kind == "rotary" and getattr(mech.params, "layer_type", None) and mech.layers:
            for i in mech.layers:
                claims.setdefault((mech.stack, i), []).append(k)
    drop: dict[int, set[int]] = {}
    for (_, layer), owners in claims.items():
        if len(owners) > 1:
            widest = max(len(placed[k].params.inv_freq) for k in owners)
            for k in owners:
                if len(placed[k].params.inv_freq) < widest:
                    drop.setdefault(k, set()).add(layer)
    return [
        dataclasses.replace(m, layers=tuple(i for i in m.layers if i not in drop[k]))
        if k in drop
        else m
        for k, m in enumerate(placed)
    ]


def _same(a: Mechanism, b: Mechanism) -> bool:
    """The same kind in the same stack with equal parameters (tables compared by value: each
    block's own learned bias is its own entry)."""
    if a.kind != b.kind or a.stack != b.stack or a.layers is None or b.layers is None:
        return False
    fa, fb = vars(a.params), vars(b.params)
    return fa.keys() == fb.keys() and all(_equal(fa[k], fb[k]) for k in fa)


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.array_equal(np.asarray(x), np.asarray(y))
    return bool(x == y)


def _merge(found: list[Mechanism]) -> list[Mechanism]:
    """Identical mechanisms of one stack (a rotary module per block) as one, layers united."""
    out: list[Mechanism] = []
    for mech in found:
        twin = next((i for i, m in enumerate(out) if _same(m, mech)), None)
        if twin is None:
            out.append(mech)
        else:
            layers = tuple(sorted({*out[twin].layers, *mech.layers}))
            out[twin] = dataclasses.replace(out[twin], layers=layers)
    return out


def _none_entries(found: list[Mechanism], stacks: dict[str, int]) -> list[Mechanism]:
    nope = family("nope").none_mechanism()
    entries = []
    for stack, n in stacks.items():
        mine = [m for m in found if m.stack == stack and m.kind != "none"]
        if not mine and any(m.layers is None for m in found):
            continue  # an input-level table reaches every block
        covered = {i for m in mine for i in m.layers or ()}
        rest = tuple(i for i in range(n) if i not in covered)
        if rest:
            source = "blocks with no positional mechanism"
            entries.append(dataclasses.replace(nope, source=source, layers=rest, stack=stack))
    return entries


def assign_layers(model: Any, found: Sequence[Mechanism]) -> list[Mechanism]:
    """Every mechanism of ``found`` with its ``stack`` and ``layers`` (see the module
    docstring), then one ``kind="none"`` entry per stack for the blocks no mechanism covers.
    A rotary mechanism that acts on no block at all is dropped (an unused module)."""
    found = [m for m in found if m.kind != "none"]
    stacks = layer_stacks(model)
    probe = _probe_by_block(model, stacks, {m.kind for m in found})
    per_block = _per_block(found, stacks)
    placed = _one_setup_per_layer(
        [p for m in found for p in _placed(m, model, stacks, probe, per_block)]
    )
    placed = _merge([m for m in placed if m.layers is None or m.layers or m.kind != "rotary"])
    return placed + _none_entries(placed, stacks)
