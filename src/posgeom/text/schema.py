"""One schema for score rows and rank curves, and the conventions text, written once.

A **score row** is the dict :func:`posgeom.scores.table.score_encoding` returns: one key per
registered score (:func:`posgeom.scores.available`; each score's record has its column and its
convention, :func:`score_conventions`), the extras a score adds (``violation_ci``,
``violation_exact``; ``separation_kind`` and ``<key>_ci`` when sampled), optional
``<key>_ci = [low, high]`` bootstrap intervals, plus the row's ``encoding`` name and, in a
comparison, its ``description`` and ``parameters``. The default scores:

==================  ====================================================================
key                 meaning (``delta`` = encoding distances, ``D`` = Hellinger target)
==================  ====================================================================
``paper``           ``sum_{i<j} (delta_ij - D_ij)^2 / sum_{i<j} D_ij^2`` (no rescaling)
``stress1``         Kruskal ``sqrt(sum (delta - D)^2 / sum delta^2)``
``scale_optimal``   paper stress of ``alpha* delta``, ``alpha* = sum delta D / sum delta^2``
``raw``             ``sum_{i<j} (delta - D)^2``
``scale``           ``alpha*``
``violation_rate``  share of triples ``(i, {j, k})`` ordered the other way (``violation_ci``)
``separation``      ``min_{i != j} delta_ij``
==================  ====================================================================

A **rank-curve row** (rank-``r`` MDS encoding ``P = A B^T``): ``rank``, every registered score
with ``rank_curve`` (all but the separation), ``explained_variance``, ``parameters = r (n + d)``,
``full_parameters = n d``, ``parameter_reduction = 1 - r (n + d) / (n d)``.

The tables' columns are read from the registry when used (:func:`score_columns`,
:func:`rank_columns`, :func:`layer_columns`). This module imports only numpy at top level: the
pipeline, the comparison and the renderers all read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from posgeom._registry_names import registry_getattr

__all__ = [
    "CONVENTIONS",
    "HEAD_COLUMNS",
    "HOW_TO_READ",
    "Column",
    "conventions",
    "heads_by_family",
    "interval",
    "layer_columns",
    "rank_columns",
    "score_columns",
    "score_conventions",
    "score_rows",
    "summary_rows",
    "with_interval_text",
]

Column = tuple[str, str, str]  # (key, header, format spec)


def _registered(table: str) -> list[Column]:
    """The columns of every registered score shown in ``table`` (read at call time)."""
    from posgeom.scores import scores

    out: list[Column] = []
    for score in scores():
        if table in score.tables:
            key = score.key_in_layers if table == "layers" else score.name
            header = score.column[0]
            if table == "layers" and score.layer_key.startswith("stress_"):
                header = f"stress ({score.name})"
            out.append((key, header, score.column[1]))
            if table == "scores" and score.name == "scale_optimal":
                out.append(("scale_optimal_interval", "scale-optimal interval", "s"))
    return out


def score_columns() -> tuple[Column, ...]:
    """Columns of a score table: the encoding, every registered score shown in ``"scores"``
    (the scale-optimal interval text after its score), parameters, description."""
    return (
        ("encoding", "encoding", "s"),
        *_registered("scores"),
        ("parameters", "parameters", "d"),
        ("description", "description", "s"),
    )


def rank_columns() -> tuple[Column, ...]:
    """Columns of a rank curve: ``r``, every registered score shown in ``"rank"``, then the
    explained variance and the parameter counts."""
    return (
        ("rank", "r", "d"),
        *_registered("rank"),
        ("explained_variance", "explained variance", ".4f"),
        ("parameters", "parameters r(n+d)", "d"),
        ("full_parameters", "n d", "d"),
        ("parameter_reduction", "reduction", "%"),
    )


def layer_columns() -> tuple[Column, ...]:
    """Columns of a per-layer table: the layer, R^2, mean distance, every registered score shown
    in ``"layers"`` (stress kinds as ``stress_<kind>``)."""
    return (
        ("layer", "layer", "s"),
        ("variance_explained", "R^2 (position)", ".4g"),
        ("mean_distance", "mean distance", ".4g"),
        *_registered("layers"),
    )


def layer_table(
    rows: Sequence[Mapping[str, Any]], level: float | None = None
) -> tuple[list[dict[str, Any]], list[Column]]:
    """``(rows, columns)`` of a per-layer table as every surface shows it (``table.md``, the
    terminal, the report): :func:`layer_columns`, then after the stress kinds each kind's
    interval (``stress_<kind>_low/high`` as ``"[low, high]"``, ``level`` in the header) and the
    plug-in stresses where the rows have them."""
    kinds = sorted(
        {
            k[len("stress_") : -len("_low")]
            for r in rows
            for k in r
            if k.startswith("stress_") and k.endswith("_low")
        }
    )
    out = [dict(r) for r in rows]
    extra: list[Column] = []
    share = f"{level:.0%} " if level else ""
    for kind in kinds:
        key = f"stress_{kind}_interval"
        for row in out:
            lo, hi = row.get(f"stress_{kind}_low"), row.get(f"stress_{kind}_high")
            row[key] = None if lo is None or hi is None else f"[{lo:.4g}, {hi:.4g}]"
        extra.append((key, f"{kind} {share}interval", "s"))
    extra += [(f"plugin_stress_{k}", f"{k} (plug-in)", ".4g") for k in ("scale_optimal", "paper")]
    columns = list(layer_columns())
    at = 1 + max(i for i, c in enumerate(columns) if c[0].startswith(("stress_", "mean_")))
    return out, [*columns[:at], *extra, *columns[at:]]


#: ``SCORE_COLUMNS``, ``RANK_COLUMNS``, ``LAYER_COLUMNS``: the columns now (the registry is read on
#: access; import the functions to read it at each use).
__getattr__ = registry_getattr(
    __name__,
    {"SCORE_COLUMNS": score_columns, "RANK_COLUMNS": rank_columns, "LAYER_COLUMNS": layer_columns},
)


#: Per-head rows of any family with per-head geometry (``slope``: ALiBi's ``m_h``; a column shows
#: only when its rows have it).
HEAD_COLUMNS: tuple[Column, ...] = (
    ("family", "family", "s"),
    ("head", "head", "d"),
    ("slope", "slope m", ".4g"),
    ("paper", "paper stress", ".4g"),
    ("scale_optimal", "scale-optimal stress", ".4g"),
    ("violation_rate", "violation rate", ".3f"),
)


def heads_by_family(heads: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per-head rows grouped by their ``family`` (rows of folders written before the rows named
    their family are ALiBi's, the only per-head family then)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in heads:
        out.setdefault(str(row.get("family", "alibi")), []).append(dict(row))
    return out


CONVENTIONS: dict[str, str] = {
    "hellinger_chord": "D_ij = ||sqrt(mu_i) - sqrt(mu_j)||_2, range [0, sqrt 2] (the paper's Eq. 3)",
    "hellinger_normalized": "D_ij = ||sqrt(mu_i) - sqrt(mu_j)||_2 / sqrt 2, range [0, 1]",
    "noise_floor": "split-half (or bootstrap) distance between two samples of one position's "
    "distribution; a pair is trusted when D_ij is above twice its floor",
    "layer_signal": "per-position mean hidden state m_l(i), centred over positions; Euclidean "
    "distances between centred means scored against D",
    "variance_explained": "R^2_l = sum_i c_i ||m_l(i) - m_l||^2 / sum_tokens ||h_l(t) - m_l||^2",
    "layers": "layer 'embeddings' is the embedding output (token + position + type, after "
    "LayerNorm); layer k is the output of block k",
}

HOW_TO_READ: dict[str, str] = {
    "paper": "Paper stress compares distances as they are, so it depends on scale: an encoding "
    "whose distances are 10x too large scores about 81 even with the perfect shape. Use it to "
    "ask whether an encoding can be dropped in as it is.",
    "scale_optimal": "Scale-optimal stress rescales the encoding first (by alpha*), so it compares "
    "shapes only: 0 is the same geometry up to scale, 1 is no better than all positions equal. "
    "Use it to ask whether an encoding has the right shape.",
    "stress1": "Stress-1 (Kruskal) divides by the encoding's own distances: small when the "
    "encoding is large and roughly right.",
    "scale": "alpha* is the factor that best rescales the encoding onto D; far from 1 means the "
    "paper stress is mostly a scale mismatch.",
    "violation_rate": "The violation rate is about order only: the share of triples where the "
    "encoding says j is nearer to i than k while D says the opposite, a tie in the encoding counting "
    "half. 0 is perfect order, 0.5 is a coin toss (and NoPE, whose distances all tie).",
    "separation": "Separation is the smallest distance between two positions of the encoding; "
    "0 means two positions are indistinguishable (Theorem 4).",
    "parameters": "Parameters stored by the encoding: n d for a table, r (n + d) for low rank, "
    "0 for a formula.",
    "baselines": "random (Gaussian vectors) and nope (every position the same) are baselines: an "
    "encoding that does not beat them on scale-optimal stress and violation rate (both about "
    "0.5 there: random by chance, nope by ties, which count half) has no more of the corpus's "
    "geometry than chance. random often has a good scale-optimal stress and the "
    "worst paper stress: its distances are nearly all equal, which matches a flat D after "
    "rescaling but not its scale.",
    "noise": "The noise floor is the distance that sampling alone would put between two samples "
    "of one position. Pairs above twice their floor are trusted; the rest of D is noise and no "
    "encoding should be judged on it.",
    "rank_curve": "The rank curve is the stress of the rank-r MDS encoding against D: where it "
    "falls and then flattens, the rank where it flattens is how many dimensions the positional "
    "geometry has; where it rises again after a lowest rank (U-shaped), the extra coordinates "
    "fit the part of D no Euclidean map holds (the caption under each curve says which).",
    "stationarity": "Stationarity R^2 is how much of D is a function of |i - j| alone; ALiBi, RoPE "
    "and sinusoidal are such functions, so 1 - R^2 is the part they cannot fit.",
    "layers": "Per layer, R^2 is the share of hidden-state variance explained by position, and "
    "the stress compares the distances between per-position mean states with D (scale-optimal: "
    "shape; paper: shape and scale, so it grows with the norm of the hidden states).",
}


def score_conventions() -> dict[str, str]:
    """Every registered score's convention (better, what it estimates, range), by name."""
    from posgeom.scores import scores

    return {s.name: s.convention for s in scores()}


def conventions(convention: str = "chord") -> dict[str, str]:
    """The conventions block of every ``summary.json`` (Hellinger ``convention`` first, then
    every registered score's, then the rest)."""
    out = {"hellinger": convention, "hellinger_definition": CONVENTIONS[f"hellinger_{convention}"]}
    out.update(score_conventions())
    out.update({k: v for k, v in CONVENTIONS.items() if not k.startswith("hellinger_")})
    return out


def interval(row: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    """The ``[low, high]`` interval of ``row[key]`` (``row[key + "_ci"]``), or None."""
    ci = row.get(f"{key}_ci")
    if ci is None or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return None
    low, high = float(ci[0]), float(ci[1])
    return (low, high) if np.isfinite(low) and np.isfinite(high) else None


def score_rows(scores: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> list:
    """Score rows with ``encoding``: of ``{name: scores}``, or a list of rows as it is."""
    if isinstance(scores, Mapping):
        return [{"encoding": name, **s} for name, s in scores.items()]
    return list(scores)


def summary_rows(kind: str, summary: Mapping[str, Any]) -> tuple[Mapping[str, Any], list, list]:
    """``(geometry, score rows, rank curve)`` of a result's JSON summary of ``kind``: its
    ``geometry`` block for ``analyze-model`` (the target's pipeline) and for a comparison
    written before the one schema (rows in ``"table"``), else the summary itself."""
    if "table" in summary:
        return summary.get("geometry", {}), summary.get("table", []), summary.get("rank_curve", [])
    geometry = summary.get("geometry", {}) if kind == "analyze-model" else summary
    return geometry, score_rows(geometry.get("scores") or {}), geometry.get("rank_curve", [])


def with_interval_text(rows: Any) -> list[dict[str, Any]]:
    """Score rows with ``scale_optimal_interval`` = ``"[low, high]"`` (4 significant digits)
    where a row has ``scale_optimal_ci``: the text the tables show (Markdown and HTML alike)."""
    out = []
    for r in rows:
        ci = interval(r, "scale_optimal")
        out.append({**r, "scale_optimal_interval": f"[{ci[0]:.4g}, {ci[1]:.4g}]"} if ci else r)
    return out
