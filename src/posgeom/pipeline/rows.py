"""The rows of a comparison: the registry families (and extra encodings) scored against a
pipeline's geometry, and the same rows added to a pipeline result (``run``, ``geometry``,
``demo``). :func:`posgeom.pipeline.job.analyze` is the entry point that uses them.

The rows of the MDS encodings the pipeline computes itself are named here once, for every
caller: :data:`MDS_ROW` (Algorithm 1), :data:`SMACOF_ROW` (its SMACOF refinement) and
:data:`MDS_ROWS` (both: the ``families`` that ask for the MDS rows only). Their spelling is their
families' ``name`` (:mod:`posgeom.encodings.mds`, below the pipeline); no other module spells it
(``tests/pipeline/test_mds_rows.py`` reads the syntax trees).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings import default_rope_head_dim, family
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._registry import ComparisonContext
from posgeom.encodings.mds import MDSFamily, SMACOFFamily
from posgeom.pipeline.config import comparable_encodings, default_encodings
from posgeom.pipeline.scale import pair_distances

__all__ = [
    "MDS_ROW",
    "MDS_ROWS",
    "SMACOF_ROW",
    "comparable_encodings",
    "comparison_rows",
    "default_encodings",
    "rows_in_order",
]

log = logging.getLogger("posgeom")

#: the row of Algorithm 1's MDS encoding (the family's name)
MDS_ROW: str = MDSFamily.name
#: the row of its SMACOF refinement (only when the pipeline refines)
SMACOF_ROW: str = SMACOFFamily.name
#: the MDS rows the pipeline computes itself, in table order
MDS_ROWS: tuple[str, str] = (MDS_ROW, SMACOF_ROW)


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_ENCODINGS":  # the registry read when used, not a snapshot at import
        return default_encodings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _restrict(enc: Any, positions: np.ndarray) -> PositionEncoding:
    """``enc`` (built for positions ``0 .. N-1``) restricted to ``positions`` (itself when they
    are all of them: a long context's lag profile stays a profile)."""
    if len(positions) == enc.n_positions and np.array_equal(positions, np.arange(len(positions))):
        return enc
    if getattr(enc, "vectors", None) is not None and getattr(enc, "distance_matrix", None) is None:
        return PositionEncoding(enc.name, enc.vectors[positions], enc.params)
    dist = enc.distances[np.ix_(positions, positions)]
    vec = None if enc.vectors is None else enc.vectors[positions]
    return PositionEncoding(enc.name, vec, enc.params, dist)


def described(enc: Any, ctx: Any) -> tuple[str, int]:
    """``(description, parameters)`` of a caller's encoding: its registered family's own
    (:meth:`~posgeom.encodings._registry.Family.describe` and ``parameter_count``, as the
    family's rows get them) when it names one, else what it is: given ``(n, d)`` vectors (``n d``
    stored scalars) or given ``(n, n)`` distances (``n (n - 1) / 2``)."""
    from posgeom.encodings import families

    fam = families().get(str(getattr(enc, "name", "")))
    if fam is not None:
        try:
            return str(fam.describe(ctx, enc)), int(fam.parameter_count(ctx, enc))
        except (AttributeError, KeyError, TypeError, ValueError):
            pass  # a family whose description needs a context this row does not have
    vec = getattr(enc, "vectors", None)
    if vec is None and getattr(enc, "ndim", None) == 2:
        a = np.asarray(enc)
        square = a.shape[0] == a.shape[1] and np.allclose(a, a.T) and not np.diag(a).any()
        vec = None if square else a
    if vec is not None and getattr(enc, "distance_matrix", None) is None:
        n, d = np.shape(vec)
        return f"given vectors ({n} x {d})", int(n * d)
    n = int(getattr(enc, "n_positions", None) or np.shape(enc)[0])
    return f"given distances ({n} x {n})", n * (n - 1) // 2


def comparison_rows(
    res: Any,
    names: Sequence[str],
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
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, np.ndarray], dict[str, Any]]:
    """The comparison rows of ``names`` (registry families) and of ``extra_encodings`` against the
    geometry of the pipeline stage ``res`` (its scorer, kept positions, Shepard pairs and fitted
    MDS encodings).

    The families build (:meth:`~posgeom.encodings._registry.Family.encodings`), this scores:
    every encoding a family returns is restricted to the kept positions and scored by the stage's
    scorer (one pass, the plug-in beside). A family with several encodings (ALiBi's heads) gets the
    row its :attr:`~posgeom.encodings._registry.Family.row_choice` picks, every head in the
    per-head rows.

    Returns ``(table, heads, shepard, built)``: one score row per encoding (with ``description``
    and ``parameters``), the per-head rows, each row's distances at ``res.shepard_pairs``, and the
    encodings scored by name (empty without ``keep_encodings``: each is freed once scored, so a
    long context's ``(n, d)`` tables are not all held at once). With ``skip_unbuildable`` a
    family that cannot be built with these settings (e.g. sinusoidal at an odd width) is left out
    with a warning instead of raising.
    """
    model_dim = int(res.options["model_dim"])  # the config's width (the MDS may come later)
    rope_hd = default_rope_head_dim(model_dim, n_heads) if rope_head_dim is None else rope_head_dim
    positions = np.asarray(res.distributions.positions, dtype=np.int64)
    fitted = {MDS_ROW: res.mds, SMACOF_ROW: res.refined}
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
    table: list[dict[str, Any]] = []
    heads: list[dict[str, Any]] = []
    shepard: dict[str, np.ndarray] = {}
    built: dict[str, Any] = {}
    for k, name in enumerate(names, 1):
        log.info("scoring %s (%d/%d)", name, k, len(names))
        made = _family_encodings(name, ctx, skip_unbuildable)
        if not made:
            continue
        scored = {key: _scored(res, enc, positions) for key, enc in made.items()}
        heads += [
            {"family": name, **made[key].head, **row}
            for key, (_, row) in scored.items()
            if made[key].head is not None
        ]
        key = _row_key(family(name).row_choice, scored)
        enc, row = scored[key]
        table.append(_row(name, made[key].description, made[key].parameters, row))
        shepard[name] = pair_distances(enc, res.shepard_pairs)
        if keep_encodings:
            built[name] = enc
    for name, given in (extra_encodings or {}).items():
        enc, row = _scored(res, given, None)
        table.append(_row(str(name), *described(given, ctx), row))
        shepard[str(name)] = pair_distances(enc, res.shepard_pairs)
        if keep_encodings:
            built[str(name)] = enc
    return table, heads, shepard, built


def _family_encodings(name: str, ctx: ComparisonContext, skip_unbuildable: bool) -> dict:
    """``family(name).encodings(ctx)``; a family that cannot be built is skipped with a warning
    (``skip_unbuildable``) or raises, one with no encoding here is skipped with its reason."""
    try:
        made = family(name).encodings(ctx)
    except PosgeomError as exc:
        if not skip_unbuildable:
            raise
        log.warning("%s skipped: %s", name, str(exc).splitlines()[0])
        return {}
    if not made:
        log.warning("%s skipped: %s", name, family(name).skip_reason)
    return made


def _scored(res: Any, given: Any, positions: np.ndarray | None) -> tuple[Any, dict[str, Any]]:
    """A row encoding (or an encoding of the kept positions) restricted to the kept positions and
    scored by the stage's scorer: ``(encoding scored, scores)``."""
    enc = getattr(given, "encoding", given)
    if positions is not None and not getattr(given, "kept", True):
        enc = _restrict(enc, positions)
    row = {k: v for k, v in res.scorer.score(enc).items() if k != "plugin_stress1"}
    return enc, row


def _row_key(choice: str | None, scored: Mapping[str, tuple[Any, dict[str, Any]]]) -> str:
    """The encoding that is the family's row: its only one, or the one of lowest ``choice`` score
    (ties to the first)."""
    keys = list(scored)
    if choice is None:
        if len(keys) != 1:
            raise PosgeomError(f"a family without a row choice built {len(keys)} encodings")
        return keys[0]
    return min(keys, key=lambda k: (scored[k][1][choice], keys.index(k)))


def _row(name: str, description: str, parameters: int, scores: Mapping[str, Any]) -> dict:
    return {"encoding": name, "description": description, "parameters": int(parameters), **scores}


def rows_in_order(names: list[str], early: tuple, fitted: tuple) -> tuple:
    """Two :func:`comparison_rows` results (the rows that do not read the MDS encoding, made while
    it is computed, and the fitted ones after it) as one: the rows in ``names``' order, the caller's
    encodings (rows of ``early`` that are no family) last, as one call would have made them."""
    table = {r["encoding"]: r for r in (*early[0], *fitted[0])}
    ordered = [table.pop(x) for x in names if x in table]
    return (
        ordered + list(table.values()),
        [*early[1], *fitted[1]],
        {**early[2], **fitted[2]},
        {**early[3], **fitted[3]},
    )
