"""``posgeom experiment pretrain``: does stress computed before training rank what small
language models reach? A resumable grid of arms x corpora x objectives x seeds.

Each run (:func:`run_one`) builds the model of one arm (:data:`posgeom.training.lm.ARMS`), scores
its position geometry against the corpus geometry of the training split before training
(:mod:`posgeom.training.pretrain_scores`), trains it (:mod:`posgeom.training.pretrain_run`),
measures its losses and scores its geometry again. Its record is
``runs/<corpus>-<objective>-<arm>-s<seed>/record.json``.

Results folder (a work folder of kind ``pretrain-grid``): ``grid.json`` (the options and the
Python version; a resume must pass the same), ``corpora/<name>.json``, ``runs/...`` and
``records.jsonl`` (every finished record, rewritten after each run). A run whose record exists is
never recomputed; an interrupted run is trained again from its start. Order: objectives, then
seeds, then corpora, then arms, so a grid cut short holds whole seeds. Scales: :data:`SCALES`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.io.jsonfiles import json_text
from posgeom.training.corpora import CorpusSplits, corpus_geometry, load_corpus
from posgeom.training.lm import ARMS, DEFAULT_ARMS, EXTENDABLE, build_lm, lm_position_geometry
from posgeom.training.pretrain_run import RunSpec, evaluate, train_lm
from posgeom.training.pretrain_scores import corpus_lag_geometry, geometry_row, lag_stress

__all__ = ["OBJECTIVES", "SCALES", "CorpusSpec", "pretrain_grid", "run_one"]

log = logging.getLogger("posgeom")
OBJECTIVES = ("causal", "masked")
SCALES: dict[str, RunSpec] = {
    "cpu": RunSpec(),
    "gpu": RunSpec(context=128, d_model=256, n_heads=8, n_layers=4, batch=64, steps=3000),
}
ESTIMATORS = ("recommended", "plugin")
GRID_KIND = "pretrain-grid"


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    """A corpus: its name, files and (optional) document block size in bytes."""

    name: str
    files: tuple[str, ...]
    block_bytes: int | None = None


class _Corpus:
    """A corpus ready for runs: its splits, both geometries at ``n = L`` and its lag geometry."""

    def __init__(self, spec: CorpusSpec, run: RunSpec) -> None:
        self.splits: CorpusSplits = load_corpus(list(spec.files), block_bytes=spec.block_bytes)
        self.geometry = {
            e: corpus_geometry(self.splits, run.context, estimator=e, model_dim=run.d_model)
            for e in ESTIMATORS
        }
        self.lag = corpus_lag_geometry(self.splits.data["train"], 4 * run.context - 1)

    def describe(self) -> dict[str, Any]:
        return {
            **self.splits.describe(),
            "geometry": {e: g.distances.tolist() for e, g in self.geometry.items()},
            "lag_geometry": {key: value.tolist() for key, value in self.lag.items()},
        }


def _scores(model: Any, arm: str, corpus: _Corpus, run: RunSpec, seed: int) -> dict[str, Any]:
    """Every geometry score of ``model``'s position module (module docstring)."""
    n, fam = run.context, ARMS[arm][0]
    out: dict[str, Any] = {}
    for est, geo in corpus.geometry.items():
        enc = lm_position_geometry(model, arm, n=n, n_heads=run.n_heads, target=geo.distances)
        out[est] = geometry_row(enc, geo.distances, seed=seed)
    out["lag"] = lag_stress(model, fam, corpus.lag, n=n, max_lag=n - 1)
    if arm in EXTENDABLE:
        out["lag_4x"] = lag_stress(model, fam, corpus.lag, n=n, max_lag=4 * n - 1)
    return out


def run_one(
    arm: str, corpus_name: str, corpus: _Corpus, objective: str, seed: int, run: RunSpec
) -> dict[str, Any]:
    """Build, score, train, measure and score again one arm (module docstring): its record."""
    import torch

    model = build_lm(
        arm,
        n=run.context,
        d=run.d_model,
        n_heads=run.n_heads,
        n_layers=run.n_layers,
        causal=objective == "causal",
        seed=seed,
        geometry=corpus.geometry["recommended"],
        vocab=257,
    ).to(run.device)
    before = _scores(model, arm, corpus, run, seed)
    trained = train_lm(model, corpus.splits, objective, seed, run)
    measures = evaluate(model, corpus.splits, objective, run, extendable=arm in EXTENDABLE)
    model.cpu()
    after = _scores(model, arm, corpus, run, seed)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {
        "arm": arm,
        "encoding": arm,
        "corpus": corpus_name,
        "objective": objective,
        "seed": seed,
        **measures,
        "before": before,
        "after": after,
        "train_curve": trained["curve"],
        "train_seconds": trained["seconds"],
        "parameters": trainable,
        "torch": torch.__version__,
    }


def _check(arms: Sequence[str], objectives: Sequence[str], seeds: Sequence[int]) -> None:
    bad = [a for a in arms if a not in ARMS] + [o for o in objectives if o not in OBJECTIVES]
    if bad:
        raise PosgeomError(
            f"unknown arm or objective {bad[0]!r}; arms: {', '.join(ARMS)}; objectives: "
            f"{', '.join(OBJECTIVES)}"
        )
    if not arms or not objectives or not seeds or min(seeds) < 0:
        raise PosgeomError("give at least one arm, objective and non-negative seed")


def _open(output: str | os.PathLike, grid: dict[str, Any], resume: bool) -> Any:
    from posgeom.io.workfolders import WorkFolder

    inputs = [f for c in grid["corpora"] for f in c["files"]]
    folder = WorkFolder.open(output, kind=GRID_KIND, inputs=inputs, option="results folder")
    path = folder.path / "grid.json"
    if folder.listed("grid.json"):
        old = json.loads(path.read_text())
        if not resume:
            raise PosgeomError(
                f"{folder.path} holds a pretrain grid; pass --resume to continue it, or choose a "
                "new folder"
            )
        if old != grid:
            key = next(k for k in sorted(set(old) | set(grid)) if old.get(k) != grid.get(k))
            raise PosgeomError(
                f"{folder.path} holds a grid of other options ({key!r} differs: the corpus "
                "files, arms, seeds, scale or Python); resume it with the options in its "
                "grid.json, or choose a new folder"
            )
    else:
        folder.write_json("grid.json", grid)
    return folder


def _records(folder: Any, plan: list[tuple[str, int, str, str]]) -> list[dict[str, Any]]:
    out = []
    for o, s, c, a in plan:
        rel = Path("runs") / f"{c}-{o}-{a}-s{s}" / "record.json"
        if (folder.path / rel).is_file():
            out.append(json.loads((folder.path / rel).read_text()))
    return out


def pretrain_grid(
    output: str | os.PathLike,
    corpora: Sequence[CorpusSpec],
    *,
    arms: Sequence[str] = DEFAULT_ARMS,
    objectives: Sequence[str] = OBJECTIVES,
    seeds: Sequence[int] = (0, 1, 2),
    scale: str = "cpu",
    overrides: Mapping[str, Any] | None = None,
    resume: bool = False,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """Run the grid into ``output`` (module docstring); the records of every finished run."""
    import torch

    if scale not in SCALES:
        raise PosgeomError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    _check(arms, objectives, seeds)
    run = dataclasses.replace(SCALES[scale], **dict(overrides or {}))
    torch.set_num_threads(threads)
    grid = {
        "python": platform.python_version(),
        "scale": scale,
        "run": dataclasses.asdict(run),
        "arms": list(arms),
        "objectives": list(objectives),
        "seeds": [int(s) for s in seeds],
        "corpora": [dataclasses.asdict(c) | {"files": list(c.files)} for c in corpora],
    }
    folder = _open(output, grid, resume)
    names = [c.name for c in corpora]
    plan = [(o, s, c, a) for o in objectives for s in seeds for c in names for a in arms]
    loaded: dict[str, _Corpus] = {}
    t0, done_here = time.perf_counter(), 0
    for obj, seed, cname, arm in plan:
        rel = f"runs/{cname}-{obj}-{arm}-s{seed}"
        if (folder.path / rel / "record.json").is_file():
            continue
        if cname not in loaded:
            spec = next(c for c in corpora if c.name == cname)
            loaded[cname] = _Corpus(spec, run)
            folder.write_json(f"corpora/{cname}.json", loaded[cname].describe())
        record = run_one(arm, cname, loaded[cname], obj, seed, run)
        folder.sub(rel, "pretrain-run").write_json("record.json", record)
        records = _records(folder, plan)
        folder.write_text(
            "records.jsonl", "".join(json_text(r, indent=None) + "\n" for r in records)
        )
        done_here += 1
        left = len(plan) - len(records)
        eta = (time.perf_counter() - t0) / done_here * left
        print(
            f"[{len(records)}/{len(plan)}] {rel}: validation loss "
            f"{record.get('validation_loss', float('nan')):.4f}; ETA {eta / 60:.1f} min",
            file=sys.stderr,
            flush=True,
        )
    return _records(folder, plan)
