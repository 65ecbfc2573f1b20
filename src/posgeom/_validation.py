"""Declarative parameter constraints (in the spirit of scikit-learn's ``_param_validation``).

A function states the allowed values of its parameters once, next to its signature::

    @validate_params(
        {
            "n_components": [Interval(Integral, 1, None), None],
            "solver": [Options({"auto", "exact", "implicit"})],
        }
    )
    def classical_mds(data, n_components=None, *, solver="auto"): ...

A value is accepted when it satisfies **any** of its parameter's constraints: an
:class:`Interval`, an :class:`Options` set, ``None`` (the value ``None``) or a type
(``isinstance``; ``bool`` is never a number). A refused value raises one
:class:`~posgeom._errors.PosgeomError` line naming the parameter, what it must be and what was
given.

**The integer rule** (one rule for the whole package): an integer parameter accepts ``int`` and
NumPy integer scalars, never ``bool`` nor a whole float such as ``3.0`` (scikit-learn's rule).
Real parameters accept ``int``, ``float`` and NumPy real scalars (not ``bool``, not NaN). The
function receives the value as given; use :func:`check_int` where an ``int`` is needed.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "SCALE",
    "SEED",
    "Interval",
    "Items",
    "Options",
    "check_int",
    "check_param",
    "check_path",
    "check_real",
    "check_scale",
    "float_array",
    "is_integer",
    "validate_params",
]

F = TypeVar("F", bound=Callable[..., Any])

_CLOSED = ("both", "left", "right", "neither")


def is_integer(value: Any) -> bool:
    """The package's integer rule: ``int`` or NumPy integer, never ``bool``, never ``3.0``."""
    return isinstance(value, (Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.floating)):
        return False
    return not math.isnan(float(value))


def _bound_text(value: float) -> str:
    """A bound as people write it: ``10``, ``0.5``, ``inf``, ``1000000``, ``2**63 - 1`` (not
    1e+06 or 9.22337e+18)."""
    if isinstance(value, int) and value > 2**20 and (value + 1) & value == 0:
        return f"2**{value.bit_length()} - 1"
    return str(value) if isinstance(value, int) else f"{value:g}"


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``Integral`` or ``Real``) between ``left`` and ``right``.

    ``None`` for a bound means unbounded on that side; ``closed`` is ``"both"`` (default),
    ``"left"``, ``"right"`` or ``"neither"``.
    """

    kind: type
    left: float | None
    right: float | None
    closed: str = "both"

    def __post_init__(self) -> None:
        if self.kind not in (Integral, Real):
            raise TypeError("Interval kind must be numbers.Integral or numbers.Real")
        if self.closed not in _CLOSED:
            raise TypeError(f"closed must be one of {_CLOSED}")

    def _bounds(self) -> list[tuple[str, float, Callable[[Any, Any], bool]]]:
        """(symbol, bound, test) of each bound given."""
        low, high = self.closed in ("both", "left"), self.closed in ("both", "right")
        out = []
        if self.left is not None:
            out.append((">=" if low else ">", self.left, operator.ge if low else operator.gt))
        if self.right is not None:
            out.append(("<=" if high else "<", self.right, operator.le if high else operator.lt))
        return out

    def accepts(self, value: Any) -> bool:
        if not (is_integer(value) if self.kind is Integral else _is_real(value)):
            return False
        return all(test(value, bound) for _, bound, test in self._bounds())

    def describe(self) -> str:
        noun = "an integer" if self.kind is Integral else "a number"
        if self.left is not None and self.left == self.right and self.closed == "both":
            return f"{'the integer' if self.kind is Integral else 'the number'} {self.left:g}"
        parts = [f"{symbol} {_bound_text(bound)}" for symbol, bound, _ in self._bounds()]
        return noun + (" " + " and ".join(parts) if parts else "")


#: a seed of ``numpy.random.default_rng``: a non-negative integer below 2**63 (the CLI's too)
SEED = Interval(Integral, 0, 2**63 - 1)


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values (compared with ``==``; typically strings)."""

    values: Collection[Any]

    def accepts(self, value: Any) -> bool:
        try:
            return value in self.values and not isinstance(value, (bool, np.bool_))
        except TypeError:  # unhashable value against a set
            return False

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in sorted(self.values, key=str))


@dataclass(frozen=True)
class Items:
    """An iterable of ``what`` (a list, a tuple, a generator): not a ``str``, ``bytes`` or
    ``dict``, which iterate too but are one value, not several (``fit("a text")`` would read
    each character as a text)."""

    what: str = "values"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))

    def describe(self) -> str:
        return f"a list (or another iterable) of {self.what}"


def _accepts(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, (Interval, Options, Items)):
        return constraint.accepts(value)
    if isinstance(constraint, type):
        if constraint is bool:
            return isinstance(value, (bool, np.bool_))
        return isinstance(value, constraint) and not isinstance(value, bool)
    raise TypeError(f"unknown constraint {constraint!r}")


def _describe(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, (Interval, Options, Items)):
        return constraint.describe()
    name = constraint.__name__
    return f"{'an' if name[0] in 'AEIOUaeiou' else 'a'} {name}"


def check_param(name: str, value: Any, constraints: Sequence[Any], *, where: str = "") -> Any:
    """Return ``value`` when it satisfies one of ``constraints``; else raise ``PosgeomError``."""
    if any(_accepts(c, value) for c in constraints):
        return value
    wanted = " or ".join(_describe(c) for c in constraints)
    prefix = f"{where}: " if where else ""
    integral = any(isinstance(c, Interval) and c.kind is Integral for c in constraints)
    if integral and isinstance(value, (float, np.floating)):
        wanted += " (a float such as 3.0 is not taken for an integer)"
    raise PosgeomError(f"{prefix}{name} must be {wanted}, got {value!r}")


def check_int(value: Any, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an ``int`` within ``[minimum, maximum]`` (the integer rule), or raise."""
    check_param(name, value, [Interval(Integral, minimum, maximum)])
    return int(value)


def check_real(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    closed: str = "both",
) -> float:
    """``value`` as a ``float`` within the interval (NaN and ``bool`` refused), or raise."""
    check_param(name, value, [Interval(Real, minimum, maximum, closed)])
    return float(value)


def check_path(value: Any, name: str) -> Any:
    """``value`` when it is a file path (``str`` or ``os.PathLike``), else a one-line
    :class:`PosgeomError` naming ``name`` (not ``os.fspath``'s ``TypeError``)."""
    if not isinstance(value, (str, os.PathLike)):
        raise PosgeomError(
            f"{name} must be a file path (str or Path), not a {type(value).__name__}"
        )
    return value


def float_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array, or :class:`PosgeomError` naming ``name`` when it holds no
    numbers (``None``, a string, a dict, an object). Shapes are the caller's to check."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        raise PosgeomError(f"{name} must be numbers (an array), not a {type(value).__name__}")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PosgeomError(
            f"{name} must be numbers (an array), not a {type(value).__name__} ({exc})"
        ) from None


#: the range of an array's largest |entry| in which float64 distances and fits hold: squares and
#: products of such values stay normal float64 numbers (0 is taken too: a constant zero array)
SCALE = (1e-100, 1e100)


def check_scale(array: np.ndarray, what: str, *, fix: str) -> None:
    """Refuse ``array`` when its largest |entry| is nonzero and outside :data:`SCALE`, where its
    squared distances under- or overflow to 0 or inf (scaled by 1e-170 an encoding scored as
    NoPE; by 1e160 it was called NaN or Inf): one line naming ``what``, then ``fix``."""
    top = float(np.max(np.abs(array)))
    if top and not SCALE[0] <= top <= SCALE[1]:
        raise PosgeomError(
            f"{what}: its largest |entry| is {top:.3g}, outside {SCALE[0]:g} .. {SCALE[1]:g}, "
            f"where float64 distances and fits do not hold; {fix}"
        )


def validate_params(constraints: Mapping[str, Sequence[Any]]) -> Callable[[F], F]:
    """Decorator: check the named parameters of every call (defaults too) against
    ``constraints``, kept on the function as ``__posgeom_constraints__``."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{func.__qualname__} has no parameters {sorted(unknown)}")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, allowed in constraints.items():
                check_param(name, bound.arguments[name], allowed, where=func.__name__)
            return func(*args, **kwargs)

        wrapper.__posgeom_constraints__ = dict(constraints)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
