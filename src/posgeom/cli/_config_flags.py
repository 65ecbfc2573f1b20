"""The pipeline's flags, derived from :class:`~posgeom.pipeline.config.GeometryConfig`.

Every field of the config that a word or a number can give (:func:`cli_fields`) is one flag of
``geometry``, ``run``, ``demo`` and ``compare``, with nothing restated here:

- the flag: ``--`` + the field name with dashes for underscores; a field whose default is
  ``True`` is switched off by its negation (``--no-refine``); older spellings: :data:`SPELLINGS`;
- its default: the field's (a command may set its own, as ``demo``'s ``--estimator plugin``);
- its values: a field's ``Options`` as ``choices``, the default first; ``none`` is None where
  the field allows None; else the numbers of its annotation and ``Interval`` constraints (tried
  first) and, when it takes text, the word; a ``tuple`` field takes a comma-separated list;
- its help and argument group: the field's metadata (``help``, ``group``).

:func:`config_from_args` reads the flags back into one config, whose own constraints refuse a
value out of range before any work.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REGISTRIES",
    "SPELLINGS",
    "add_config_arguments",
    "cli_fields",
    "config_class",
    "config_from_args",
    "flag_of",
]

#: spellings older than the config (its fields' names are the long flags' names otherwise)
SPELLINGS: dict[str, tuple[str, ...]] = {
    "model_dim": ("-d", "--model-dim"),
    "n_components": ("-r", "--components"),
    "families": ("--encodings",),
    "learned_model": ("--model",),
}
_NONE = "none"  # how a field's None is written on the command line
#: fields whose values a registry holds: their help lists the names registered when the parser
#: is built (an estimator or a family added in one file is offered at once)
REGISTRIES: dict[str, tuple[str, str]] = {
    "estimator": ("posgeom.estimators", "available"),
    "families": ("posgeom.encodings.comparison", "comparable_encodings"),
}


def _help(f: dataclasses.Field[Any]) -> str:
    """The field's help, with the names its registry holds now (:data:`REGISTRIES`)."""
    import importlib

    text = str(f.metadata.get("help", ""))
    if f.name in REGISTRIES:
        module, function = REGISTRIES[f.name]
        names = getattr(importlib.import_module(module), function)()
        text += f" (registered: {', '.join(names)})"
    return text


def config_class() -> type:
    """The pipeline's config class, read when a parser is built (one home: the pipeline)."""
    from posgeom.pipeline import config

    return config.GeometryConfig


def _annotation(cls: type, f: dataclasses.Field[Any]) -> tuple[Any, ...]:
    """The members of the field's annotation (``int | None`` -> ``(int, NoneType)``)."""
    hint = typing.get_type_hints(cls)[f.name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _is_text_free(cls: type, f: dataclasses.Field[Any]) -> bool:
    """Whether the field takes a mapping (no one-word value: it has no flag)."""
    members = [typing.get_origin(m) or m for m in _annotation(cls, f)]
    return any(isinstance(m, type) and issubclass(m, Mapping) for m in members)


def cli_fields(cls: type | None = None) -> tuple[dataclasses.Field[Any], ...]:
    """The config fields that are flags: every field a word or a number can give (a mapping
    such as ``estimator_options`` is the library's only)."""
    cls = config_class() if cls is None else cls
    return tuple(f for f in dataclasses.fields(cls) if f.init and not _is_text_free(cls, f))


def _kinds(cls: type, f: dataclasses.Field[Any]) -> tuple[list[type], bool, bool]:
    """(the numbers the field takes, in order; whether it takes text; whether it may be None)."""
    from numbers import Integral

    from posgeom._validation import Interval, Options

    members = _annotation(cls, f)
    allowed = tuple(f.metadata.get("allowed", ()))
    numbers = {k for k in (int, float) if k in members}
    numbers |= {int if c.kind is Integral else float for c in allowed if isinstance(c, Interval)}
    text = bool({str, Any} & set(members)) or any(isinstance(c, Options) for c in allowed)
    may_be_none = type(None) in members or None in allowed or f.default is None
    return sorted(numbers, key=(int, float).index), text or not numbers, may_be_none


def _choices(f: dataclasses.Field[Any], may_be_none: bool) -> tuple[Any, ...] | None:
    """The field's values when it allows only a fixed set (its ``Options``, the default
    first; None last when allowed); None when it takes other values too."""
    from posgeom._validation import Options

    allowed = [c for c in f.metadata.get("allowed", ()) if c is not None]
    if not allowed or not all(isinstance(c, Options) for c in allowed):
        return None
    values = sorted({v for c in allowed for v in c.values}, key=lambda v: (v != f.default, str(v)))
    return (*values, None) if may_be_none else tuple(values)


def _parser(numbers: list[type], text: bool, may_be_none: bool, listed: bool) -> Any:
    """The text -> value function of a flag: ``none`` -> None (when allowed); a comma-separated
    list -> a tuple; else the numbers the field takes, tried in order, then the text itself."""

    def parse(value: str) -> Any:
        if may_be_none and value == _NONE:
            return None
        if listed:
            return tuple(x.strip() for x in value.split(","))  # an empty item: refused later
        for kind in numbers:
            try:
                return kind(value)
            except ValueError:
                continue
        if text:
            return value
        raise ValueError(value)

    kinds = [k.__name__ for k in numbers] + (["text"] if text else [])
    parse.__name__ = " or ".join(kinds)  # argparse's message: "invalid int value: 'x'"
    parse.numbers = tuple(numbers)  # type: ignore[attr-defined]  # what a range sweep may try
    return parse


def flag_of(f: dataclasses.Field[Any]) -> tuple[str, ...]:
    """The flag spellings of the config field ``f``: its negation for a switch that is on by
    default, the old spelling of :data:`SPELLINGS`, else ``--<name>`` with dashes."""
    if f.default is True:
        return ("--" + "-".join(["no", *f.name.split("_")]),)
    return SPELLINGS.get(f.name, ("--" + f.name.replace("_", "-"),))


def add_config_arguments(
    parser: argparse.ArgumentParser, *, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Add one flag per config field (:func:`cli_fields`) to ``parser``, in an argument group per
    field group; ``defaults``: this command's own defaults. Returns the groups by name."""
    cls = config_class()
    groups: dict[str, Any] = {}
    for f in cli_fields(cls):
        name = str(f.metadata.get("group", "pipeline"))
        g = groups.get(name) or groups.setdefault(name, parser.add_argument_group(name))
        kw: dict[str, Any] = {
            "dest": f.name,
            "default": (defaults or {}).get(f.name, f.default),
            "help": _help(f),
        }
        if isinstance(f.default, bool):
            kw["action"] = "store_false" if f.default else "store_true"
            if f.default:  # the flag switches it off
                kw["help"] = f"do not: {kw['help']} (done by default)"
            g.add_argument(*flag_of(f), **kw)
            continue
        numbers, text, may_be_none = _kinds(cls, f)
        listed = typing.get_origin(_annotation(cls, f)[0]) is tuple
        kw["type"] = _parser(numbers, text, may_be_none, listed)
        choices = _choices(f, may_be_none)
        if choices is not None:
            kw["choices"] = choices
            kw["metavar"] = "{" + ",".join(_NONE if c is None else str(c) for c in choices) + "}"
        elif text or listed:
            kw["metavar"] = "NAMES" if listed else f.name.split("_")[-1].upper()
        if listed:
            kw["help"] += " (comma-separated)"
        g.add_argument(*flag_of(f), **kw)
    return groups


def config_from_args(args: argparse.Namespace, **given: Any) -> Any:
    """The config of the parsed flags (``given``: fields the command decides itself); a value out
    of range raises the config's :class:`~posgeom.PosgeomError`."""
    cls = config_class()
    values = {f.name: getattr(args, f.name) for f in cli_fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **given})
