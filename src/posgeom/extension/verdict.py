"""The words of an extension result, from its stored numbers: the one ranking its table follows
(:func:`ranking_name`: the measured loss, else the recommendation's rule, else the lag stress),
whether the corpus separated the strategies (:func:`corpus_lines`: their half-sample 95%
lag-stress intervals overlap when ``max low <= min high``) and whether the ranking reads it,
where the recommendation landed among the measured strategies (:func:`measured_lines`: its place,
1 = lowest loss, and its loss minus the lowest per window), and how far the corpus's dependence
reaches. No line names a "best" other than the recommendation."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.reports.extend_parts import measured_key

__all__ = [
    "CORPUS_RULES",
    "corpus_lines",
    "dependence_line",
    "heldout_note",
    "measured_lines",
    "ranking_name",
]

#: the ranking rules that read the corpus (the others read only frequencies / weights)
CORPUS_RULES = ("lag stress (corpus)", "corpus + model")

_OUTCOMES = {
    "beyond_loss": "measured loss past L0 (--measure)",
    "within_loss": "measured in-window loss (--measure quick: positions 1 .. L0-1, not the loss "
    "past L0)",
}


def ranking_name(result: Any) -> str:
    """The one rule the table's rows follow (module docstring)."""
    key = measured_key(result.measurements)
    if key is not None:
        rec = result.recommendation
        after = f"; unmeasured rows after, by {rec['ranking']}" if rec else ""
        return _OUTCOMES[key] + after
    if result.recommendation:
        return str(result.recommendation["ranking"])
    return f"lag stress ({result.rank_by})"


def corpus_lines(result: Any) -> list[str]:
    """Whether the corpus separated the strategies (intervals) and whether the ranking reads it."""
    key = result.rank_by
    rows = [r for r in result.rows if r.scores.get(f"{key}_ci")]
    lines = []
    by = (result.recommendation or {}).get("ranked_by")
    if by is not None:
        reads = (
            "reads the corpus (its lag stress)"
            if by in CORPUS_RULES
            else "reads no corpus statistic: the table's order is the same on any text"
        )
        lines.append(f"the ranking rule {by} {reads}")
    if len(rows) < 2:
        lines.append(
            "no lag-stress intervals (--replicates 0): whether the corpus separates the "
            "strategies is not measured"
        )
        return lines
    lo = [r.scores[f"{key}_ci"][0] for r in rows]
    hi = [r.scores[f"{key}_ci"][1] for r in rows]
    low = min(rows, key=lambda r: r.scores[key])
    top = max(rows, key=lambda r: r.scores[key])

    def said(r: Any) -> str:
        a, b = r.scores[f"{key}_ci"]
        return f"{r.name} {r.scores[key]:.4g} [{a:.4g}, {b:.4g}]"

    if max(lo) <= min(hi):
        lines.append(
            f"the corpus did not matter: the lag-stress ({key}) intervals of all {len(rows)} "
            f"strategies overlap (from {said(low)} to {said(top)}); this text does not tell "
            "them apart"
        )
        return lines
    ahi = low.scores[f"{key}_ci"][1]
    apart = [r for r in rows if r.scores[f"{key}_ci"][0] > ahi]
    lines.append(
        f"the corpus separates strategies: {said(low)} lies below the intervals of "
        f"{len(apart)} of {len(rows)} (up to {said(top)}, {top.scores[key] - low.scores[key]:.3g} "
        "higher); the rest overlap it"
    )
    return lines


def measured_lines(result: Any) -> list[str]:
    """Which outcome was measured, where the recommendation landed and what was held out."""
    m = result.measurements
    key = measured_key(m)
    if key is None:
        return []
    rows = sorted((r for r in m["strategies"] if r.get(key) is not None), key=lambda r: r[key])
    what = "loss past L0" if key == "beyond_loss" else "in-window loss only (not the loss past L0)"
    pick = result.recommended.name
    names = [r["name"] for r in rows]
    head = (
        f"measured ({what}, {m['windows']} window(s) of {m['window_length']} tokens): lowest "
        f"{rows[0]['name']} {rows[0][key]:.4f}"
    )
    if pick in names:
        me = rows[names.index(pick)]
        head += (
            f"; the recommended {pick} placed {names.index(pick) + 1} of {len(rows)} "
            f"({me[key]:.4f}, {me[key] - rows[0][key]:+.4f} against the lowest"
            + _spread(me, rows[0], key)
            + ")"
        )
    else:
        head += f"; the recommended {pick} was not measured"
    lines = [head]
    if key == "within_loss":
        lines.append(
            "the recommendation's record is about the loss past L0, which --measure quick does "
            "not measure: run --measure (full) for that outcome"
        )
    if m.get("heldout"):
        lines.append(str(m["heldout"]))
    return lines


def _spread(me: dict, low: dict, key: str) -> str:
    """``; per window min .. max`` of the difference, when there are per-window losses."""
    per = "window_beyond_loss" if key == "beyond_loss" else "window_within_loss"
    a, b = me.get(per), low.get(per)
    if not a or not b or len(a) != len(b) or len(a) < 2 or None in (*a, *b):
        return ""
    d = np.asarray(a, float) - np.asarray(b, float)
    return f"; per window {d.min():+.4f} .. {d.max():+.4f}"


def dependence_line(result: Any) -> str | None:
    """How far the corpus's dependence reaches, and the later lags still above noise."""
    dep = result.lag_geometry.dependence
    reach, top = dep.longest_signal_lag, int(result.lag_geometry.lags[-1])
    if reach >= top:
        return None
    lags = np.asarray(result.lag_geometry.lags)
    later = lags[(lags > reach) & np.asarray(dep.signal, bool)]
    isolated = (
        f"; {later.size} later lag(s) of {int(np.count_nonzero(lags > reach))} are above it "
        f"too (up to lag {int(later.max())}), not a continuous signal"
        if later.size
        else ""
    )
    return (
        f"the corpus shows token dependence above its noise level at every lag up to {reach} "
        f"(of {top}, at {result.lag_geometry.counts.classes.kind} classes){isolated}: the score "
        "judges what a strategy does to short lags and to phases never seen in training "
        "(column 'unseen phases'), not long-range use"
    )


def heldout_note(docs: list, held: list, fraction: float | None) -> str:
    """What ``--measure`` holds out of the lag geometry, in words (``fraction``: the share cut
    from every document; None: windows from ``--heldout`` files)."""
    geo, out = sum(d.size for d in docs), sum(d.size for d in held)
    if fraction is None:
        return (
            f"--measure reads its windows from --heldout ({out} tokens); the lag geometry reads "
            f"the whole corpus ({geo} tokens)"
        )
    return (
        f"--measure holds out the last {fraction:.0%} of every document ({out} tokens) for its "
        f"windows; the lag geometry reads the other {geo} tokens (without --measure it reads all "
        f"{geo + out}: its lag horizon and scores can differ)"
    )
