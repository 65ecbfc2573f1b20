"""The rows of a comparison: the registry families (and extra encodings) scored against the
geometry of :func:`posgeom.pipeline.job.analyze`.

The rows of the MDS encodings the pipeline computes itself are named here once, for every
caller: :data:`MDS_ROW`, :data:`SMACOF_ROW` and :data:`MDS_ROWS` (both), spelled as their
families' ``name`` (:mod:`posgeom.encodings.mds`); no other module spells it
(``tests/pipeline/test_mds_rows.py`` reads the syntax trees).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._distance_matrix import as_distances
from posgeom.encodings import default_rope_head_dim
from posgeom.encodings._registry import ComparisonContext, describe_given
from posgeom.encodings.comparison import built_rows
from posgeom.encodings.mds import LowRankMDSFamily, MDSFamily, SMACOFFamily
from posgeom.scores.table import ScoreTable

__all__ = [
    "MDS_ROW",
    "MDS_ROWS",
    "SMACOF_ROW",
    "RowParts",
    "Rows",
    "comparison_rows",
    "rows_in_order",
]

#: the row of Algorithm 1's MDS encoding (the family's name)
MDS_ROW: str = MDSFamily.name
#: the row of its SMACOF refinement (only when the pipeline refines)
SMACOF_ROW: str = SMACOFFamily.name
#: the rank-``low_rank`` MDS encoding's row (the pipeline truncates, the family describes)
LOW_RANK_ROW: str = LowRankMDSFamily.name
#: the MDS rows the pipeline computes itself, in table order
MDS_ROWS: tuple[str, str] = (MDS_ROW, SMACOF_ROW)


@dataclass(frozen=True, eq=False)
class RowParts:
    """What one :func:`comparison_rows` call made, before :func:`rows_in_order` joins it:
    ``tables``, each row's one-row :class:`~posgeom.scores.table.ScoreTable` in the order made;
    the rest as in :class:`Rows`."""

    tables: list[ScoreTable]
    described: dict[str, dict[str, Any]]
    heads: list[dict[str, Any]]
    shepard: dict[str, np.ndarray]
    built: dict[str, Any]

    def add(
        self, name: str, scored: Any, enc: Any, description: str, parameters: int, *, keep: bool
    ) -> None:
        """Record row ``name``: its one-row table and Shepard distances (``scored``, the score
        targets' :class:`~posgeom.scores.table.FamilyScores`), description, parameter count and
        (``keep``) its encoding."""
        self.tables.append(scored.table)
        self.described[name] = {"description": description, "parameters": int(parameters)}
        self.shepard[name] = scored.shepard
        if keep:
            self.built[name] = enc


@dataclass(frozen=True, eq=False)
class Rows:
    """Rows of a comparison (:func:`rows_in_order` of :func:`comparison_rows`' parts):
    ``table``, the :class:`~posgeom.scores.table.ScoreTable` of the rows' encodings, the one
    source of every row's numbers; ``described``, each row's ``description`` and
    ``parameters``; ``heads``, the per-head rows of head families; ``shepard``, each row's
    distances at the Shepard pairs; ``built``, the encodings scored (with ``keep_encodings``).
    """

    table: ScoreTable
    described: dict[str, dict[str, Any]]
    heads: list[dict[str, Any]]
    shepard: dict[str, np.ndarray]
    built: dict[str, Any]

    def rows(self) -> list[dict[str, Any]]:
        """One row per encoding, in the table's order: its name, description and parameter
        count, then its cells in the files' spelling (:meth:`ScoreTable.row
        <posgeom.scores.table.ScoreTable.row>`)."""
        return [
            {"encoding": e, **self.described[e], **self.table.row(e)} for e in self.table.encodings
        ]

    def with_cells(self, cells: Mapping[str, Mapping[str, Any]]) -> Rows:
        """These rows with more cells against the primary target (the bootstrap intervals)."""
        return dataclasses.replace(self, table=self.table.with_cells(cells))


def comparison_rows(
    res: Any,
    families: Mapping[str, Any],
    *,
    n_heads: int = 12,
    rope_head_dim: int | None = None,
    rope_base: float = 10000.0,
    low_rank: int = 3,
    learned_model: Any = None,
    extra_encodings: Mapping[str, Any] | None = None,
    seed: int = 0,
    skip_unbuildable: bool = False,
    keep_encodings: bool = True,
) -> RowParts:
    """The :class:`RowParts` of ``families`` (row name -> registry family) and of
    ``extra_encodings`` against the geometry of the pipeline stage ``res`` (its score targets,
    kept positions and fitted MDS encodings).

    The families build (:meth:`~posgeom.encodings._registry.Family.encodings`), the stage's
    :class:`~posgeom.scores.table.ScoreTargets` score every encoding on the kept positions
    against every target in one pass. A family with several encodings (ALiBi's heads) gets the
    row its :attr:`~posgeom.encodings._registry.Family.row_choice` picks, every head in the
    per-head rows. Without ``keep_encodings`` each encoding is freed once scored (a long
    context's ``(n, d)`` tables are not all held at once). With ``skip_unbuildable`` a family
    that cannot be built with these settings is left out with a warning instead of raising.
    """
    model_dim = int(res.options["model_dim"])  # the config's width (the MDS may come later)
    rope_hd = default_rope_head_dim(model_dim, n_heads) if rope_head_dim is None else rope_head_dim
    positions = np.asarray(res.positions.distributions.positions, dtype=np.int64)
    fit = res.fit  # the fitted rows' encodings (the families describe them), once fitted
    fitted: dict[str, Any] = {}
    if fit is not None:
        fitted = {MDS_ROW: fit.mds, SMACOF_ROW: fit.refined, LOW_RANK_ROW: fit.low_rank}
    ctx = ComparisonContext(
        n_positions=int(positions.max()) + 1,
        n_kept=len(positions),
        model_dim=int(model_dim),
        n_heads=int(n_heads),
        rope_head_dim=int(rope_hd),
        rope_base=float(rope_base),
        seed=seed,
        fitted={k: v for k, v in fitted.items() if v is not None},
        learned_model=learned_model,
        low_rank=int(low_rank),
    )
    out = RowParts([], {}, [], {}, {})
    for built in built_rows(families, ctx, positions, skip_unbuildable=skip_unbuildable):
        name, made, kept = built.name, built.made, built.kept
        scored = res.targets.score_family(
            name, _built(kept, res.targets), choice=built.family.row_choice, drawn=kept
        )
        out.heads.extend(
            {"family": name, **m.head, **scored.rows[key]}
            for key, m in made.items()
            if m.head is not None
        )
        row = made[scored.key]
        out.add(
            name, scored, kept[scored.key], row.description, row.parameters, keep=keep_encodings
        )
    for name, given in (extra_encodings or {}).items():
        enc = getattr(given, "encoding", given)
        drawn = {str(name): enc}
        scored = res.targets.score_family(str(name), _built(drawn, res.targets), drawn=drawn)
        out.add(str(name), scored, enc, *describe_given(given, ctx), keep=keep_encodings)
    return out


def _built(encodings: dict[str, Any], targets: Any) -> dict[str, Any]:
    """Build, then score: each encoding's ``(n, n)`` distances made here once, as the
    :class:`~posgeom._distance_matrix.DistanceMatrix` the score table reads (exact mode); on a
    long context's pair sample the encodings go as they are (no ``(n, n)``)."""
    if targets.sampled:
        return encodings
    return {key: as_distances(enc, key) for key, enc in encodings.items()}


def rows_in_order(names: list[str], early: RowParts, fitted: RowParts) -> Rows:
    """Two :func:`comparison_rows` results (the rows that do not read the MDS encoding, made while
    it is computed, and the fitted ones after it) as one :class:`Rows`, their tables joined once:
    the rows in ``names``' order, the caller's encodings (rows of ``early`` that are no family)
    last, as one call would have made them."""
    table = ScoreTable.concat([*early.tables, *fitted.tables])
    order = [x for x in names if x in table.encodings]
    order += [x for x in table.encodings if x not in order]
    return Rows(
        ScoreTable(tuple(order), table.targets, table.cells),
        {**early.described, **fitted.described},
        [*early.heads, *fitted.heads],
        {**early.shepard, **fitted.shepard},
        {**early.built, **fitted.built},
    )
