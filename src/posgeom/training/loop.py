"""The training run: data, target geometry, model, then epochs with records and checkpoints.

Per epoch (and at epoch 0, before training) one JSON line is appended to ``log.jsonl``::

    {"epoch", "steps", "train_loss", "train_accuracy", "eval_loss", "eval_accuracy",
     "separation",            # min_{i<j} ||p_i - p_j|| (Theorem 4; scores.separation_margin)
     "stress": {"paper", "stress1", "scale_optimal", "raw", "scale"},  # vs D, stress_scores
     "violation_rate",        # monotonicity violations over triples (Conjecture 5)
     "seconds"}

A checkpoint is written atomically after every epoch; :func:`train` resumes from the last
finished epoch when the folder holds a checkpoint of the same configuration (``epochs``,
``threads`` and ``progress`` may differ). With the per-epoch seeds of
:func:`~posgeom.training.steps.epoch_seeds` a resumed run repeats an uninterrupted one exactly.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom.io.jsonfiles import json_text
from posgeom.training.config import TrainConfig
from posgeom.training.data import TextData, prepare
from posgeom.training.metrics import (
    geometry_scores,
    position_geometry,
    target_geometry,
)
from posgeom.training.model import build_model, n_position_parameters
from posgeom.training.runfiles import (
    CHECKPOINT,
    LOG,
    EpochRecord,
    load_checkpoint,
    open_run_folder,
    restore,
    save_checkpoint,
)
from posgeom.training.steps import evaluate, train_epoch

__all__ = ["TrainResult", "train"]

log = logging.getLogger("posgeom")


@dataclass(frozen=True, eq=False)
class TrainResult:
    """What :func:`train` returns: the config, the per-epoch history, the model and its geometry."""

    config: TrainConfig
    history: list[EpochRecord]
    output: Path
    model: Any
    target: np.ndarray
    resumed_from: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> EpochRecord:
        return self.history[-1]


def _json_line(rec: EpochRecord) -> str:
    return json_text(rec.as_dict(), indent=None, sort_keys=True)


def train(
    config: TrainConfig,
    output: str | os.PathLike,
    *,
    data: TextData | None = None,
    on_epoch: Callable[[EpochRecord], None] | None = None,
    overwrite: bool = False,
) -> TrainResult:
    """Train ``config`` into the folder ``output`` (created), resuming a finished epoch if any.

    ``data`` supplies the texts in memory (else they are read from ``config``'s files);
    ``on_epoch`` is called with each new :class:`EpochRecord`. Writes ``config.json``,
    ``log.jsonl``, ``checkpoint.safetensors``, ``tokenizer.json`` (word tokenizer) and
    ``result.json`` (the last record and the run's facts). ``output`` is a work folder of kind
    ``train-run`` (:func:`~posgeom.training.runfiles.open_run_folder`: new, empty or
    a run posgeom wrote, never holding the data); ``overwrite`` deletes the run's files (only
    those) and starts over.
    """
    import torch

    cfg = config.validate()
    torch.set_num_threads(cfg.threads)
    with open_run_folder(output, cfg, restart=overwrite) as folder:  # one writer until the end
        return _train(cfg, folder, data, on_epoch)


def _train(
    cfg: TrainConfig,
    folder: Any,
    data: TextData | None,
    on_epoch: Callable[[EpochRecord], None] | None,
) -> TrainResult:
    """:func:`train` in its opened run folder (a failure leaves no empty folder behind)."""
    import torch

    out = folder.path
    t0 = time.perf_counter()
    prep = prepare(cfg, data)
    if not prep.train_ids:
        raise PosgeomError("no training sequence is left after tokenization")
    model_dim = cfg.d_model if cfg.model == "tiny" else 384
    geometry = target_geometry(cfg, prep, model_dim)
    target = geometry.distances
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, prep.vocab_size, geometry)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    history: list[EpochRecord] = []
    start = 0
    if folder.listed(CHECKPOINT):
        meta, tensors = load_checkpoint(out / CHECKPOINT)
        if meta.get("fingerprint") != cfg.fingerprint():
            raise PosgeomError(
                f"{out} holds a run of another configuration ({meta.get('config')}); use a new "
                "output folder, or pass --overwrite (overwrite=True) to start it over"
            )
        restore(model, opt, meta, tensors, out / CHECKPOINT)
        history = [EpochRecord(**r) for r in meta["history"]]
        start = int(meta["epoch"])
        # the log may hold a line of an epoch whose checkpoint was not written: rewrite it
        folder.write_text(LOG, "".join(_json_line(r) + "\n" for r in history))
        log.info("resuming %s from epoch %d", out, start)
    folder.write_json("config.json", dataclasses.asdict(cfg), indent=2)
    if prep.tokenizer is not None and hasattr(prep.tokenizer, "save"):
        with folder.atomic("tokenizer.json") as tmp:
            prep.tokenizer.save(tmp)
    n_train = len(prep.train_ids)
    steps_full = math.ceil(n_train / cfg.batch_size)
    steps = min(steps_full, cfg.steps_per_epoch or steps_full)
    require("tqdm", "torch")
    from posgeom._progress import progress_bar

    def record(
        epoch: int, n_steps: int, tl: float | None, ta: float | None, secs: float
    ) -> EpochRecord:
        el, ea = evaluate(model, cfg, prep.eval_ids, prep.eval_labels)
        g = geometry_scores(position_geometry(model, cfg, target), target, seed=cfg.seed)
        rec = EpochRecord(
            epoch, n_steps, tl, ta, el, ea, g["separation"], g["stress"], g["violation_rate"], secs
        )
        history.append(rec)
        folder.write_text(LOG, "".join(_json_line(r) + "\n" for r in history))
        if on_epoch is not None:
            on_epoch(rec)
        return rec

    if start == 0:
        record(0, 0, None, None, 0.0)
    for epoch in range(start + 1, cfg.epochs + 1):
        te = time.perf_counter()
        tl, ta = train_epoch(model, opt, cfg, prep, epoch, steps, progress_bar)
        rec = record(epoch, steps, tl, ta, time.perf_counter() - te)
        meta = {
            "config": dataclasses.asdict(cfg),
            "fingerprint": cfg.fingerprint(),
            "epoch": epoch,
            "history": [r.as_dict() for r in history],
        }
        with folder.atomic(CHECKPOINT) as tmp:
            save_checkpoint(tmp, model, opt, meta)
        log.info("%s", _json_line(rec))
    result = {
        "config": dataclasses.asdict(cfg),
        "final": history[-1].as_dict(),
        "n_train": n_train,
        "n_eval": len(prep.eval_ids),
        "vocab_size": prep.vocab_size,
        "n_parameters": int(sum(p.numel() for p in model.parameters())),
        "n_position_parameters": n_position_parameters(model),
        "target": {
            "n": int(target.shape[0]),
            "hellinger": "chord",
            "estimator": geometry.options.get("estimator", cfg.target_estimator),
            "corpus_sequences": len(prep.count_ids),
        },
        "seconds_this_call": time.perf_counter() - t0,
    }
    folder.write_json("result.json", result, indent=2)
    return TrainResult(
        cfg,
        history,
        out,
        model,
        target,
        resumed_from=start,
        extras={"n_train": n_train, "geometry": geometry},
    )
