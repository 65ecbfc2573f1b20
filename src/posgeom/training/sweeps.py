"""Experiment grids: every encoding x seed trained into one folder, summarised and tabulated.

:func:`stress_vs_accuracy` (Section 5, SST-2) correlates final accuracy with paper and
scale-optimal stress (:func:`~posgeom.training.stats.rank_correlation`, over encoding
means and over single runs); :func:`order_necessity` runs Theorem 1's order-only task (NoPE must
stay at 50%). Both write ``runs/<encoding>-s<seed>/`` (finished runs are reused), ``results.json``,
``table.md`` and, with ``plots``, the figures of :func:`~posgeom.training.plots.plot_sweep`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.io.workfolders import WorkFolder
from posgeom.pipeline.rows import MDS_ROW
from posgeom.training.config import TrainConfig
from posgeom.training.loop import TrainResult, train
from posgeom.training.model import n_position_parameters
from posgeom.training.plots import plot_sweep
from posgeom.training.runfiles import RUN_KIND, data_inputs
from posgeom.training.stats import rank_correlation

__all__ = ["SWEEP_ENCODINGS", "order_necessity", "stress_vs_accuracy", "sweep_table"]

log = logging.getLogger("posgeom")

#: The encodings of the paper's sweeps (any of :data:`ENCODINGS` may be passed instead).
SWEEP_ENCODINGS = (
    "sinusoidal",
    "learned",
    "rope",
    "alibi",
    "nope",
    MDS_ROW,
    "low_rank_mds",
    "random",
)


def _run_grid(
    base: TrainConfig, encodings: Sequence[str], seeds: Sequence[int], folder: WorkFolder
) -> dict[str, list[TrainResult]]:
    results: dict[str, list[TrainResult]] = {}
    for enc in encodings:
        for s in seeds:
            cfg = dataclasses.replace(base, encoding=enc, seed=int(s))
            t = time.perf_counter()
            res = train(cfg, folder.sub(f"runs/{enc}-s{s}", RUN_KIND).path)
            log.info(
                "%s seed %d: eval accuracy %.4f (%.1f s)",
                enc,
                s,
                res.final.eval_accuracy,
                time.perf_counter() - t,
            )
            results.setdefault(enc, []).append(res)
    return results


def _check_grid(
    name: str, base: TrainConfig, seeds: Sequence[int], encodings: Sequence[str]
) -> tuple[list[int], list[str]]:
    """The grid's seeds (distinct non-negative integers) and encodings (distinct, each a valid
    configuration with ``base``), checked before any run trains; one-line errors."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise PosgeomError(f"{name}: seeds must be a non-empty list of integers, got {seeds!r}")
    checked = [check_int(s, "seeds[]", 0, 2**63 - 1) for s in seeds]
    if isinstance(encodings, (str, bytes)) or not isinstance(encodings, Sequence) or not encodings:
        raise PosgeomError(
            f"{name}: encodings must be a non-empty list of names, got {encodings!r}"
        )
    for label, values in (("seeds", checked), ("encodings", list(encodings))):
        if len(set(values)) != len(values):
            raise PosgeomError(f"{name}: {label} {values} repeat a value; give each once")
    for enc in encodings:
        dataclasses.replace(base, encoding=enc).validate()
    return checked, list(encodings)


def _summarise(results: dict[str, list[TrainResult]]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for enc, runs in results.items():
        acc = np.array([r.final.eval_accuracy for r in runs])
        rows[enc] = {
            "seeds": [r.config.seed for r in runs],
            "accuracy": acc.tolist(),
            "accuracy_mean": float(acc.mean()),
            "accuracy_sd": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
            "stress_paper": [r.final.stress["paper"] for r in runs],
            "stress_scale_optimal": [r.final.stress["scale_optimal"] for r in runs],
            "stress_paper_init": [r.history[0].stress["paper"] for r in runs],
            "stress_scale_optimal_init": [r.history[0].stress["scale_optimal"] for r in runs],
            "separation": [r.final.separation for r in runs],
            "separation_min_over_epochs": [min(h.separation for h in r.history) for r in runs],
            "violation_rate": [r.final.violation_rate for r in runs],
            "position_parameters": n_position_parameters(runs[0].model),
            "curves": [[h.as_dict() for h in r.history] for r in runs],
        }
    return rows


def _correlations(rows: dict[str, dict[str, Any]], n_boot: int) -> dict[str, Any]:
    """Spearman rho of accuracy vs paper / scale-optimal stress: encoding means, single runs."""
    corr: dict[str, Any] = {}
    names = list(rows)
    acc = [rows[e]["accuracy"] for e in names]
    for kind in ("paper", "scale_optimal"):
        st = [rows[e][f"stress_{kind}"] for e in names]
        c = rank_correlation(st, acc, n_boot=n_boot, seed=0)
        flat_s = [v for g in st for v in g]
        flat_a = [v for g in acc for v in g]
        per_run = rank_correlation(
            [[v] for v in flat_s], [[v] for v in flat_a], n_boot=0, n_perm=20_000, seed=0
        )
        corr[kind] = {
            "encoding_means": c.as_dict(),
            "single_runs": {"rho": per_run.rho, "p_value": per_run.p_value, "n": per_run.n_groups},
        }
    return corr


def _experiment(
    name: str,
    task: str,
    output: str | os.PathLike,
    base: TrainConfig,
    encodings: Sequence[str],
    seeds: Sequence[int],
    plots: bool,
    n_boot: int | None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Train the grid, summarise it (with correlations unless ``n_boot`` is None), write files
    into the work folder ``output`` of kind ``experiment`` (new, empty or an experiment posgeom
    wrote; ``overwrite`` deletes its files, only those, first)."""
    base = base.validate()
    if base.task != task:
        raise PosgeomError(f"{name} trains on task={task!r}")
    seeds, encodings = _check_grid(name, base, seeds, encodings)
    folder = WorkFolder.open(
        output,
        kind="experiment",
        inputs=data_inputs(base),
        restart=overwrite,
        option="experiment folder",
    )
    with folder:  # one writer for the whole grid
        t0 = time.perf_counter()
        rows = _summarise(_run_grid(base, encodings, seeds, folder))
        summary: dict[str, Any] = {
            "config": dataclasses.asdict(base),
            "encodings": list(rows),
            "seeds": list(seeds),
            "per_encoding": rows,
        }
        if n_boot is not None:
            summary["spearman_accuracy_vs_stress"] = _correlations(rows, n_boot)
        summary["seconds"] = time.perf_counter() - t0
        folder.write_json("results.json", summary, indent=1)
        folder.write_text("table.md", sweep_table(summary))
        if plots:
            plot_sweep(summary, folder)
    return summary


def stress_vs_accuracy(
    output: str | os.PathLike,
    *,
    base: TrainConfig | None = None,
    encodings: Sequence[str] = SWEEP_ENCODINGS,
    seeds: Sequence[int] = (0, 1, 2),
    n_boot: int = 2000,
    plots: bool = True,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Section 5: train ``base`` on SST-2 with every encoding and seed; correlate stress, accuracy.

    Writes ``runs/<encoding>-s<seed>/`` (one :func:`train` folder each), ``results.json`` (per
    encoding: accuracies, stresses, separations, curves; the Spearman correlations of accuracy
    with paper and scale-optimal stress, over encoding means and over single runs), ``table.md``
    and, with ``plots``, ``accuracy_vs_stress.png`` and ``curves.png``. ``overwrite``: start a
    grid posgeom wrote in ``output`` over (its files only; see :func:`_experiment`).
    """
    return _experiment(
        "stress_vs_accuracy",
        "sst2",
        output,
        base or TrainConfig(task="sst2", epochs=5),
        encodings,
        seeds,
        plots,
        n_boot,
        overwrite,
    )


def order_necessity(
    output: str | os.PathLike,
    *,
    base: TrainConfig | None = None,
    encodings: Sequence[str] = SWEEP_ENCODINGS,
    seeds: Sequence[int] = (0, 1, 2),
    plots: bool = True,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Theorem 1: the order-only task (paired samples) for every encoding and seed.

    NoPE must stay at 50% (every bag of tokens comes with both labels); writes ``results.json``,
    ``table.md`` and ``curves.png`` like :func:`stress_vs_accuracy`.
    """
    return _experiment(
        "order_necessity",
        "order",
        output,
        base or TrainConfig(task="order", max_len=16, epochs=5),
        encodings,
        seeds,
        plots,
        None,
        overwrite,
    )


def sweep_table(summary: dict[str, Any]) -> str:
    """Markdown table of a :func:`stress_vs_accuracy` (or :func:`order_necessity`) summary."""
    lines = [
        "| encoding | accuracy mean | sd | paper stress | scale-optimal stress | separation "
        "(final / min over epochs) | violation rate | trained position params |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for enc, r in summary["per_encoding"].items():
        lines.append(
            f"| {enc} | {r['accuracy_mean']:.4f} | {r['accuracy_sd']:.4f} | "
            f"{np.mean(r['stress_paper']):.4g} | {np.mean(r['stress_scale_optimal']):.4g} | "
            f"{np.mean(r['separation']):.3g} / {np.min(r['separation_min_over_epochs']):.3g} | "
            f"{np.mean(r['violation_rate']):.3f} | {r['position_parameters']} |"
        )
    corr = summary.get("spearman_accuracy_vs_stress")
    if corr:
        lines += [
            "",
            "| stress kind | Spearman rho (encoding means) | 95% bootstrap CI | "
            "exact permutation p | rho (single runs) | p (single runs) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for kind, c in corr.items():
            m, r = c["encoding_means"], c["single_runs"]
            lines.append(
                f"| {kind} | {m['rho']:.3f} | [{m['ci_low']:.3f}, {m['ci_high']:.3f}] "
                f"| {m['p_value']:.3f} | {r['rho']:.3f} | {r['p_value']:.3f} |"
            )
    return "\n".join(lines) + "\n"
