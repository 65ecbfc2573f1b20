"""A small trainer that tracks the geometry of the position encoding while a model learns.

The modules follow the data: :mod:`.config` (:class:`TrainConfig`: every option of a run, its
validation and fingerprint), :mod:`.data` (texts and token ids), :mod:`.model` (the models and
their position modules), :mod:`.metrics` (the target geometry and the encoding's scores),
:mod:`.steps` (batches, losses, one seeded epoch), :mod:`.runfiles` (checkpoint, log, JSON
files), :mod:`.loop` (:func:`train`: one run folder, resumed from its checkpoint), :mod:`.stats`
(:func:`rank_correlation`), :mod:`.sweeps` (experiment grids) and :mod:`.plots` (figures).

torch, safetensors, transformers, tqdm and matplotlib are imported inside the functions.
"""

from __future__ import annotations

from posgeom._registry_names import registry_getattr
from posgeom.training.config import MODELS, TASKS, TrainConfig, trainable_encodings
from posgeom.training.data import ID_OFFSET, MASK_ID, PAD_ID, TextData, load_task_data
from posgeom.training.loop import TrainResult, train
from posgeom.training.metrics import geometry_scores, position_geometry
from posgeom.training.model import build_model
from posgeom.training.plots import plot_run_logs, plot_sweep
from posgeom.training.runfiles import CHECKPOINT, FORMAT, LOG, EpochRecord, read_log
from posgeom.training.stats import RankCorrelation, rank_correlation
from posgeom.training.sweeps import (
    SWEEP_ENCODINGS,
    order_necessity,
    stress_vs_accuracy,
    sweep_table,
)

__all__ = [
    "CHECKPOINT",
    "FORMAT",
    "ID_OFFSET",
    "LOG",
    "MASK_ID",
    "MODELS",
    "PAD_ID",
    "SWEEP_ENCODINGS",
    "TASKS",
    "EpochRecord",
    "RankCorrelation",
    "TextData",
    "TrainConfig",
    "TrainResult",
    "build_model",
    "geometry_scores",
    "load_task_data",
    "order_necessity",
    "plot_run_logs",
    "plot_sweep",
    "position_geometry",
    "rank_correlation",
    "read_log",
    "stress_vs_accuracy",
    "sweep_table",
    "train",
    "trainable_encodings",
]


__getattr__ = registry_getattr(__name__, {"ENCODINGS": trainable_encodings})
