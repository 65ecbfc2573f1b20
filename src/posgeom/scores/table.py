"""Score encodings against named targets: one table indexed by (encoding, target, score).

A comparison scores every encoding against the *primary* target (:data:`PRIMARY`, the
pipeline's estimate of ``D``) and against named targets shown beside it (the plug-in ``D`` when
the primary is another estimate). :class:`ScoreTargets` holds the targets, validated once, and
scores encodings exactly up to :data:`SAMPLED_ABOVE` positions (each encoding's distance matrix
built once and shared by every score), on one :class:`~posgeom.scores.sampled.PairSample` above.

:meth:`ScoreTargets.score` returns a frozen :class:`ScoreTable`; :meth:`ScoreTable.row` spells
one encoding's cells the way ``summary.json`` and ``table.md`` store them: the primary's scores
under their names, a target beside as ``<target>_<score>`` (``plugin_paper``), the files'
schema made here once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._distance_matrix import as_distances
from posgeom._errors import PosgeomError
from posgeom.scores import registry
from posgeom.scores._encoding import encoding_distances, encoding_pairs, matched_distance_matrices
from posgeom.scores.large import DenseTarget
from posgeom.scores.sampled import (
    DEFAULT_SAMPLE,
    PRIMARY,
    draw_pair_sample,
    sampled_scores_by_target,
)
from posgeom.scores.shepard import shepard_pairs
from posgeom.scores.stress import stress_from_pairs, stress_scores

__all__ = [
    "SAMPLED_ABOVE",
    "FamilyScores",
    "ScoreTable",
    "ScoreTargets",
    "score_encoding",
]

log = logging.getLogger("posgeom")

#: exact dense scores up to this many positions; one pair sample above
SAMPLED_ABOVE = 2048
#: the scores of a target shown beside the primary (its stress kinds; the summary's columns)
BESIDE_SCORES = ("paper", "scale_optimal")

Cells = Mapping[tuple[str, str], Mapping[str, Any]]


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Scores indexed by ``(encoding, target, score)``.

    ``cells[(encoding, target)]``: that encoding's scores against that target (a score name to a
    number, or to a JSON-able value for the extra keys a score carries: ``<score>_ci``,
    ``separation_kind``, ``sampled``). ``encodings`` and ``targets`` keep their order.
    """

    encodings: tuple[str, ...]
    targets: tuple[str, ...]
    cells: Cells

    def scores_of(self, encoding: str, target: str = PRIMARY) -> Mapping[str, Any]:
        """The scores of ``encoding`` against ``target`` (empty when not scored there)."""
        return self.cells.get((encoding, target), MappingProxyType({}))

    def value(self, encoding: str, score: str, target: str = PRIMARY) -> Any:
        """One cell: ``score`` of ``encoding`` against ``target`` (KeyError when absent)."""
        return self.cells[(encoding, target)][score]

    def chosen(self, choice: str | None, name: str) -> tuple[str, ScoreTable]:
        """A family's row (:attr:`~posgeom.encodings.Family.row_choice`): the encoding of lowest
        ``choice`` score against the primary target (ties to the first; ``choice=None``: the
        table's only encoding) and its cells as the one row ``name``: ``(its key, the table)``."""
        keys = list(self.encodings)
        if choice is None and len(keys) != 1:
            raise PosgeomError(f"a family without a row choice built {len(keys)} encodings")
        key = keys[0]
        if choice is not None:
            key = min(keys, key=lambda k: (self.value(k, choice), keys.index(k)))
        cells = {(name, t): self.scores_of(key, t) for t in self.targets}
        return key, ScoreTable((name,), self.targets, MappingProxyType(cells))

    def row(self, encoding: str) -> dict[str, Any]:
        """``encoding``'s cells in the files' spelling: the primary's scores by name, each
        target beside as ``<target>_<score>`` for its :data:`BESIDE_SCORES`."""
        out = dict(self.scores_of(encoding))
        for target in self.targets[1:]:
            got = self.scores_of(encoding, target)
            out |= {f"{target}_{k}": got[k] for k in BESIDE_SCORES if k in got}
        return out

    def with_cells(
        self, cells: Mapping[str, Mapping[str, Any]], target: str = PRIMARY
    ) -> ScoreTable:
        """This table with more cells against ``target`` (encoding to ``{key: value}``: e.g. the
        bootstrap's ``<score>_ci`` and ``p_first``, estimated over replicate targets)."""
        merged = dict(self.cells)
        for enc, extra in cells.items():
            if extra and enc in self.encodings:
                merged[(enc, target)] = MappingProxyType({**self.scores_of(enc, target), **extra})
        return ScoreTable(self.encodings, self.targets, MappingProxyType(merged))

    @staticmethod
    def concat(tables: Iterable[ScoreTable]) -> ScoreTable:
        """One table of several over the same targets (encodings in the tables' order; tables
        without encodings are left out)."""
        tables = [t for t in tables if t.encodings]
        targets = tables[0].targets if tables else (PRIMARY,)
        if any(t.targets != targets for t in tables):
            raise PosgeomError("tables over different targets cannot be joined")
        cells: dict[tuple[str, str], Mapping[str, Any]] = {}
        for t in tables:
            cells |= t.cells
        encodings = tuple(dict.fromkeys(e for t in tables for e in t.encodings))
        return ScoreTable(encodings, targets, MappingProxyType(cells))


@dataclass(frozen=True, eq=False)
class FamilyScores:
    """One family's encodings scored (:meth:`ScoreTargets.score_family`): ``key``, the encoding
    its row choice picked; ``table``, that encoding's cells as the family's one row; ``rows``,
    every encoding's cells in the files' spelling (:meth:`ScoreTable.row`), by key (a per-head
    family's per-head rows); ``shepard``: the chosen encoding's distances at the targets'
    Shepard pairs (None without them)."""

    key: str
    table: ScoreTable
    rows: Mapping[str, dict[str, Any]]
    shepard: np.ndarray | None = None


class ScoreTargets:
    """The named targets encodings are scored against (module docstring), built with
    :meth:`for_target`: ``names`` (the primary first); ``dense``, name to validated ``(n, n)``
    :class:`~posgeom._distance_matrix.DistanceMatrix` (exact mode, else empty); ``sample``, the
    :class:`~posgeom.scores.sampled.PairSample` (sampled mode, else None); ``shepard_pairs``,
    the ``(2, m)`` pairs of a report's Shepard plots, or None; ``sampled``, ``matrix`` (the
    primary's ``DistanceMatrix``, None when sampled) and ``n_positions``.
    """

    def __init__(
        self,
        *,
        names: tuple[str, ...],
        dense: Mapping[str, Any],
        sample: Any = None,
        seed: int = 0,
        shepard_pairs: np.ndarray | None = None,
    ):
        self.names, self.dense, self.sample, self.seed = names, dict(dense), sample, seed
        self.shepard_pairs = shepard_pairs
        self.sampled = sample is not None
        self.matrix = self.dense.get(PRIMARY)  # the primary as a DistanceMatrix (exact mode)
        n = sample.n_positions if self.sampled else self.matrix.distances.shape[0]
        self.n_positions = int(n)

    @classmethod
    def for_target(
        cls,
        target: Any,
        n: int,
        *,
        beside: Mapping[str, Any] | None = None,
        seed: int = 0,
        size: int = DEFAULT_SAMPLE,
        shepard: bool = False,
    ) -> ScoreTargets:
        """Exact when ``n <= SAMPLED_ABOVE`` (``target`` and each of ``beside``: an ``(n, n)``
        matrix, a ``DistanceMatrix`` or an estimate; each validated here once), else one sample
        of ``size`` triples from them as blocks targets. ``shepard``: also draw the Shepard
        pairs (``seed``)."""
        named = {PRIMARY: target, **dict(beside or {})}
        pairs = shepard_pairs(n, seed=seed) if shepard else None
        if n <= SAMPLED_ABOVE:  # read at call time (tests lower it)
            dense = {k: as_distances(t, k) for k, t in named.items()}
            return cls(names=tuple(named), dense=dense, seed=seed, shepard_pairs=pairs)
        log.info("scores from %d sampled triples per encoding (n = %d)", size, n)
        blocks = {
            k: t if hasattr(t, "pairs") else DenseTarget(np.asarray(t)) for k, t in named.items()
        }
        sample = draw_pair_sample(blocks.pop(PRIMARY), size=size, seed=seed, beside=blocks)
        return cls(names=tuple(named), dense={}, sample=sample, seed=seed, shepard_pairs=pairs)

    def sampling_summary(self) -> dict[str, Any]:
        """How the sampled scores were estimated (the summary's ``sampling`` block)."""
        s = self.sample
        out: dict[str, Any] = {
            "scores": "sampled",
            "triples": s.size,
            "seed": s.seed,
            "confidence": s.confidence,
            "rule": "uniform triples (i, j, k); stress kinds from the pairs (i, j) (ratio "
            "estimators, delta-method intervals), violation rate from the triples (Wilson "
            "interval); separation exact or an upper bound (separation_kind)",
        }
        unsampled = [x.name for x in registry.scores() if x.sampled is None]
        if unsampled:  # registered scores with no sampled form: not in the rows
            out["without_sampled_form"] = unsampled
        return out

    def score_one(self, encoding: Any, *, names: Any = None) -> dict[str, dict[str, Any]]:
        """``{target: {score: value}}`` of one encoding: every registered score (or those of
        ``names``) against the primary, the stress kinds against each target beside."""
        if self.sampled:
            return sampled_scores_by_target(encoding, self.sample, names=names)
        target = self.matrix.distances
        delta = encoding_distances(encoding)
        if delta.shape != target.shape:
            stress_scores(encoding, target)  # raises the one mismatch message
        out = {PRIMARY: registry.score_row(delta, target, seed=self.seed, names=names)}
        iu = np.triu_indices(delta.shape[0], 1)
        for name in self.names[1:]:
            p = stress_from_pairs(delta[iu], self.dense[name].distances[iu])
            out[name] = {"paper": p.paper, "scale_optimal": p.scale_optimal}
        return out

    def score(self, encodings: Mapping[str, Any], *, names: Any = None) -> ScoreTable:
        """One :class:`ScoreTable` of ``encodings`` (name to encoding) against every target."""
        cells = {}
        for key, enc in encodings.items():
            for target, got in self.score_one(enc, names=names).items():
                cells[(str(key), target)] = MappingProxyType(got)
        return ScoreTable(tuple(map(str, encodings)), self.names, MappingProxyType(cells))

    def score_family(
        self,
        name: str,
        encodings: Mapping[str, Any],
        *,
        choice: str | None = None,
        drawn: Mapping[str, Any] | None = None,
    ) -> FamilyScores:
        """Score one family's ``encodings`` (key to encoding) against every target and pick its
        row named ``name`` (:meth:`ScoreTable.chosen` by ``choice``); with :attr:`shepard_pairs`,
        the chosen encoding's distances there, from ``drawn[key]`` (as built: no ``(n, n)``) or
        ``encodings[key]``."""
        scored = self.score(encodings)
        key, chosen = scored.chosen(choice, name)
        shepard = None
        if self.shepard_pairs is not None:
            shepard = encoding_pairs((drawn or encodings)[key], *self.shepard_pairs)
        rows = {k: scored.row(k) for k in scored.encodings}
        return FamilyScores(key, chosen, rows, shepard)

    def rank_scores(self, encoding: Any) -> dict[str, Any]:
        """The scores the rank experiment reports (the registered scores with ``rank_curve``,
        in registry order) of one encoding against the primary target."""
        names = [s.name for s in registry.scores() if s.rank_curve]
        got = self.score_one(encoding, names=names)[PRIMARY]
        return {k: got[k] for k in names if k in got}


def score_encoding(encoding: Any, target: Any, *, seed: int = 0) -> dict[str, Any]:
    """Every registered score (:func:`posgeom.scores.available`) of one encoding against the
    target distances (an ``(n, n)`` matrix or an estimate), as a JSON-able dict."""
    delta, tgt = matched_distance_matrices(encoding, target)
    return registry.score_row(delta, tgt, seed=seed)
