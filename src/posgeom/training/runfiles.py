"""The files of a run folder: ``checkpoint.safetensors``, ``log.jsonl`` and JSON files (written
through the run's :class:`~posgeom.io.workfolders.WorkFolder`, :func:`open_run_folder`).

Checkpoint: model and AdamW state in one safetensors file. Tensors: ``model.<state_dict key>`` and
``optim.<param index>.<state key>`` (flattened; their shapes are kept in the metadata under
``step_shapes``). Metadata key ``posgeom``: JSON with ``format`` (:data:`FORMAT`),
``param_groups``, ``step_shapes`` and what the trainer adds (``config``, ``fingerprint``,
``epoch``, ``history``). Written atomically; no pickle.

Log: one JSON object per line and epoch (:class:`EpochRecord`, ``as_dict``, keys sorted).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posgeom._errors import ArtifactError, PosgeomError

__all__ = [
    "CHECKPOINT",
    "FORMAT",
    "LOG",
    "EpochRecord",
    "load_checkpoint",
    "open_run_folder",
    "read_log",
    "restore",
    "save_checkpoint",
]

CHECKPOINT = "checkpoint.safetensors"
LOG = "log.jsonl"
FORMAT = "posgeom.train/1"
RUN_KIND = "train-run"


@dataclass(frozen=True)
class EpochRecord:
    """One line of ``log.jsonl`` (see the module docstring)."""

    epoch: int
    steps: int
    train_loss: float | None
    train_accuracy: float | None
    eval_loss: float
    eval_accuracy: float
    separation: float
    stress: dict[str, float]
    violation_rate: float
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def save_checkpoint(path: Path, model: Any, opt: Any, meta: dict[str, Any]) -> None:
    """Write ``model`` and ``opt`` state with ``meta`` to ``path`` (atomically; a full disk is
    one line naming the file, :func:`posgeom.nn.io.write_tensors`)."""
    from posgeom.nn.io import write_tensors

    tensors = {f"model.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    state = opt.state_dict()
    for idx, st in state["state"].items():
        for key, val in st.items():
            tensors[f"optim.{idx}.{key}"] = val.detach().reshape(-1).clone()
    meta = {
        **meta,
        "format": FORMAT,
        "param_groups": state["param_groups"],
        "step_shapes": {
            f"{i}.{k}": list(v.shape) for i, st in state["state"].items() for k, v in st.items()
        },
    }
    write_tensors(path, tensors, meta)


def _check_meta(path: Path, meta: dict[str, Any]) -> None:
    """The checkpoint metadata the trainer reads: format, epoch, history, optimizer layout."""
    from posgeom._validation import is_integer

    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    epoch, history = meta.get("epoch"), meta.get("history")
    shapes, groups = meta.get("step_shapes"), meta.get("param_groups")
    problem = None
    if not (is_integer(epoch) and epoch >= 0):
        problem = f"epoch {epoch!r} is not a count of epochs"
    elif not (isinstance(history, list) and len(history) == epoch + 1):
        problem = f"the history does not hold epochs 0 .. {epoch}"
    elif not (isinstance(shapes, dict) and isinstance(groups, list)):
        problem = "the optimizer layout (step_shapes, param_groups) is missing"
    else:
        try:
            [EpochRecord(**r) for r in history]
        except TypeError as exc:
            problem = f"a history record is malformed ({exc})"
    if problem is not None:
        raise ArtifactError(f"{path}: the checkpoint's metadata is damaged: {problem}")


def data_inputs(cfg: Any) -> list[Path]:
    """The data files and folders a run reads (the data, MiniLM's weights): its folders may
    neither hold them nor lie inside them."""
    paths: list[Any] = [cfg.train_file, cfg.eval_file]
    paths.append(cfg.data_dir or os.environ.get("POSGEOM_DATA"))
    if cfg.model == "minilm":
        from posgeom.training.data import minilm_path

        try:
            paths.append(minilm_path())
        except PosgeomError:
            pass  # refused with its own message when the run loads it
    return [Path(p).expanduser() for p in paths if p and Path(p).expanduser().exists()]


def open_run_folder(output: str | os.PathLike, cfg: Any, *, restart: bool = False) -> Any:
    """The run folder ``output`` as a work folder of kind ``train-run``
    (:class:`posgeom.io.workfolders.WorkFolder`): new, empty or a run posgeom wrote, every
    file listed and unchanged, never inside the data nor holding it; ``restart`` deletes the
    run's files first."""
    from posgeom.io.workfolders import WorkFolder

    return WorkFolder.open(
        output, kind=RUN_KIND, inputs=data_inputs(cfg), restart=restart, option="run folder"
    )


def load_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metadata, tensors)`` of a checkpoint, the metadata checked; one
    :class:`ArtifactError` naming the file and the fix for anything unreadable."""
    from posgeom.nn.io import read_tensors

    try:
        meta, tensors = read_tensors(Path(path), writer="posgeom train")
        _check_meta(path, meta)
    except ArtifactError as exc:
        raise ArtifactError(f"{exc}; delete it to restart the run") from exc
    return meta, tensors


def restore(
    model: Any, opt: Any, meta: dict[str, Any], tensors: dict[str, Any], path: Any = CHECKPOINT
) -> None:
    """Load a checkpoint's tensors into ``model`` and ``opt``; a checkpoint of another shape is
    one :class:`ArtifactError` naming ``path``."""
    from posgeom._hub import one_line

    try:
        state_dict = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
        model.load_state_dict(state_dict)
        state: dict[int, dict[str, Any]] = {}
        for name, val in tensors.items():
            if not name.startswith("optim."):
                continue
            _, idx, key = name.split(".", 2)
            shape = meta["step_shapes"][f"{idx}.{key}"]
            state.setdefault(int(idx), {})[key] = val.reshape(shape)
        opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as exc:
        reason = f"no entry {exc}" if isinstance(exc, KeyError) else one_line(exc, 200)
        raise ArtifactError(
            f"{path}: the checkpoint does not fit this run's model and optimizer ({reason}); "
            "delete it to restart the run"
        ) from exc


def read_log(output: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run folder (``log.jsonl``)."""
    path = Path(output) / LOG
    if not path.is_file():
        raise PosgeomError(f"{path} does not exist; is {output} a training run folder?")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
