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
    "with_baselines",
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
    (:meth:`~posgeom.encodings._registry.TorchSpec.describe` and ``parameter_count``, as the
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
    geometry of a :class:`~posgeom.pipeline.result.GeometryResult` ``res``.

    Returns ``(table, heads, shepard)``: one score row per encoding (with ``description`` and
    ``parameters``), the per-head rows of head families (ALiBi), and each encoding's distances at
    ``res.shepard_pairs``; the fourth element maps names to the encodings built. Encodings are built for positions ``0 .. max(kept)`` and restricted to
    the kept positions. With ``skip_unbuildable`` a family that cannot be built with these
    settings (e.g. sinusoidal at an odd width) is left out with a warning instead of raising.
    Without ``keep_encodings`` the fourth element is empty and each encoding is freed once
    scored (a long context's ``(n, d)`` tables are not all held at once).
    """
    model_dim = int(res.options["model_dim"])  # the config's width (the MDS may come later)
    rope_hd = default_rope_head_dim(model_dim, n_heads) if rope_head_dim is None else rope_head_dim
    positions = np.asarray(res.distributions.positions, dtype=np.int64)
    n = len(positions)
    # (encoding given to ctx.score, its Shepard distances, the encoding scored: restricted to
    # the kept positions)
    seen: list[tuple[Any, np.ndarray, Any]] = []
    scorer = res.scorer  # exact or sampled, the plug-in beside in the same pass

    def scored(enc: Any, given: Any = None) -> dict[str, Any]:
        s = {k: v for k, v in scorer.score(enc).items() if k != "plugin_stress1"}
        seen.append((enc if given is None else given, pair_distances(enc, res.shepard_pairs), enc))
        return s

    ctx = ComparisonContext(
        n_positions=int(positions.max()) + 1,
        n_kept=n,
        model_dim=int(model_dim),
        n_heads=int(n_heads),
        rope_head_dim=int(rope_hd),
        rope_base=float(rope_base),
        seed=seed,
        score=lambda enc: scored(_restrict(enc, positions), enc),
        score_kept=scored,
        pipeline=res,
        learned_model=learned_model,
        low_rank=int(low_rank),
    )

    table: list[dict[str, Any]] = []
    heads: list[dict[str, Any]] = []
    shepard: dict[str, np.ndarray] = {}
    built: dict[str, Any] = {}
    for k, name in enumerate(names, 1):
        log.info("scoring %s (%d/%d)", name, k, len(names))
        seen.clear()
        try:
            entry = family(name).comparison(ctx)
        except PosgeomError as exc:
            if not skip_unbuildable:
                raise
            log.warning("%s skipped: %s", name, str(exc).splitlines()[0])
            continue
        if entry is None:
            log.warning("%s skipped: %s", name, family(name).skip_reason)
            continue
        match = [(delta, enc) for given, delta, enc in seen if given is entry.encoding]
        seen.clear()
        if entry.encoding is not None and match:
            shepard[name] = match[-1][0]
            if keep_encodings:
                built[name] = match[-1][1]
        elif name in res.shepard:
            shepard[name] = res.shepard[name]
        table.append(
            {
                "encoding": name,
                "description": entry.description,
                "parameters": int(entry.parameters),
                **entry.scores,
            }
        )
        heads.extend(entry.heads)
    for name, enc in (extra_encodings or {}).items():
        desc, count = described(enc, ctx)
        table.append(
            {"encoding": str(name), "description": desc, "parameters": count} | scored(enc)
        )
        shepard[str(name)] = seen[-1][1]
        if keep_encodings:
            built[str(name)] = seen[-1][2]

    return table, heads, shepard, built


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


def with_baselines(
    result: Any,
    *,
    encodings: Sequence[str] | None = None,
    n_heads: int = 12,
    rope_head_dim: int | None = None,
    low_rank: int = 3,
    learned_model: Any = None,
) -> Any:
    """Deprecated with ``analyze_counts``: ``result`` (a
    :class:`~posgeom.pipeline.result.GeometryResult`) scoring the comparison's encodings too
    (:func:`posgeom.pipeline.analyze` scores them in the first place): the rows of :func:`default_encodings` (sinusoidal, per-head RoPE, ALiBi, T5,
    NoPE, random, MDS, low-rank MDS, MDS + SMACOF when refined; ``learned`` with
    ``learned_model``) in the comparison's order, then the encodings ``result`` already scored.
    This is what ``posgeom run``, ``geometry`` and ``demo`` report."""
    import dataclasses

    names = [
        x
        for x in (default_encodings() if encodings is None else encodings)
        if (family(x).comparison_needs is None or learned_model is not None)
        and (x != SMACOF_ROW or result.refined is not None)
    ]
    table, heads, shepard, _ = comparison_rows(
        result,
        names,
        n_heads=n_heads,
        rope_head_dim=rope_head_dim,
        low_rank=low_rank,
        learned_model=learned_model,
        seed=int(result.options.get("seed", 0)),
        skip_unbuildable=True,
        keep_encodings=False,
    )
    done = {row["encoding"] for row in table}
    rows = (*table, *(r for r in result.rows if r["encoding"] not in done))
    beside = {  # the plug-in scores of the rows, shown beside a non-plug-in estimate
        r["encoding"]: {"paper": r["plugin_paper"], "scale_optimal": r["plugin_scale_optimal"]}
        for r in table
        if "plugin_paper" in r
    }
    return dataclasses.replace(
        result,
        rows=rows,
        heads=tuple(heads),
        shepard={**result.shepard, **shepard},
        plugin_scores={**beside, **result.plugin_scores},
    )
