"""The files of a run folder: ``checkpoint.safetensors``, ``log.jsonl`` and JSON files (written
through the run's :class:`~posgeom.io.workfolders.WorkFolder`, :func:`open_run_folder`).

Checkpoint: model and AdamW state in one safetensors file. Tensors: ``model.<state_dict key>`` and
``optim.<param index>.<state key>`` (flattened; their shapes are kept in the metadata under
``step_shapes``). Metadata key ``posgeom``: JSON with ``format`` (:data:`FORMAT`),
``param_groups``, ``step_shapes`` and what the trainer adds (``config``, ``fingerprint``,
``epoch``, ``history``). Written atomically; no pickle.

Log: one JSON object per line and epoch (``EpochRecord.as_dict``, keys sorted).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from posgeom._errors import ArtifactError, PosgeomError

__all__ = [
    "CHECKPOINT",
    "FORMAT",
    "LOG",
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


def save_checkpoint(path: Path, model: Any, opt: Any, meta: dict[str, Any]) -> None:
    """Write ``model`` and ``opt`` state with ``meta`` to ``path`` (atomically)."""
    from safetensors.torch import save_file

    from posgeom.io.artifacts import atomic_path

    tensors = {
        f"model.{k}": v.detach().contiguous().clone().cpu() for k, v in model.state_dict().items()
    }
    state = opt.state_dict()
    for idx, st in state["state"].items():
        for key, val in st.items():
            tensors[f"optim.{idx}.{key}"] = val.detach().reshape(-1).contiguous().clone().cpu()
    meta = {
        **meta,
        "format": FORMAT,
        "param_groups": state["param_groups"],
        "step_shapes": {
            f"{i}.{k}": list(v.shape) for i, st in state["state"].items() for k, v in st.items()
        },
    }
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"posgeom": json.dumps(meta, sort_keys=True)})


def data_inputs(cfg: Any) -> list[Path]:
    """The data files and folders a run reads (the data, MiniLM's weights): its folders may
    neither hold them nor lie inside them."""
    paths: list[Any] = [cfg.train_file, cfg.eval_file]
    paths.append(cfg.data_dir or os.environ.get("POSGEOM_DATA"))
    if cfg.model == "minilm":
        from posgeom.experiments.training.data import minilm_path

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
    """``(metadata, tensors)`` of a checkpoint; :class:`ArtifactError` if unreadable."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("posgeom")
        tensors = load_file(str(path))
    except Exception as exc:
        raise ArtifactError(
            f"{path} is not a readable checkpoint ({exc}); delete it to restart"
        ) from exc
    if raw is None:
        raise ArtifactError(f"{path} has no posgeom metadata; delete it to restart")
    meta = json.loads(raw)
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta, tensors


def restore(model: Any, opt: Any, meta: dict[str, Any], tensors: dict[str, Any]) -> None:
    """Load a checkpoint's tensors into ``model`` and ``opt``."""
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


def read_log(output: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run folder (``log.jsonl``)."""
    path = Path(output) / LOG
    if not path.is_file():
        raise PosgeomError(f"{path} does not exist; is {output} a training run folder?")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
