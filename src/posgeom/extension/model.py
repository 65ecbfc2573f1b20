"""The model being extended, as posgeom needs it: its positional family, the family's parameters
and the trained length.

:class:`ExtensionModel` is ``(family, params, trained_length)``; the family's extension side
(:class:`~posgeom.encodings._extension.Extension`) owns what ``params`` hold (RoPE: ``head_dim``
and ``rope_parameters``; a learned table: ``table``; ALiBi: ``slopes``; ...), checks them, and
reads them from a family spec (:func:`parse_family_spec`), a Hugging Face configuration or a
model's detected mechanisms (:func:`model_from_config`) or a posgeom decoder.

Family specs: ``name[:key=value,...]`` with the keys of the family's ``spec_keys`` (e.g.
``rope:theta=10000,head_dim=64``, ``alibi:heads=12``, ``nope``); every spec takes
``max_position_embeddings`` (the trained length). :func:`spec_families` lists the families that
have one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import check_int, check_param
from posgeom.encodings import extension_of, families, family, family_of_mechanism
from posgeom.encodings._extension import SPEC_LENGTH, Extension
from posgeom.encodings._hf import text_config

__all__ = [
    "ExtensionModel",
    "config_model",
    "is_family_spec",
    "model_from_config",
    "parse_family_spec",
    "spec_families",
]


@dataclass(frozen=True, eq=False)
class ExtensionModel:
    """A positional family, its parameters (checked and normalised by the family) and the length
    it was trained at (``None``: unknown, give ``trained_length``); ``source``:
    ``"transformers"`` or ``"posgeom decoder"`` (which record scope applies).

    The parameters are also readable as attributes (``model.head_dim``, ``model.table``)."""

    family: str
    name: str
    trained_length: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    source: str = "transformers"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "params", extension_of(self.family).check_extension_params(self.params)
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "params":
            raise AttributeError(name)
        try:
            return self.params[name]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__} of family {self.family!r} has no parameter {name!r}"
            ) from None

    def with_trained_length(self, length: int | None) -> ExtensionModel:
        if length is None:
            return self
        return dataclasses.replace(self, trained_length=check_int(length, "trained_length", 1))

    def summary(self) -> dict[str, Any]:
        """``family``, ``name``, ``trained_length`` and the family's summary of its parameters."""
        return {
            "family": self.family,
            "name": self.name,
            "trained_length": self.trained_length,
            **extension_of(self.family).extension_summary(self.params),
        }


def spec_families() -> dict[str, Extension]:
    """The extensions of the families a spec can name (those with ``spec_keys``) by family
    name, in registry order."""
    exts = {name: fam.extension for name, fam in families().items()}
    return {name: ext for name, ext in exts.items() if ext.spec_keys is not None}


def is_family_spec(text: str) -> bool:
    """Whether ``text`` reads as a family spec (``family`` or ``family:key=value,...``)."""
    return str(text).partition(":")[0] in spec_families()


def _number(key: str, value: str) -> float | int:
    try:
        return int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise PosgeomError(f"family spec: {key}={value!r} is not a number") from None


def parse_family_spec(spec: str) -> ExtensionModel:
    """An :class:`ExtensionModel` from ``family:key=value,...`` (module docstring)."""
    name, _, rest = str(spec).partition(":")
    opts: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise PosgeomError(f"family spec {spec!r}: {item!r} is not key=value")
        opts[key.strip()] = _number(key.strip(), value.strip())
    length = opts.pop("max_position_embeddings", None)
    allowed = spec_families()
    if name not in allowed:
        examples = ", ".join(f.spec_example or n for n, f in allowed.items())
        raise PosgeomError(
            f"unknown family spec {spec!r}; use one of {examples} (learned tables come from a "
            "model)"
        )
    keys = allowed[name].spec_keys
    extra = set(opts) - set(keys)
    if extra:
        takes = ", ".join(sorted({*keys, "max_position_embeddings"}))
        raise PosgeomError(
            f"family spec {spec!r}: unknown key(s) {', '.join(sorted(extra))}; {name} takes {takes}"
        )
    where = f"family spec {spec!r}"
    for key, value in opts.items():
        check_param(key, value, [keys[key]], where=where)
    if length is not None:
        check_param("max_position_embeddings", length, [SPEC_LENGTH], where=where)
    return ExtensionModel(name, spec, length, allowed[name].extension_params(opts))


def config_model(config: Any, *, model: Any = None, name: str = "model") -> ExtensionModel | None:
    """The :class:`ExtensionModel` a family reads from a transformers configuration alone
    (``extension_from_config``: RoPE's parameters; with ``model``, checked against its
    modules), or ``None``: the family is in the weights."""
    for cfg in _text_first_configs(config):
        length = getattr(cfg, "max_position_embeddings", None)
        for fam in families().values():
            params = fam.extension.extension_from_config(cfg, model)
            if params is not None:
                return ExtensionModel(fam.name, name, length, params)
    return None


def _text_first_configs(config: Any) -> list[Any]:
    """``config`` and, for a model of several towers, its text model's configuration
    (``get_text_config()``: the context a longer input reaches is the text decoder's)."""
    text = text_config(config)
    return [config] if text is None or text is config else [config, text]


def _text_path(model: Any) -> str | None:
    """The first component of the token embedding's module path (``language_model`` of a
    vision-language model, ``text_model`` of a dual encoder; ``""`` for a top-level one), or
    ``None`` when the model names none."""
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        embeddings = None
    if embeddings is None:
        text = _text_first_configs(getattr(model, "config", None))[-1]
        rows = getattr(text, "vocab_size", None)
        found = [
            name
            for name, module in model.named_modules()
            if getattr(module, "num_embeddings", None) == rows
        ]
        return found[0].split(".")[0] if found else None
    for name, module in model.named_modules():
        if module is embeddings:
            return name.split(".")[0] if "." in name else ""
    return None


def _on_text_path(mech: Any, path: str | None) -> bool:
    where = mech.stack or mech.source
    return path is None or path == "" or str(where).split(".")[0] == path


def _long_range_first(found: Any, model: Any = None) -> list[Any]:
    """Mechanisms of the text path first (a vision-language model's language model before its
    vision tower's patch table: :func:`_text_path`), then the ones of full-attention layers
    (Gemma 3's global base before its sliding-window base: the layers a longer context
    reaches)."""
    from posgeom.encodings.rope_layer_types import LOCAL_LAYER_TYPES

    path = None if model is None else _text_path(model)
    return sorted(
        found,
        key=lambda m: (
            not _on_text_path(m, path),
            str(getattr(m.params, "layer_type", "") or "").startswith(LOCAL_LAYER_TYPES),
        ),
    )


def _with_layers(ext: ExtensionModel, model: Any) -> ExtensionModel:
    """``ext`` with the blocks its mechanism acts on (the model's per-layer map), when the family
    keeps them (RoPE: ``layers``, the blocks that rotate; NoPE blocks are left alone)."""
    from posgeom.models.mechanisms import find_positional_mechanisms

    found = find_positional_mechanisms(model, on_missing="none")
    kind = family(ext.family).mechanism_kind
    layers = sorted({i for m in found if m.kind == kind for i in (m.layers or ())})
    if not layers or "layers" not in extension_of(ext.family).extension_summary(
        {**ext.params, "layers": layers}
    ):
        return ext
    return dataclasses.replace(ext, params={**ext.params, "layers": layers})


def model_from_config(config: Any, *, model: Any = None, name: str = "model") -> ExtensionModel:
    """The positional family of a transformers configuration (:func:`config_model`) or, with
    the ``model``, of its weights (the first detected mechanism whose family reads it: learned
    tables, ALiBi slopes, T5 biases; no mechanism: NoPE)."""
    found_in_config = config_model(config, model=model, name=name)
    if found_in_config is not None:
        return found_in_config if model is None else _with_layers(found_in_config, model)
    length = getattr(config, "max_position_embeddings", None)
    if model is None:
        raise PosgeomError(
            f"the configuration of {name} names no rotary parameters; pass the model itself "
            "(learned tables, ALiBi and T5 are read from its weights) or a family spec"
        )
    from posgeom.models.mechanisms import find_positional_mechanisms

    found = _long_range_first(find_positional_mechanisms(model, on_missing="none"), model)
    for mech in found:
        fam = family_of_mechanism(mech.kind)
        params = fam.extension.extension_from_mechanism(mech)
        if params is not None:
            trained = length or fam.extension.default_trained_length(params)
            return ExtensionModel(fam.name, name, trained, params)
    kinds = ", ".join(m.kind for m in found) or "none"
    raise PosgeomError(
        f"extend cannot read the positional family of {name} (found: {kinds}); pass a family "
        "spec such as rope:theta=10000,head_dim=64"
    )
