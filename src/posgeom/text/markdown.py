"""Markdown tables: the one renderer of score rows, rank curves and per-layer rows.

Tables are described by columns ``(key, header, format)`` (:mod:`posgeom.text.schema`); a
column whose key no row has is left out, so the same renderer serves ``run`` (no description),
``compare`` and ``analyze-model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from posgeom._errors import printable
from posgeom.text.schema import (
    Column,
    rank_columns,
    score_columns,
    score_rows,
    with_interval_text,
)

__all__ = [
    "PLUGIN_COLUMNS",
    "PLUGIN_HEADING",
    "cell",
    "markdown_table",
    "plugin_lines",
    "result_markdown",
    "sampled_note",
    "score_table",
]

#: the block of plug-in scores shown beside a non-plug-in target's
PLUGIN_COLUMNS = (
    ("encoding", "encoding", "s"),
    ("paper", "paper stress (plug-in D)", ".4g"),
    ("scale_optimal", "scale-optimal stress (plug-in D)", ".4g"),
)


def cell(value: Any, spec: str) -> str:
    """One table cell's text: ``n/a`` for a missing or non-finite number (stress-1 of NoPE is
    undefined; its JSON files hold null), the same in the terminal, tables and reports."""
    if value is None:
        return "n/a"
    if spec == "s":
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if x != x or x in (float("inf"), float("-inf")):
        return "n/a"
    if spec == "%":
        return f"{100 * x:.1f}%"
    if spec == "d":
        return f"{round(x)}"
    return format(x, spec)


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Iterable[Column]) -> list[str]:
    """Markdown lines (header and rule included) of ``rows`` in ``columns``; text left, numbers
    right-aligned."""
    cols = [c for c in columns if any(c[0] in r for r in rows)]
    lines = [
        "| " + " | ".join(h for _, h, _ in cols) + " |",
        "|" + "|".join("---" if f == "s" else "---:" for _, _, f in cols) + "|",
    ]
    for r in rows:
        # a name's line break or ESC escaped (posgeom._errors.printable), its "|" too: one row
        cells = (printable(cell(r.get(k), f)).replace("|", "\\|") for k, _, f in cols)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def score_table(scores: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines of score rows: a list of rows with ``encoding``, or ``{name: scores}``."""
    return markdown_table(with_interval_text(score_rows(scores)), score_columns())


PLUGIN_HEADING = (
    "Against the plug-in geometry (the paper's estimator, full vocabulary: another target than "
    "the verdict's):"
)


def plugin_lines(
    scores: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
) -> list[str]:
    """The block of plug-in scores shown beside an estimate's (a blank line, the heading that
    labels them as another target, the table); empty without any. ``scores``: rows with
    ``encoding``, or ``{name: scores}``."""
    rows = score_rows(scores)
    if not rows:
        return []
    return ["", PLUGIN_HEADING, "", *markdown_table(rows, PLUGIN_COLUMNS)]


def sampled_note(sample: Any) -> str:
    """The line under a sampled table: how its scores were estimated (a long context)."""
    return (
        f"Sampled: every score above is estimated from {sample.size:,} uniform triples "
        f"(seed {sample.seed}; {100 * sample.confidence:.0f}% intervals in the JSON); "
        "separation is exact for translation-invariant and 1-D encodings, an upper "
        "bound (sampled pairs) where the JSON says so."
    )


def _beside_rows(result: Any) -> list[dict[str, Any]]:
    """Rows of the plug-in scores beside a non-plug-in target (``plugin_paper``, ...)."""
    rows = []
    for r in result.rows:
        if "plugin_paper" in r:
            rows.append(
                {
                    "encoding": r["encoding"],
                    "paper": r["plugin_paper"],
                    "scale_optimal": r["plugin_scale_optimal"],
                }
            )
        elif r["encoding"] in result.plugin_scores:  # the MDS rows (mds, mds+smacof)
            rows.append({"encoding": r["encoding"], **result.plugin_scores[r["encoding"]]})
    return rows


def _noise_line(result: Any) -> list[str]:
    """The noise floor's line: from the ``(n, n)`` floor, or a long context's sampled one."""
    nf = result.noise
    if nf is None:
        return []
    if getattr(nf, "pair_floor", None) is None:  # sampled (SampledNoiseFloor)
        median_d = float(np.median(result.targets.sample.target_ij))
        lo, hi = nf.trusted_ci
        return [
            f"Noise floor ({nf.method}, {nf.n_pairs:,} sampled pairs): median pair floor "
            f"{nf.median_pair_floor:.3g} vs median D {median_d:.3g}; "
            f"{100 * nf.trusted_share:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] of pairs above "
            "twice their floor."
        ]
    iu = np.triu_indices_from(nf.pair_floor, 1)
    return [
        f"Noise floor ({nf.method}): median pair floor {nf.median_pair_floor:.3g} "
        f"vs median D {np.median(result.distances[iu]):.3g}; "
        f"{100 * nf.trusted_share:.1f}% of pairs above twice their floor."
    ]


def _head_lines(result: Any, verdict: Mapping[str, Any]) -> list[str]:
    """The settings: n, d, the convention, the target, the intervals, the samples."""
    from posgeom.text.verdict_inputs import VerdictInputs, target_phrase

    o, totals = result.options, result.distributions.totals
    vi = VerdictInputs.from_dict(verdict["inputs"])
    lines = [
        f"n = {o['n_positions']} positions, d = {o['model_dim']}, Hellinger convention: "
        f"{o['convention']} (paper stress = sum (delta - D)^2 / sum D^2 over i < j, no "
        "rescaling; scale-optimal stress after the best rescaling alpha*).",
        f"{target_phrase(vi)} (posgeom.estimate_geometry)"
        + ("; the plug-in (the paper's) is shown beside it." if _beside_rows(result) else "."),
    ]
    u = result.uncertainty
    if u:
        lines.append(
            f"Intervals: {100 * u['level']:.0f}% {u['method']} over {u['n_replicates']} "
            "bootstrap replicates of the counts, the target re-estimated on each."
        )
    if np.all(np.isfinite(totals)) and o.get("input") == "counts":
        lines.append(
            f"Samples per position: min {np.min(totals):.6g}, median {np.median(totals):.6g}."
        )
    else:
        lines.append("Input: distributions (no sampling noise).")
    return lines


def result_markdown(result: Any, summary: Mapping[str, Any]) -> str:
    """The text of a :class:`~posgeom.pipeline.result.GeometryResult` (``table.md``,
    ``comparison.md``, what the commands print): the settings, the score table, the per-head
    rows, the rank curve, the stationarity line and the verdict's line (``summary``: the
    result's JSON summary, its ``verdict`` and ``refinement``)."""
    from posgeom.text.schema import HEAD_COLUMNS, heads_by_family

    verdict = summary["verdict"]
    lines = [*_head_lines(result, verdict), *_noise_line(result), "", *score_table(result.rows)]
    if result.sampled:
        lines += ["", sampled_note(result.targets.sample)]
        skipped = summary.get("refinement", {}).get("skipped")
        if skipped:
            lines += ["", f"mds+smacof: not run. {skipped}."]
    lines += plugin_lines(_beside_rows(result))
    for fam, rows in heads_by_family(list(result.heads)).items():
        lines += ["", f"{fam}, every head:", "", *markdown_table(rows, HEAD_COLUMNS)]
    if result.rank_curve:
        lines += ["", "Rank experiment (rank-r MDS encoding P = A B^T):", ""]
        lines += markdown_table(list(result.rank_curve), rank_columns())
    lines += ["", result.stationarity.line, "", verdict["line"]]
    return "\n".join(printable(line) for line in lines) + "\n"  # a name cannot break a line
