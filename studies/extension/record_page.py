"""The record's page: ``record.json`` (the study's and the package's copy) and the tables between
the record markers of ``docs/EXTENSION.md`` (:mod:`studies.extension.record` builds the record,
:mod:`studies.extension.outcomes` the held-out split's predictor-by-outcome matrix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from studies._common import ROOT
from studies.extension import outcomes
from studies.extension.record import (
    FALLBACK,
    build,
    key_token_outcomes,
    windows,
    write_plane_use,
)

START, END = "<!-- record:start -->", "<!-- record:end -->"


def run(out: Path, work: Path) -> dict[str, Any]:
    """Write ``record.json`` (here and the package's copy) and the tables between the record
    markers of ``docs/EXTENSION.md``."""
    write_plane_use(out, work)
    record = build(out)
    scope = record["families"]["rope"]["transformers"]
    scope["key_token_outcomes"] = key_token_outcomes(out)
    scope["outcome_matrix"] = outcomes.matrix(out)
    text = json.dumps(record, indent=1) + "\n"
    (out / "record.json").write_text(text)
    (ROOT / "src" / "posgeom" / "extension" / "record.json").write_text(text)
    page = ROOT / "docs" / "EXTENSION.md"
    doc = page.read_text()
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        page.write_text(f"{head}{START}\n{markdown(record, out)}{END}{rest.split(END, 1)[1]}")
    return record


def _cell(s: dict[str, Any] | None) -> str:
    if not s:
        return "-"
    rho = "" if s["mean_spearman"] is None else f"{s['mean_spearman']:+.2f}"
    ci = "" if not s["ci95"] else f" [{s['ci95'][0]:+.2f}, {s['ci95'][1]:+.2f}]"
    worse = f", {len(s['worse_than_none'])} worse" if s["worse_than_none"] else ""
    return f"{rho}{ci} ({s['top2_hits']}/{s['windows']} top 2{worse})".strip()


def split_table(out: Path) -> list[str]:
    """The held-out split's measured losses: strategy x window, loss past 8k (first 2k)."""
    sets = windows(out)["held-out (split)"]
    if not sets:
        return []
    names = sorted(
        {n for w in sets.values() for n in w},
        key=lambda n: np.mean([w[n]["loss"] for w in sets.values() if n in w]),
    )
    lines = [
        "| strategy | " + " | ".join(f"{k}: past 8k (first 2k)" for k in sets) + " |",
        "|---|" + "---:|" * len(sets),
    ]
    for n in names:
        cells = [
            f"{w[n]['loss']:.3f} ({w[n]['first_2k']:.3f})" if n in w else "-" for w in sets.values()
        ]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return [
        "The held-out split's measured losses (nats per token; best first by their mean):",
        "",
        *lines,
        "",
    ]


def markdown(record: dict[str, Any], out: Path | None = None) -> str:
    """The record's tables for ``docs/EXTENSION.md``: per scope, every predictor's mean Spearman
    with minus the loss past L0 (95% interval), top-2 hits and picks worse than none per set."""
    lines = split_table(out) if out is not None else []
    for scope, entry in record["families"]["rope"].items():
        sets = [k for k, v in entry["windows"].items()]
        lines += [
            f"**{scope}** ({'; '.join(entry['models'])}). Default predictor: "
            f"{entry['default_predictor'] or 'none validated'}; fallback (YaRN x L/L0) "
            f"validated: {'yes' if entry['fallback_validated'] else 'no'}.",
            "",
            "| predictor | "
            + " | ".join(f"{k} ({len(entry['windows'][k])} windows)" for k in sets)
            + " | validated |",
            "|---|" + "---:|" * len(sets) + "---|",
        ]
        for pred, v in entry["predictors"].items():
            cells = " | ".join(_cell(v["sets"].get(k)) for k in sets)
            mark = "yes" if v["validated"] else ("needs forwards" if v["needs_forward"] else "no")
            lines.append(f"| {pred} | {cells} | {mark} |")
        fb = entry["predictors"].get(FALLBACK, {}).get("sets", {})
        places = [
            f"{w} {v['pick_place']}. ({v['pick_loss_minus_none']:+.3f})"
            for k in sets
            for w, v in fb.get(k, {}).get("per_window", {}).items()
        ]
        lines += [
            "",
            "The fallback's measured place per window (its loss minus none's, nats): "
            + "; ".join(places)
            + ".",
            "",
        ]
        for window, k in entry.get("key_token_outcomes", {}).items():
            losses = ", ".join(
                f"{n} {k['key_token_loss'][n]:.3f} ({k['loss_past_8k'][n]:.3f})"
                if k["key_tokens"]
                else f"{n} - ({k['loss_past_8k'][n]:.3f})"
                for n in sorted(k["loss_past_8k"], key=k["loss_past_8k"].get)
            )
            lines += [
                f"Key tokens (LongPPL) of {window}: {k['key_tokens']} of {k['tokens']} (mean "
                f"loss past 8k with the short context, no scaling: "
                f"{k['short_context_loss_past_8k']:.3f}); key-token loss (loss past 8k) per "
                f"strategy: {losses}.",
                "",
            ]
        if entry.get("outcome_matrix"):
            lines += outcomes.markdown(entry["outcome_matrix"])
    return "\n".join(lines)
