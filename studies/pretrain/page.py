"""``python -m studies.pretrain page RESULTS``: docs/EVIDENCE.md, its figures and the per-run
records from the grid's results folder (quick: nothing is trained)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.encodings.mds import MDSFamily
from posgeom.io._atomic import atomic_write_text
from studies._common import DOCS, read_jsonl
from studies.pretrain import analysis as an

OUT = DOCS / "evidence"
PAGE = DOCS / "EVIDENCE.md"
RECORDS = OUT / "pretrain_runs.jsonl"
PILOT = OUT / "pretrain_pilot.json"


def _ci(c: dict[str, Any]) -> str:
    return f"{c['rho']:+.2f} [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]"


def _verdict(c: dict[str, Any]) -> str:
    """Ranks: the seed interval excludes 0 and the permutation test across encodings is at 5%."""
    if c["ci_low"] > 0 and c["p_value"] < 0.05:
        return "stress ranks the encodings' loss"
    if c["ci_high"] < 0 and c["p_value"] < 0.05:
        return "stress ranks them in reverse (lower stress, higher loss)"
    if c["ci_low"] > 0 or c["ci_high"] < 0:
        return "the seed interval excludes 0, but across encodings the ranking is not significant"
    return "stress does not rank them"


def _summary(stats: dict) -> list[str]:
    """The answer in words, its numbers read from ``stats``."""
    heads = {k: s["correlations"][an.HEADLINE] for k, s in stats.items()}
    ranked = [f"{k[0]} {k[1]}" for k, c in heads.items() if c["ci_low"] > 0 and c["p_value"] < 0.05]
    rhos = [c["rho"] for c in heads.values()]
    diffs = [s["mds_init_vs_learned"]["mean"] for s in stats.values() if s["mds_init_vs_learned"]]
    mds_ranks = [s["first_choice"]["ranks_by_loss"].get(MDSFamily.name) for s in stats.values()]
    best = sorted({s["first_choice"]["best_by_loss"] for s in stats.values()})
    lines = [
        f"**No, not at this budget.** Across {len(stats)} corpus x objective cells the "
        f"scale-optimal stress computed before training ranks the encodings' validation loss "
        f"significantly in {len(ranked)} ({', '.join(ranked) or 'none'}); its Spearman rho runs "
        f"from {min(rhos):+.2f} to {max(rhos):+.2f}. The encoding of zero stress, the MDS table, "
        f"ranks {', '.join(str(r) for r in mds_ranks if r)} of 10 by loss, and initialising the "
        f"learned table from it changes the loss by "
        f"{min(diffs):+.4f} to {max(diffs):+.4f} nats/byte against the default initialisation. "
        f"The best encoding is {', '.join(best)}.",
        "",
    ]
    others = [
        f"{label} on {k[0]} {k[1]} ({_ci(c)}, p = {c['p_value']:.3f})"
        for k, s in stats.items()
        for label, c in s["correlations"].items()
        if label != an.HEADLINE and c["ci_low"] > 0 and c["p_value"] < 0.05
    ]
    lens = [s["length"] for s in stats.values() if s["length"]]
    lines += [
        "Other pre-training scores: "
        + (f"significant only for {'; '.join(others)}." if others else "none is significant.")
        + " Length generalisation: lag stress at 4L against the loss past L of the "
        f"{len(lens[0]['arms']) if lens else 0} encodings that run there: Spearman "
        + ", ".join(f"{g['scale_optimal']['rho']:+.2f}" for g in lens)
        + " (scale-optimal, one per cell); the best past L is "
        + ", ".join(g["best"] for g in lens)
        + ".",
        "",
    ]
    ctl = [s["control"] for s in stats.values() if s.get("control")]
    if ctl:
        lines += [
            "What the data show instead: the encodings that act on relative offsets (RoPE, ALiBi, "
            "T5) are the first three in every cell; the learned and MDS tables stay within 0.03 "
            "nats/byte of NoPE and the sinusoidal one within 0.07 (except masked code, where "
            "NoPE, blind to order, is 0.1 worse than every table); at "
            "their default scales the MDS and learned tables are 50 to 80 times shorter than the "
            "token embeddings (median row norms 0.10 and 0.16 against 8.0 at width 64, code "
            "corpus). Scaled up to the token "
            "embeddings' norm (the control `mds_scaled`, the same geometry and stress shape) the "
            "MDS table trains worst or next to worst (rank "
            f"{', '.join(str(c['rank']) for c in ctl)} of {ctl[0]['n_arms']}). The positional "
            "geometry of the bytes after a line start is not what limits these models.",
            "",
        ]
    return lines


def _answer(stats: dict, grid: dict) -> list[str]:
    lines = ["## The answer", "", *_summary(stats)]
    for (corpus, obj), s in stats.items():
        c = s["correlations"][an.HEADLINE]
        best = max(s["correlations"].items(), key=lambda kv: kv[1]["rho"])
        lines.append(
            f"- **{corpus}, {obj}**: {_verdict(c)}. Spearman of the scale-optimal stress "
            f"computed before training with the validation loss {_ci(c)} over "
            f"{len(s['arms'])} encodings x {len(s['seeds'])} seeds (permutation p = "
            f"{c['p_value']:.3f}); the score that ranks best here is {best[0]}, "
            f"{_ci(best[1])} (p = {best[1]['p_value']:.3f}); best encoding "
            f"{s['first_choice']['best_by_loss']}."
        )
    return [*lines, ""]


def _widths(stats: dict) -> list[str]:
    """Why an interval is wide, and the seeds a 0.6-wide one would roughly need."""
    lines = ["## Interval widths", ""]
    for (corpus, obj), s in stats.items():
        c = s["correlations"][an.HEADLINE]
        width = c["ci_high"] - c["ci_low"]
        arms = s["arms"]
        sd = float(
            np.sqrt(
                np.mean([np.var([r["validation_loss"] for r in v], ddof=1) for v in arms.values()])
            )
        )
        m = np.sort(list(an.means(arms, "validation_loss").values()))
        gap = float(np.median(np.diff(m)))
        k = len(s["seeds"])
        text = (
            f"- {corpus}, {obj}: width {width:.2f}; seed standard deviation of the loss "
            f"{sd:.4f}, median gap between neighbouring encodings {gap:.4f} nats/byte."
        )
        if width > 0.6:
            need = int(np.ceil(k * (width / 0.6) ** 2))
            text += (
                f" Wider than 0.6: neighbouring encodings lie within seed noise of each "
                f"other, so resampled seeds reorder them; if the width shrinks as "
                f"1/sqrt(seeds), about {need} seeds (x{need / k:.1f} the CPU time) would "
                f"reach 0.6."
            )
        lines.append(text)
    lines += [
        "",
        "The interval is over seeds only (the encodings are fixed). With 10 encodings the "
        "permutation test needs |rho| of about 0.65 for p < 0.05, whatever the seeds.",
        "",
    ]
    return lines


def _cell_table(s: dict[str, Any]) -> list[str]:
    arms = s["arms"]
    rows = [
        "| encoding | validation loss (mean ± sd) | test loss | scale-optimal stress | paper "
        "stress | lag stress (s.-o.) | worst per-position | violation rate | s.-o. stress "
        "after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    loss = an.means(arms, "validation_loss")
    for a in sorted(arms, key=loss.get):
        v = np.array([r["validation_loss"] for r in arms[a]])
        m = {lab: an.means({a: arms[a]}, p)[a] for lab, p in an.SCORES}
        rows.append(
            f"| {a} | {v.mean():.4f} ± {v.std(ddof=1) if v.size > 1 else 0:.4f} | "
            f"{an.means({a: arms[a]}, 'test_loss')[a]:.4f} | "
            f"{m['scale-optimal stress']:.3g} | {m['paper stress']:.3g} | "
            f"{m['lag stress, scale-optimal']:.3g} | {m['worst per-position stress']:.3g} | "
            f"{m['monotonicity violation rate']:.3f} | "
            f"{m['scale-optimal stress after training']:.3g} |"
        )
    return rows


def _corr_table(s: dict[str, Any]) -> list[str]:
    rows = [
        "| score (before training unless said) | Spearman with validation loss [95% CI] | "
        "CI width | permutation p |",
        "|---|---:|---:|---:|",
    ]
    for label, c in s["correlations"].items():
        rows.append(
            f"| {label} | {_ci(c)} | {c['ci_high'] - c['ci_low']:.2f} | {c['p_value']:.3f} |"
        )
    t = s["test_correlation"]
    rows.append(
        f"| scale-optimal stress, against **test** loss | {_ci(t)} | "
        f"{t['ci_high'] - t['ci_low']:.2f} | {t['p_value']:.3f} |"
    )
    return rows


def _extras(s: dict[str, Any]) -> list[str]:
    out = []
    d = s["mds_init_vs_learned"]
    if d:
        out.append(
            f"- MDS-initialised minus default learned table, validation loss per seed "
            f"{', '.join(f'{x:+.4f}' for x in d['differences'])}: mean {d['mean']:+.4f} nats, "
            f"95% t interval [{d['t_low']:+.4f}, {d['t_high']:+.4f}] (seed bootstrap "
            f"[{d['boot_low']:+.4f}, {d['boot_high']:+.4f}])."
        )
    f = s["first_choice"]
    ranks = ", ".join(f"{a} ranks {r} of {f['n_arms']}" for a, r in f["ranks_by_loss"].items())
    out.append(
        f"- Lowest stress before training: {', '.join(f['by_stress'])}; by validation loss "
        f"{ranks}; the best is {f['best_by_loss']}."
    )
    ctl = s.get("control")
    if ctl:
        vs = "; ".join(
            f"minus {b} {d['mean']:+.4f} [{d['t_low']:+.4f}, {d['t_high']:+.4f}]"
            for b, d in ctl["vs"].items()
            if d
        )
        out.append(
            f"- Control, the MDS table rescaled to the token embeddings' row norm (mds_scaled, "
            f"same stress shape as mds): validation loss {ctl['loss']:.4f}, rank {ctl['rank']} of "
            f"{ctl['n_arms']}; paired by seed, {vs} (95% t intervals)."
        )
    g = s["length"]
    if g:
        out.append(
            f"- Length generalisation ({', '.join(g['arms'])}): lag stress at 4L against the loss "
            f"past L in 4L windows: scale-optimal {_ci(g['scale_optimal'])} (p = "
            f"{g['scale_optimal']['p_value']:.3f}), paper {_ci(g['paper'])}; best past L: "
            f"{g['best']}."
        )
    return out


def _figures(stats: dict) -> list[str]:
    """One row per corpus and objective: mean training-loss curves per encoding (left), the
    scale-optimal stress before training against the validation loss (right; bars: the seed
    standard deviation of the stress, two standard errors of the loss)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posgeom.training.lm import ARMS

    colour = {a: plt.get_cmap("tab20")(i % 20) for i, a in enumerate(ARMS)}
    keys = list(stats)
    fig, axes = plt.subplots(len(keys), 2, figsize=(11, 3.4 * len(keys)), squeeze=False)
    for row, key in enumerate(keys):
        arms = stats[key]["arms"]
        ax = axes[row, 0]
        for a, runs in sorted(arms.items()):  # the mean over seeds of each logged mean
            curve = np.mean([[p[1] for p in r["train_curve"]] for r in runs], axis=0)
            steps = [p[0] for p in runs[0]["train_curve"]]
            ax.plot(steps, curve, label=a, lw=1, color=colour[a])
        ax.set(title=f"{key[0]}, {key[1]}", xlabel="step", ylabel="train loss (nats/byte)")
        ends = [ln.get_ydata() for ln in ax.get_lines()]
        ax.set_ylim(min(e.min() for e in ends) - 0.05, max(e[-1] for e in ends) + 0.6)
        ax.legend(fontsize=6, ncol=2)
        ax = axes[row, 1]
        for a, runs in sorted(arms.items()):
            x = np.array([an.get(r, an.SCORES[1][1]) for r in runs])
            y = np.array([r["validation_loss"] for r in runs])
            se = y.std(ddof=1) / np.sqrt(y.size) if y.size > 1 else 0.0
            ax.errorbar(
                x.mean(),
                y.mean(),
                xerr=x.std(),
                yerr=2 * se,
                fmt="o",
                ms=4,
                capsize=2,
                color=colour[a],
            )
            ax.annotate(a, (x.mean(), y.mean()), fontsize=6)
        c = stats[key]["correlations"][an.HEADLINE]
        ax.set(
            xlabel="scale-optimal stress before training",
            ylabel="validation loss",
            title=f"Spearman {_ci(c)}, p = {c['p_value']:.3f}",
        )
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "pretrain_curves_and_scatter.png", dpi=100)
    plt.close(fig)
    return ["![loss curves and stress vs loss](evidence/pretrain_curves_and_scatter.png)", ""]


def _coverage(every: list[dict], grid: dict) -> list[str]:
    records = [r for r in every if r["arm"] not in an.CONTROLS]
    n_control = len(every) - len(records)
    planned = len(grid["arms"]) * len(grid["objectives"]) * len(grid["seeds"])
    planned *= len(grid["corpora"])
    per_cell = len(grid["arms"]) * len(grid["seeds"])
    have = Counter((r["corpus"], r["objective"]) for r in records)
    missing = [
        f"{c['name']} {o} ({have[c['name'], o]} of {per_cell} runs)"
        for o in grid["objectives"]
        for c in grid["corpora"]
        if have[c["name"], o] < per_cell
    ]
    secs = np.array([r["train_seconds"] for r in records])
    run = grid["run"]
    lines = [
        "## What ran",
        "",
        f"{len(records)} of the {planned} planned runs ({len(grid['arms'])} encodings x "
        f"{len(grid['corpora'])} corpora x {len(grid['objectives'])} objectives x "
        f"{len(grid['seeds'])} seeds) have finished"
        + (
            f"; incomplete: {', '.join(missing)} (a cell enters the analysis with the seeds every "
            "encoding has finished)."
            if missing
            else "."
        )
        + (f" The control mds_scaled adds {n_control} runs." if n_control else ""),
        f"Model: byte-level Transformer, width {run['d_model']}, {run['n_layers']} layers, "
        f"{run['n_heads']} heads, context L = {run['context']}; AdamW, peak lr {run['lr']}, "
        f"{run['steps']} steps of {run['batch']} windows ({run['steps'] * run['batch'] * run['context']:,} "
        f"training bytes per run, the same windows in the same order for every encoding of a "
        f"seed, the same body weights); evaluation on {run['eval_windows']} fixed windows per "
        f"split. Training took {np.median(secs):.0f} s per run (median, one thread of a shared "
        f"2-core machine; Python {grid.get('python', '?')}, torch {records[0]['torch']}).",
        "",
    ]
    return lines


def _pilot() -> list[str]:
    if not PILOT.exists():
        return []
    p = json.loads(PILOT.read_text())
    lines = [
        "## Pilot",
        "",
        p["text"],
        "",
        "| encoding | validation loss per seed | mean |",
        "|---|---|---:|",
    ]
    for arm, vals in p["losses"].items():
        lines.append(f"| {arm} | {', '.join(f'{v:.4f}' for v in vals)} | {np.mean(vals):.4f} |")
    return [*lines, ""]


def write_page(results: str | Path, *, control: str | Path | None = None) -> None:
    """EVIDENCE.md, the figure and the records from ``results`` (the module docstring);
    ``control``: the results folder of the ``mds_scaled`` control, whose records join."""
    results = Path(results)
    records = read_jsonl(results / "records.jsonl")
    if control is not None:
        records += read_jsonl(Path(control) / "records.jsonl")
    if not records:
        raise SystemExit(f"{results}/records.jsonl holds no finished run yet")
    grid = json.loads((results / "grid.json").read_text())
    stats = an.analyse(records)
    lines = [
        "# Evidence: does stress computed before training predict what a model reaches?",
        "",
        "Issue 34. Regenerate with `python -m studies.pretrain page RESULTS` from the grid's "
        "results folder, adding `--control CONTROL` for the control's folder "
        "(`python -m studies.pretrain run RESULTS --resume` continues the grid; the grid records "
        "its corpus paths, so a resume from another checkout sets `POSGEOM_DATA` to the data "
        "folder the grid read). The results folders are not committed; every run's record is, "
        "in docs/evidence/pretrain_runs.jsonl.",
        "",
        *_answer(stats, grid),
        *_coverage(records, grid),
        *_pilot(),
        *_widths(stats),
        *_figures(stats),
    ]
    lines += [
        "## Limits",
        "",
        "Small models (width 64, 2 layers) after 300 steps: the training curves are still "
        "falling, most steeply for RoPE and ALiBi under the masked objective, so a longer budget "
        "may reorder the encodings (`--scale gpu` is the same grid at width 256, 4 layers, context "
        "128 and 3,000 steps; no GPU was available today). Byte-level tokens, context 64, windows "
        "that start at line starts; the corpus geometry is that of those windows. The stress of the "
        "relative encodings is computed from their positional geometry (RoPE's rotations, ALiBi's "
        "best head, T5's initial bias table), which is not how they act on attention. The LaTeX "
        "and prose splits are by 64 KiB document blocks of a few files (three novels, two Stacks "
        "chapters), the code split by file.",
        "",
    ]
    for key, s in stats.items():
        lines += [
            f"## {key[0]}, {key[1]}",
            "",
            *_cell_table(s),
            "",
            *_corr_table(s),
            "",
            *_extras(s),
            "",
        ]
    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RECORDS, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    atomic_write_text(PAGE, "\n".join(lines).rstrip() + "\n")
    print(f"wrote {PAGE}, {RECORDS} ({len(records)} runs) and the figure")
