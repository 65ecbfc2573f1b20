"""A small trainer that tracks the geometry of the position encoding while a model learns.

The modules follow the data:

- :mod:`.config`: :class:`TrainConfig`, every option of a run, its validation and fingerprint;
  tasks ``"sst2"`` (SST-2 sentence classification), ``"imdb-mlm"`` (masked-language modelling on
  IMDB reviews) and ``"order"`` (Theorem 1's order-only task); models ``"tiny"``
  (:class:`posgeom.nn.TinyEncoder` with any encoding of :data:`ENCODINGS`) and ``"minilm"`` (the
  real all-MiniLM-L6-v2 weights, ``encoding="pretrained"``, SST-2 only);
- :mod:`.data`: the texts (:class:`TextData`, :func:`load_task_data`) and their token ids;
- :mod:`.model`: :func:`build_model` and the position modules;
- :mod:`.metrics`: the target geometry (Hellinger distances of the training split's positional
  distributions), the encoding's geometry (:func:`position_geometry`) and its scores
  (:func:`geometry_scores`: separation margin, stresses, violation rate);
- :mod:`.steps`: batches, losses, one epoch (seeded per epoch, so resuming is exact);
- :mod:`.runfiles`: ``checkpoint.safetensors``, ``log.jsonl`` (:func:`read_log`), JSON files;
- :mod:`.loop`: :func:`train` (one run folder, resumed from its checkpoint; one
  :class:`EpochRecord` per epoch);
- :mod:`.stats`: :func:`rank_correlation` (Spearman rho, bootstrap CI, permutation p-value);
- :mod:`.sweeps`: :func:`stress_vs_accuracy`, :func:`order_necessity` and :func:`sweep_table`;
- :mod:`.plots`: :func:`plot_sweep`, :func:`plot_run_logs`.

torch, safetensors, transformers, tqdm and matplotlib are imported inside the functions.
"""

from __future__ import annotations

from posgeom._registry_names import registry_getattr
from posgeom.training.config import MODELS, TASKS, TrainConfig, trainable_encodings
from posgeom.training.data import ID_OFFSET, MASK_ID, PAD_ID, TextData, load_task_data
from posgeom.training.loop import EpochRecord, TrainResult, train
from posgeom.training.metrics import geometry_scores, position_geometry
from posgeom.training.model import build_model
from posgeom.training.plots import plot_run_logs, plot_sweep
from posgeom.training.runfiles import CHECKPOINT, FORMAT, LOG, read_log
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
