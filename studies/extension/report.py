"""Markdown tables of the context-extension study from ``docs/extension/analysis.json`` and the raw
JSONL beside it; :func:`write` replaces the section between the markers in ``docs/EXTENSION.md``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- bench_extension:begin -->", "<!-- bench_extension:end -->"


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _agreement_table(agreement: dict[str, Any]) -> list[str]:
    rows = [
        "| score (larger = predicted better) | strategies | windows | Spearman with -loss "
        "| 95% bootstrap interval | predicted best | measured top 2 | best in top 2 |",
        "|---|---:|---:|---:|---|---|---|---|",
    ]
    for name, a in agreement.items():
        if a.get("spearman") is None:
            rows.append(f"| {name} | {a.get('n_strategies', 0)} | – | (constant) | – | – | – | – |")
            continue
        ci = a["ci95"]
        best = ", ".join(a["predicted_best"])
        if len(a["predicted_best"]) > 3:
            best = f"{len(a['predicted_best'])}-way tie"
        rows.append(
            f"| {name} | {a['n_strategies']} | {a['n_windows']} | {a['spearman']:+.2f} "
            f"| [{ci[0]:+.2f}, {ci[1]:+.2f}] | {best} | {', '.join(a['measured_top2'])} "
            f"| {'yes' if a['best_in_top2'] else 'no'} |"
        )
    return rows


def track_a_tables(out: Path, analysis: dict[str, Any]) -> list[str]:
    from studies._common import read_jsonl

    records = read_jsonl(out / "track_a.jsonl")
    windows = sorted({(r["text"], r["window"]) for r in records})
    by = {(r["strategy"], r["text"], r["window"]): r for r in records}
    names = list(dict.fromkeys(r["strategy"] for r in records))
    head = " | ".join(f"{t}#{i} past 8k / first 2k / ppl last quarter" for t, i in windows)
    lines = [
        "Mean next-token loss (nats) per window: positions 8,192-12,287 / 1-2,047, and the "
        "perplexity of positions 9,216-12,287 (the issue's reference quantity).",
        "",
        f"| strategy | rope_parameters | {head} |",
        "|---|---|" + "---|" * len(windows),
    ]
    for n in names:
        params = next(r["rope_parameters"] for r in records if r["strategy"] == n)
        shown = {k: v for k, v in params.items() if k not in ("short_factor", "long_factor")}
        if "long_factor" in params:
            shown["long_factor"] = (
                f"{params['long_factor'][0]:.3g}..{params['long_factor'][-1]:.3g}"
            )
        cells = []
        for w in windows:
            r = by.get((n, *w))
            cells.append(
                "–"
                if r is None
                else f"{r['loss_past_8k']:.3f} / {r['loss_first_2k']:.3f} / "
                f"{math.exp(r['loss_last_quarter']):.1f}"
            )
        lines.append(f"| {n} | `{json.dumps(shown)}` | " + " | ".join(cells) + " |")
    for domain, d in analysis.get("domains", {}).items():
        lines += ["", f"**Agreement, {domain}** (windows {', '.join(d['windows'])}):", ""]
        lines += _agreement_table(d["agreement"])
    return lines


def track_b_tables(analysis: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    enc = analysis.get("by_encoding", {})
    if enc:
        texts = sorted({t for v in enc.values() for by_t in v.values() for t in by_t})
        lengths = sorted({int(k) for v in enc.values() for k in v})
        lines += [
            "Mean loss (nats per byte) over all positions of the window / over positions >= 128 "
            "(beyond the trained length), mean over seeds (seeds in brackets), per test text and "
            "length:",
            "",
            "| encoding / strategy | text | " + " | ".join(f"L = {n}" for n in lengths) + " |",
            "|---|---|" + "---:|" * len(lengths),
        ]
        for key in sorted(enc):
            for t in texts:
                cells = []
                for n in lengths:
                    c = enc[key].get(str(n), {}).get(t)
                    cells.append(
                        "–"
                        if c is None
                        else f"{c['loss_all']:.3f} / {_f(c['loss_beyond_128'])} ({c['seeds']})"
                    )
                lines.append(f"| {key} | {t} | " + " | ".join(cells) + " |")
    for name, d in analysis.items():
        if name == "by_encoding":
            continue
        if name.endswith("books vs stacks"):
            lines += [
                "",
                f"**{name}**: Spearman between the two domains' measured losses "
                f"{_f(d['spearman_of_measured_losses'], 2)}; best {d['best_books']} (books), "
                f"{d['best_stacks']} (Stacks).",
            ]
            continue
        lines += ["", f"**Agreement, {name}** (cells {', '.join(d['cells'])}):", ""]
        lines += _agreement_table(d["agreement"])
    return lines


def _recipe(r: dict[str, Any]) -> str:
    if not r:
        return "not recorded"
    return (
        f"{r['steps']} AdamW steps of {r['batch']}, peak lr {r['lr']:g}, {r['warmup']} warmup "
        f"steps, {r['schedule']} schedule, {r['layers']} layers of width {r['d_model']}"
    )


def tasks_tables(analysis: dict[str, Any]) -> list[str]:
    """Item 4 on the position tasks: outcomes per encoding, then the rank agreement."""
    if not analysis:
        return []
    from studies.extension.tasks import PRIMARY, TASKS, encodings

    tasks = [t for t in TASKS if t in analysis["outcomes"]]

    lines = [
        f"Recipe: {_recipe(analysis.get('recipe', {}))}. Seeds that solved the task (held-out "
        "accuracy >= 0.95); accuracy on the answer slots (mean over seeds; the seed range in "
        "brackets) at the trained length (n = 8 items) and at 2x (n = 16), and the scale-optimal "
        "stress of the trained encoding against the task's primary geometry at each length:",
        "",
        "| task (primary geometry) | encoding | seeds | solved 1x | accuracy 1x | accuracy 2x "
        "| loss 1x | stress 1x | stress 2x | CPU-s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for task in tasks:
        by = analysis["outcomes"][task]
        for enc in (e for e in encodings() if e in by):
            c = by[enc]
            lines.append(
                f"| {task} ({PRIMARY[task]}) | {enc} | {c['seeds']} | {c['solved_1x']} "
                f"| {c['accuracy_1x']:.3f} "
                f"({c['accuracy_1x_range']:.3f}) | {c['accuracy_2x']:.3f} | {c['loss_1x']:.3f} "
                f"| {c['stress_1x']:.3f} | {c['stress_2x']:.3f} | {c['cpu_s']:.0f} |"
            )
    lines += [
        "",
        "Spearman's rho of minus the stress with minus the error (1 - accuracy) or the loss, per "
        "task (bootstrap over encodings and seeds) and pooled (the mean of the per-task rhos; "
        "its interval resamples every task's encodings and seeds):",
        "",
        "| outcome | score | " + " | ".join(tasks) + " | pooled |",
        "|---|---|" + "---|" * (len(tasks) + 1),
    ]
    from studies.extension.tasks_analysis import OUTCOMES, SCORES, score_label

    labels = [score_label(*s) for s in SCORES]
    for outcome in OUTCOMES:
        block = analysis["agreement"].get(outcome, {})
        for score in labels:
            per = block[score]
            cells = []
            for task in tasks:
                a = per.get(task, {})
                cells.append(
                    "–"
                    if a.get("spearman") is None
                    else f"{a['spearman']:+.2f} [{a['ci95'][0]:+.2f}, {a['ci95'][1]:+.2f}]"
                )
            p = per["pooled"]
            pooled = (
                "–"
                if p["mean_spearman"] is None or p["ci95"] is None
                else f"{p['mean_spearman']:+.2f} [{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}]"
            )
            lines.append(f"| {outcome} | {score} | " + " | ".join(cells) + f" | {pooled} |")
    return lines


def why_tables(why: dict[str, Any]) -> list[str]:
    """The cheap predictors of the Track A losses (:mod:`studies.extension.why`)."""
    lines: list[str] = []
    flip = why.get("books vs stacks")
    if flip and flip["spearman_measured"] is not None:
        lines += [
            "",
            f"**Books vs Stacks, SmolLM2** ({len(flip['strategies'])} strategies measured on both): "
            f"Spearman between the two windows' measured losses {_f(flip['spearman_measured'], 2)} "
            f"(best {flip['best_books']} on Moby-Dick, {flip['best_stacks']} on Stacks); between "
            f"posgeom's primary scores on the two corpora {_f(flip['spearman_scores'], 2)}.",
        ]
    for domain, d in why.items():
        if domain in ("track B", "books vs stacks"):
            continue
        sp = d["spread"]
        lines += [
            "",
            f"**{domain}** (windows {', '.join(d['windows'])}; the corpus's dependence is above "
            f"its noise up to lag {d['longest_signal_lag']}; the primary score's {sp['strategies']} "
            f"point values span {sp['range_of_scores']:.4f}, its 95% intervals are "
            f"{sp['median_interval_width']:.4f} wide (median)):",
            "",
            *_agreement_table(d["agreement"]),
        ]
    for name, d in why.get("track B", {}).items():
        lines += [
            "",
            f"**Track B, {name}** (the frequency rules on data they were not formed on; cells "
            f"{', '.join(d['cells'])}):",
            "",
            *_agreement_table(d["agreement"]),
        ]
    return lines


def write(out: Path, page: Path) -> None:
    analysis = json.loads((out / "analysis.json").read_text())
    body = ["### Track A: SmolLM2-135M, 8,192 -> 12,288", ""]
    body += track_a_tables(out, analysis["track_a"])
    body += ["", "### Track B: byte-level decoders trained at 128", ""]
    body += track_b_tables(analysis["track_b"])
    body += ["", "### Item 4: stress of the trained encodings against their loss", ""]
    for name, d in analysis.get("training", {}).items():
        body += [f"**{name}** (War and Peace tail; one point per trained model):", ""]
        body += [*_agreement_table(d), ""]
    if analysis.get("tasks"):
        names = ", ".join(analysis["tasks"]["outcomes"])
        body += [f"### Item 4: position tasks ({names})", ""]
        body += [*tasks_tables(analysis["tasks"]), ""]
    if analysis.get("why"):
        body += ["### What predicts the Track A losses (cheap predictors, no forwards)"]
        body += [*why_tables(analysis["why"]), ""]
    section = "\n".join([BEGIN, *body, END])
    text = page.read_text() if page.exists() else f"# Context extension\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text += "\n" + section + "\n"
    page.write_text(text)
