"""Context-extension strategies: what each family can do past its trained length ``L0``.

A :class:`Strategy` (:mod:`posgeom.encodings._extension`) is a name, its family, its kind and, for
RoPE, the ``rope_parameters`` to paste into ``config.json``. Each family lists its own
(:meth:`~posgeom.encodings._extension.Extension.strategies`): RoPE ``none``, ``linear``, static
``ntk``, ``dynamic``, ``yarn``, ``llama3``, ``longrope`` (``fitted`` is added by
:func:`posgeom.extension.score_strategies`, which has the corpus); learned tables ``clamp``,
``interpolate``, ``gower``, ``gower-table``; every other family ``none``. The strategies a caller
gives are read and checked here (:func:`strategy_from_parameters`, :func:`given_strategies`,
:func:`choose_strategies`); :func:`usable_strategies` drops the Gower extension without the
per-position geometry it needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import extension_of
from posgeom.encodings._extension import Strategy
from posgeom.extension.model import ExtensionModel

__all__ = [
    "MAX_STRATEGIES",
    "choose_strategies",
    "enumerate_strategies",
    "given_strategies",
    "strategy_from_parameters",
    "usable_strategies",
]

#: the most strategies a caller may give (each is scored by a fit of the corpus geometry; the
#: enumerated ones of a family are a few dozen)
MAX_STRATEGIES = 1000


def enumerate_strategies(
    model: ExtensionModel, trained_length: int, target_length: int
) -> list[Strategy]:
    """Every strategy the model's family lists at ``(L0, L)`` (``fitted`` excluded: it needs the
    corpus, :func:`posgeom.extension.score_strategies` adds it)."""
    l0, target = int(trained_length), int(target_length)
    if not 1 < l0 < target:
        raise PosgeomError(
            f"the target length ({target}) must exceed the trained length ({l0}); pass "
            "--target-length above --trained-length"
        )
    return extension_of(model.family).strategies(model.params, l0, target)


def strategy_from_parameters(name: str, rope_parameters: Mapping[str, Any]) -> Strategy:
    """A RoPE strategy from a ``rope_parameters`` dict as transformers 5 spells it."""
    from posgeom.encodings.rope_types import rope_type_of

    if not isinstance(rope_parameters, Mapping):
        raise PosgeomError(
            f"strategy {name!r} is a {type(rope_parameters).__name__}, not a rope_parameters "
            'object; give {"name": {"rope_type": ..., "rope_theta": ...}, ...}'
        )
    params = dict(rope_parameters)
    if params.get("rope_theta") is None:
        raise PosgeomError(
            f"rope_parameters of {name!r} lack rope_theta (transformers would reset it to "
            "10000); include it"
        )
    return Strategy(name, "rope", rope_type_of(params), params, "given rope_parameters")


def given_strategies(strategies: Any) -> list[Strategy]:
    """The strategies a caller gives (``{name: rope_parameters}`` or a list of strategies or
    ``rope_parameters``), checked: at least one and at most :data:`MAX_STRATEGIES`, each name
    once; one-line refusals."""
    if isinstance(strategies, (Mapping, Sequence)) and len(strategies) > MAX_STRATEGIES:
        raise PosgeomError(
            f"strategies must be at most {MAX_STRATEGIES} (each is scored by a fit of the "
            f"corpus geometry), got {len(strategies)}; give fewer"
        )
    if isinstance(strategies, Mapping):
        items = [strategy_from_parameters(str(k), v) for k, v in strategies.items()]
    elif isinstance(strategies, (str, bytes)) or not isinstance(strategies, Sequence):
        raise PosgeomError(
            f"strategies must map names to rope_parameters, not a {type(strategies).__name__}"
        )
    else:
        items = [
            s if isinstance(s, Strategy) else strategy_from_parameters(f"given {i}", s)
            for i, s in enumerate(strategies)
        ]
    names = [s.name for s in items]
    if not items or len(set(names)) != len(names):
        raise PosgeomError("give at least one strategy, each name once")
    return items


def choose_strategies(model: ExtensionModel, strategies: Any, target: int) -> list[Strategy]:
    if strategies is None:
        return enumerate_strategies(model, model.trained_length, target)
    items = given_strategies(strategies)
    foreign = sorted({s.family for s in items if s.family != model.family})
    if foreign == ["rope"]:
        raise PosgeomError(f"rope_parameters do not apply to a {model.family} model")
    if foreign:
        raise PosgeomError(
            f"strategies of {', '.join(foreign)} do not apply to a {model.family} model"
        )
    return items


def usable_strategies(
    chosen: list[Strategy], positions: Any, target: int
) -> tuple[list[Strategy], list]:
    """Drop the Gower extension when there is no unpooled per-position geometry of ``L`` rows."""
    d = None if positions is None else np.asarray(getattr(positions, "distances", positions))
    if d is not None and d.shape == (target, target) and not getattr(positions, "pooled", False):
        return chosen, []
    keep = [s for s in chosen if s.kind != "gower"]
    if len(keep) == len(chosen):
        return chosen, []
    if not keep:
        raise PosgeomError(
            "the Gower extension needs the corpus's per-position geometry at all L positions "
            "(position_distances, an (L, L) matrix); give it or choose clamp / interpolate"
        )
    return keep, [
        "gower left out: it needs the corpus's per-position geometry over all L target "
        "positions (documents with a start at least L tokens long)"
    ]
