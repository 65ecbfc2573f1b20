"""The score registry: one :class:`Score` record per score, read by everything that scores.

A score is a function of an encoding's ``(n, n)`` distance matrix ``delta`` and the target's
``D`` (float64, symmetric, zero diagonal), ``fn(delta, target, *, seed) -> float`` (or a mapping
holding ``name`` and any extra keys of the row, e.g. ``violation_ci``; a row computes a score
whose key is already in it only once). Its record says how it is shown (``column = (header,
format spec)``, ``tables``), what it means (``convention``: which way is better, what it
estimates, its range), whether the bootstrap gives it an interval (``interval``, clipped to
``bounds``) and how it is estimated at long contexts (``sampled(pairs: SampledPairs)``, or
``None``: left out of sampled rows).

Each score is registered where it lives (``scores/stress.py``, ``scores/order.py``) with
:func:`register`; ``posgeom.scores`` imports every module of its package, so a new score is one
file. The registry is read when used (:func:`scores`, :func:`available`, :func:`get`), never
copied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "TABLES",
    "SampledPairs",
    "Score",
    "available",
    "get",
    "register",
    "sampled_row",
    "score_row",
    "scores",
]

TABLES = ("scores", "rank", "layers")  # the score table, the rank curve, the per-layer table


@dataclass(frozen=True, eq=False)
class SampledPairs:
    """One encoding on a pair sample (:class:`posgeom.scores.sampled.PairSample`, whose
    ``target_ij``, ``target_ik`` it reads): the encoding, its distances ``delta_ij``,
    ``delta_ik`` at the drawn triples and the normal quantile ``z`` of the intervals."""

    encoding: Any
    sample: Any
    delta_ij: np.ndarray
    delta_ik: np.ndarray
    z: float

    @property
    def n_positions(self) -> int:
        return int(self.sample.n_positions)


ScoreFn = Callable[..., "float | Mapping[str, Any]"]


@dataclass(frozen=True, eq=False)
class Score:
    """One score (see the module docstring).

    ``better``: ``"lower"``, ``"higher"`` or ``None`` (a fitted quantity, not a quality);
    ``bounds``: the score's range (intervals are clipped to it); ``tables``: where its column
    shows (:data:`TABLES`); ``rank_curve``: computed for every rank of the rank curve;
    ``layer_key``: its key in per-layer rows (the stress kinds keep ``stress_<kind>``);
    ``order``: position in rows and tables.
    """

    name: str
    fn: ScoreFn
    column: tuple[str, str]
    convention: str
    interval: bool = True
    better: str | None = "lower"
    bounds: tuple[float, float] = (0.0, float("inf"))
    sampled: Callable[[SampledPairs], Any] | None = None
    tables: tuple[str, ...] = TABLES
    rank_curve: bool = True
    layer_key: str = ""
    order: int = 100

    @property
    def key_in_layers(self) -> str:
        return self.layer_key or self.name

    def row(self, delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
        """This score's keys of a score row: ``{name: value, **extras}``."""
        return _as_row(self.name, self.fn(delta, target, seed=seed))

    def value(self, delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> float:
        """The score as a float."""
        return float(self.row(delta, target, seed=seed)[self.name])


_SCORES: dict[str, Score] = {}


def register(
    name: str,
    *,
    column: tuple[str, str],
    convention: str,
    **fields: Any,
) -> Callable[[ScoreFn], ScoreFn]:
    """Decorator: register ``fn(delta, target, *, seed)`` as the score ``name`` (the other
    fields of :class:`Score` as keywords). Registering a name again replaces it (a module
    reloaded); the function is returned unchanged."""

    def decorate(fn: ScoreFn) -> ScoreFn:
        if not name or not name.isidentifier():
            raise PosgeomError(f"a score's name must be an identifier, got {name!r}")
        unknown = set(fields.get("tables", ())) - set(TABLES)
        if unknown or fields.get("better", "lower") not in ("lower", "higher", None):
            raise PosgeomError(f"score {name!r}: tables are {TABLES}, better lower/higher/None")
        _SCORES[name] = Score(name, fn, tuple(column), convention, **fields)
        return fn

    return decorate


def scores(names: Iterable[str] | None = None) -> tuple[Score, ...]:
    """The registered scores by ``order`` (then registration), or those of ``names``."""
    if names is not None:
        return tuple(get(n) for n in names)
    ordered = sorted(enumerate(_SCORES.values()), key=lambda item: (item[1].order, item[0]))
    return tuple(s for _, s in ordered)


def available() -> tuple[str, ...]:
    """Names of every registered score, in table order."""
    return tuple(s.name for s in scores())


def get(name: str) -> Score:
    """The :class:`Score` registered as ``name``."""
    try:
        return _SCORES[name]
    except KeyError:
        raise PosgeomError(
            f"unknown score {name!r}; choose from {', '.join(available())}"
        ) from None


def score_row(
    delta: np.ndarray, target: np.ndarray, *, seed: int = 0, names: Iterable[str] | None = None
) -> dict[str, Any]:
    """Every registered score (or those of ``names``, and what they give with them) of
    ``delta`` against ``target``, both ``(n, n)`` float64 distance matrices of the same
    positions, as one JSON-able dict."""
    out: dict[str, Any] = {}
    for s in scores(names):
        if s.name not in out:  # not already given by a score computed with it
            out |= s.row(delta, target, seed=seed)
    return out


def sampled_row(pairs: SampledPairs, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Every registered score with a sampled form, estimated on ``pairs``."""
    out: dict[str, Any] = {}
    for s in scores(names):
        if s.sampled is not None and s.name not in out:
            out |= _as_row(s.name, s.sampled(pairs))
    return out


def _as_row(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        if name not in value:
            raise PosgeomError(f"score {name!r} returned a mapping without its own key {name!r}")
        return dict(value)
    return {name: float(value)}
