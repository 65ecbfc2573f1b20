"""The extension side of a family: what ``posgeom extend`` and the posgeom decoder ask of it.

Every :class:`~posgeom.encodings._registry.Family` holds ``family.extension``, an instance of its
``extension_type`` made with the family's name. Every default of :class:`Extension` means "no
extension": no ``extend`` spec, the one strategy ``none`` (run as trained), no lag kernel
(``extend`` refuses to score it, one line), nothing to apply but ``none``, no decoder module. A
family usable by ``extend`` subclasses it in its own file (e.g. ``ALiBiExtension`` in
``alibi.py``) and overrides the spec grammar (:attr:`Extension.spec_keys`,
:meth:`Extension.extension_params`; ``max_position_embeddings``, the trained length, is every
family's), where else parameters come from (``extension_from_config``,
``extension_from_mechanism``, ``extension_from_decoder``), its :meth:`Extension.strategies` at
``(L0, L)``, its lag kernel (:meth:`Extension.lag_vectors`, asked for by
:mod:`posgeom.lags.kernels`), how a strategy reaches a model (``can_apply``,
``apply_to_transformers``, ``decoder_strategy_module``) and the decoder's position module
(``decoder_module``).

``encodings`` sits below ``lags``, ``nn`` and ``extension`` (``tests/project/test_layers.py``):
torch modules are named by import path (:meth:`Extension.torch_object`), never imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval

__all__ = [
    "SPEC_LENGTH",
    "Extension",
    "ExtensionContext",
    "Strategy",
    "check_lags",
    "has_decoder_module",
    "jsonable_parameters",
    "refusing_extension",
]

#: the range of ``max_position_embeddings`` in every family spec (the trained length ``L0``)
SPEC_LENGTH = Interval(Integral, 1, None)


def check_lags(lags: Any) -> np.ndarray:
    """``lags`` as a non-empty 1-D int64 array of non-negative integers, or one line."""
    arr = np.asarray(lags)
    if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0:
        raise PosgeomError(f"lags must be a 1-D array of non-negative integers, got {lags!r}")
    return arr.astype(np.int64)


def jsonable_parameters(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with arrays, tuples and numpy scalars as JSON values (lists, floats)."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, (list, tuple)):
            v = [float(x) for x in v]
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


@dataclass(frozen=True, eq=False)
class Strategy:
    """One extension strategy: ``name`` (unique in a run), ``family`` (the registry name of the
    family it belongs to), ``kind`` (``"none"``: the model as trained; the family's own kinds,
    e.g. ``linear``, ``yarn``, ``clamp``), ``rope_parameters`` (RoPE only: what goes into a
    transformers ``config.json``, transformers 5 spelling), ``description`` and ``options``
    (any other parameters of the family's kind)."""

    name: str
    family: str
    kind: str
    rope_parameters: Mapping[str, Any] | None = None
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def frequencies(
        self, model: Any, seq_len: int, trained_length: int
    ) -> tuple[np.ndarray, float]:
        """``(inv_freq (F,), attention_factor)`` at ``seq_len`` of a RoPE strategy on ``model``
        (an ``ExtensionModel`` or RoPE parameters with ``head_dim``), by the one implementation of
        the rope types (:func:`posgeom.encodings.rope_types.rope_frequencies`, ``context = L0``)."""
        from posgeom.encodings.rope_types import rope_frequencies, rope_type_of

        if self.rope_parameters is None:
            raise PosgeomError(f"strategy {self.name!r} has no rope parameters")
        head_dim = model["head_dim"] if isinstance(model, Mapping) else model.params["head_dim"]
        p = dict(self.rope_parameters)
        return rope_frequencies(
            rope_type_of(p),
            int(head_dim),
            float(p["rope_theta"]),
            p,
            seq_len=int(seq_len),
            context=int(trained_length),
        )

    def config_changes(self, trained_length: int, target_length: int) -> dict[str, Any]:
        """The ``config.json`` keys to set besides ``rope_parameters``: ``max_position_embeddings
        = L`` (transformers expects ``original_max_position_embeddings < max_position_embeddings``),
        except for dynamic NTK, which reads ``max_position_embeddings`` as the trained length."""
        if self.rope_parameters is None:
            return {}
        dynamic = self.rope_parameters.get("rope_type") == "dynamic"
        return {"max_position_embeddings": int(trained_length if dynamic else target_length)}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "family": self.family, "kind": self.kind}
        if self.rope_parameters is not None:
            out["rope_parameters"] = jsonable_parameters(self.rope_parameters)
        if self.options:
            out["options"] = jsonable_parameters(self.options)
        out["description"] = self.description
        return out


@dataclass(frozen=True)
class ExtensionContext:
    """Where a strategy runs: ``trained_length`` ``L0``, ``target_length`` ``L`` and, when known,
    ``position_distances``, the corpus's ``(L, L)`` per-position geometry (or an estimate of it;
    the Gower extension of a learned table needs it)."""

    trained_length: int
    target_length: int
    position_distances: Any = None


class Extension:
    """The extension protocol of a family (module docstring); every default is "no extension".

    ``spec_keys``: ``key -> Interval`` of its ``extend`` spec (``None``: no spec, e.g. learned
    tables, which come from a model); ``spec_example``: one spec for messages; ``rotary``: its
    strategies carry RoPE frequencies, so ``extend`` adds the frequency-based analyses of
    :mod:`posgeom.extension` (the fitted factors, phase metrics, forward-free predictors and the
    recommendation). ``name``: the registry name of the family that holds it (set by the family).
    """

    spec_keys: ClassVar[Mapping[str, Interval] | None] = None
    spec_example: ClassVar[str] = ""
    rotary: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of family {self.name!r}>"

    # ------------------------------------------------------------------ parameters
    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The family's parameters from a spec's checked values (defaults filled in)."""
        return dict(spec)

    def check_extension_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` normalised, or :class:`PosgeomError` (one line) when they cannot hold."""
        return dict(params)

    def extension_from_config(self, config: Any, model: Any = None) -> dict[str, Any] | None:
        """Parameters read from a transformers configuration (and its ``model``), or ``None``."""
        return None

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any] | None:
        """Parameters of a detected :class:`Mechanism` of this family, or ``None``."""
        return None

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        """Parameters of this family's trained decoder position ``module``."""
        raise PosgeomError(f"family {self.name!r} has no posgeom decoder position module")

    def default_trained_length(self, params: Mapping[str, Any]) -> int | None:
        """The trained length the parameters imply (a table's rows), or ``None``."""
        return None

    def extension_summary(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON summary of ``params`` (arrays as their values)."""
        return jsonable_parameters(params)

    # ------------------------------------------------------------------ strategies, kernel
    def strategies(
        self, params: Mapping[str, Any], trained_length: int, target_length: int
    ) -> list[Strategy]:
        """The strategies at ``(L0, L)``: by default ``none``, the model as it is."""
        return [Strategy("none", self.name, "none", None, f"{self.name} as it is")]

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        """``(m, k)`` float64 lag vectors of ``strategy`` at ``ctx.target_length``; every family
        with a kernel takes ``Strategy("none", name, "none")``: the model as trained."""
        raise PosgeomError(
            f"family {self.name!r} has no lag kernel, so extend cannot score it; give its "
            "Extension a lag_vectors method (docs/ARCHITECTURE.md, 'Adding a positional family')"
        )

    # ------------------------------------------------------------------ applying a strategy
    def can_apply(self, strategy: Strategy, target: str) -> bool:
        """Whether ``strategy`` can be run on a ``target`` model (``"transformers"``: a causal LM,
        ``"decoder"``: a posgeom ``CausalDecoder``): by default only ``none``, which changes
        nothing."""
        return strategy.kind == "none"

    def check_apply(self, strategy: Strategy, target: str) -> None:
        """:class:`PosgeomError` (one line) unless :meth:`can_apply`."""
        if strategy.family != self.name:
            raise PosgeomError(
                f"strategy {strategy.name!r} is for {strategy.family}, the model is {self.name}"
            )
        if not self.can_apply(strategy, target):
            raise PosgeomError(
                f"strategy {strategy.name!r} of family {self.name} cannot be measured on a "
                f"{target} model ({self.name} cannot apply it there); measure without it"
            )

    def apply_to_transformers(
        self, model: Any, strategy: Strategy, ctx: ExtensionContext
    ) -> Callable[[], None] | None:
        """Apply ``strategy`` to a transformers causal LM in place; returns what puts the model's
        own back (``None``: nothing was changed)."""
        self.check_apply(strategy, "transformers")
        return None

    def decoder_strategy_module(
        self, params: Mapping[str, Any], strategy: Strategy, trained: Any, ctx: ExtensionContext
    ) -> Any:
        """The decoder position module that runs ``strategy`` (``trained``: the decoder's own)."""
        self.check_apply(strategy, "decoder")
        return trained

    # ------------------------------------------------------------------ the decoder
    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        """A fresh position module of a posgeom ``DecoderConfig`` (``generator``: a
        ``torch.Generator`` for random initialisations)."""
        raise PosgeomError(f"family {self.name!r} has no posgeom decoder position module")

    def decoder_weights_at_least(self, config: Any) -> int:
        """Numbers its decoder module stores (a lower bound, checked before loading a file)."""
        return 0

    @staticmethod
    def torch_object(path: str) -> Any:
        """The object named ``"module:name"`` (imported on demand; ``encodings`` never imports
        ``nn``)."""
        module, _, name = path.partition(":")
        return getattr(importlib.import_module(module), name)


def refusing_extension(refusal: Callable[[str], str]) -> type[Extension]:
    """The extension side of a mechanism ``extend`` cannot scale (convolutional,
    relative-embedding, window-bias and spatial positions): a detected mechanism is refused
    with its family's one line, ``refusal(what)``."""

    class RefusingExtension(Extension):
        def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
            raise PosgeomError(refusal("extend cannot scale these positions"))

    return RefusingExtension


def has_decoder_module(ext: Extension) -> bool:
    """Whether the extension ``ext`` (a family's ``extension``) gives the posgeom decoder a
    position module (its type overrides :meth:`Extension.decoder_module`)."""
    return type(ext).decoder_module is not Extension.decoder_module
