"""A model's positional mechanism: :class:`Mechanism` ``(kind, source, params, others, layers,
stack)`` and the base of the families' typed parameters, :class:`MechanismParams`.

Each family owns its mechanism kind (``family_of_mechanism(kind)`` in the registry, looked up when
a mechanism is made) and the params dataclass that converts itself to geometry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import check_n, readonly

__all__ = ["Mechanism", "MechanismParams", "RefusingParams", "head_select", "register_kind"]

#: mechanism kind -> its params class (filled by the registry's ``register``)
_PARAMS: dict[str, type] = {}


def register_kind(kind: str, params: type | None) -> None:
    """Record that mechanisms of ``kind`` carry ``params`` (``None``: any
    :class:`MechanismParams`); called by :func:`posgeom.encodings.register`."""
    _PARAMS[kind] = params or MechanismParams


# ------------------------------------------------------------------------------ mechanisms
class MechanismParams:
    """Base of the typed parameters of one mechanism (a frozen dataclass per family).

    ``key``: the prefix of its encodings in ``mechanism_encodings``; ``representation``:
    ``"vectors"`` or ``"distances"``.
    """

    key: ClassVar[str] = ""
    representation: ClassVar[str] = "vectors"
    #: array fields kept as read-only float64 copies
    _arrays: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in self._arrays:
            object.__setattr__(self, name, readonly(getattr(self, name)))

    @property
    def n_positions(self) -> int | None:
        return None

    def summary(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def as_dict(self) -> dict[str, Any]:
        """The parameters as plain JSON data: scalar fields as they are, 1-D arrays as lists,
        larger arrays as ``<name>_shape`` (a learned table is not printed)."""
        out: dict[str, Any] = {}
        for f in fields(self) if is_dataclass(self) else ():
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                if value.ndim == 1:
                    out[f.name] = [float(v) for v in value]
                else:
                    out[f"{f.name}_shape"] = [int(v) for v in value.shape]
            elif isinstance(value, Mapping):
                out[f.name] = dict(value)
            elif value is None or isinstance(value, (bool, int, float, str)):
                out[f.name] = value
        return out

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        """``suffix -> PositionEncoding`` for positions ``start .. start + n - 1`` (suffix ``""``:
        the mechanism itself, ``"_h<h>"``: one head)."""
        raise NotImplementedError  # pragma: no cover - abstract


class RefusingParams(MechanismParams):
    """Base of the params of a mechanism with no geometry of token positions (convolutional,
    relative-embedding and spatial positions): ``to_encoding`` refuses with the family's one
    line, ``refusal(what)`` (a module function set as a ``staticmethod``), and it has no
    encodings."""

    representation: ClassVar[str] = "none"
    refusal: ClassVar[Callable[[str], str]]

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        raise PosgeomError(self.refusal("no position encoding"))

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        """None: no position geometry (see the family's ``refusal``)."""
        return {}


def head_select(stack: np.ndarray, head: int | None) -> np.ndarray:
    """``stack`` ``(H, n, n)`` for ``head=None``, else the ``(n, n)`` matrix of ``head``."""
    if head is None:
        return stack
    h = stack.shape[0]
    if not -h <= int(head) < h:
        raise PosgeomError(f"head {head} is out of range for {h} heads")
    return np.ascontiguousarray(stack[int(head)])


@dataclass(frozen=True, eq=False)
class Mechanism:
    """One positional mechanism of a model: ``kind`` (``family_of_mechanism(kind)`` owns it),
    ``source`` (the parameter, buffer or config field it was read from), ``params`` (the family's
    typed parameters, float64 read-only arrays), ``others`` (the model's further mechanisms),
    ``layers`` (0-based indices of the blocks it acts on within its layer stack; ``None`` for an
    input-level table or when unknown) and ``stack`` (the module path of that stack, e.g.
    ``"layers"`` or ``"decoder.block"``).

    The fields of ``params`` are also readable on the mechanism (``mech.table``, ``mech.slopes``,
    ``mech.representation``: what :meth:`to_encoding` returns, ``"vectors"`` or
    ``"distances"``; ``mech.n_positions``: the rows of a learned table, else ``None``).
    """

    kind: str
    source: str
    params: MechanismParams
    others: tuple[Mechanism, ...] = field(default=())
    layers: tuple[int, ...] | None = None
    stack: str | None = None

    def __post_init__(self) -> None:
        params = _PARAMS.get(self.kind)
        if params is None:
            raise PosgeomError(
                f"unknown mechanism kind {self.kind!r}; use one of {', '.join(_PARAMS)}"
            )
        if not isinstance(self.params, params):
            raise PosgeomError(
                f"a {self.kind!r} mechanism needs {params.__name__} params, got "
                f"{type(self.params).__name__}"
            )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "params":
            raise AttributeError(name)
        try:
            return getattr(self.params, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__} of kind {self.kind!r} has no attribute {name!r}"
            ) from None

    @property
    def all(self) -> tuple[Mechanism, ...]:
        """This mechanism followed by ``others``."""
        return (self, *self.others)

    def summary(self) -> str:
        """One line describing the mechanism (and the layers it acts on, when known)."""
        where = "" if self.layers is None else f" layers {_ranges(self.layers)}"
        return f"{self.params.summary()}{where} [{self.source}]"

    def as_dict(self) -> dict[str, Any]:
        """``{"kind", "layers", "stack", "source", ...params}`` as plain JSON data (the params
        of :meth:`MechanismParams.as_dict`)."""
        head = {"kind": self.kind, "layers": None if self.layers is None else list(self.layers)}
        return {**head, "stack": self.stack, "source": self.source, **self.params.as_dict()}

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """The geometry of positions ``0 .. n-1`` (see the family's params ``to_encoding``)."""
        return self.params.to_encoding(check_n(n, "n"), head=head)


def _ranges(layers: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2,5"``."""
    parts: list[str] = []
    for i in sorted(layers):
        if parts and parts[-1].split("-")[-1] == str(i - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{i}"
        else:
            parts.append(str(i))
    return ",".join(parts) or "(none)"
