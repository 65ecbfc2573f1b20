"""A small :class:`posgeom.training.TrainConfig` for tests that train a real model in well under
a second."""

from __future__ import annotations

from typing import Any


def tiny_train_config(**fields: Any) -> Any:
    """A ``TrainConfig`` of the SST-2 task on a 1-layer, width-16, 2-head model with a learned
    table: one epoch of two batches of 4, positions 0 .. 5, every word in the vocabulary,
    dropout 0.1, seed 0, quiet, one thread; ``fields`` replace any of these."""
    from posgeom.training import TrainConfig

    base: dict[str, Any] = {
        "task": "sst2",
        "encoding": "learned",
        "seed": 0,
        "epochs": 1,
        "d_model": 16,
        "n_heads": 2,
        "n_layers": 1,
        "max_len": 6,
        "batch_size": 4,
        "steps_per_epoch": 2,
        "vocab_min_count": 1,
        "dropout": 0.1,
        "progress": False,
        "threads": 1,
    }
    return TrainConfig(**(base | fields))
