"""Save and load position modules as safetensors with JSON metadata (no pickle).

File layout: the module's ``state_dict`` tensors (persistent parameters and buffers) plus one
metadata entry ``"posgeom"``, a JSON object
``{"format": "posgeom.nn/1", "class": <class name>, "config": <constructor arguments>,
"dtype": <torch dtype name>}``. Writes go to a temporary file in the same folder, then
``os.replace`` (:func:`write_tensors`). Loading never calls ``torch.load``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from posgeom._errors import ArtifactError, PosgeomError
from posgeom.io.jsonfiles import json_text
from posgeom.nn.position import (
    LearnedPositionEmbedding,
    PositionEmbedding,
    SinusoidalPositionEmbedding,
)
from posgeom.nn.tables import AbsolutePositionEmbedding, LowRankPositionEmbedding

__all__ = ["load_module", "read_tensors", "save_module", "write_tensors"]

FORMAT = "posgeom.nn/1"
_CLASSES: dict[str, type[PositionEmbedding]] = {
    c.__name__: c
    for c in (
        AbsolutePositionEmbedding,
        LowRankPositionEmbedding,
        SinusoidalPositionEmbedding,
        LearnedPositionEmbedding,
    )
}
_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
}


def save_module(module: nn.Module, path: str | os.PathLike) -> Path:
    """Write ``module`` (a posgeom position embedding) to ``path`` (safetensors).

    Returns the path written.
    """
    if type(module).__name__ not in _CLASSES or not isinstance(module, PositionEmbedding):
        raise PosgeomError(
            f"save_module supports {sorted(_CLASSES)}, got {type(module).__name__}; save other "
            "modules with safetensors.torch.save_model"
        )
    meta = {
        "format": FORMAT,
        "class": type(module).__name__,
        "config": module.config(),
        "dtype": str(module._ref_tensor().dtype).removeprefix("torch."),
    }
    return write_tensors(path, module.state_dict(), meta)


def write_tensors(path: str | os.PathLike, tensors: dict[str, torch.Tensor], meta: dict) -> Path:
    """Write ``tensors`` and the JSON ``meta`` (metadata entry ``"posgeom"``) to ``path`` as one
    safetensors file, atomically (:func:`posgeom.io._atomic.atomic_path`: a temporary sibling
    moved onto ``path``, mode ``0o666`` less the umask, a failed write one line)."""
    from safetensors.torch import save

    from posgeom.io._atomic import atomic_path

    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    data = save(tensors, metadata={"posgeom": json_text(meta, indent=None, sort_keys=True)})
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # the temporary's mode is kept
        fh.write(data)
    return path


def read_tensors(
    path: Path, *, writer: str = "save_module"
) -> tuple[dict, dict[str, torch.Tensor]]:
    """``(meta, tensors)`` of a file written by :func:`write_tensors`; ``ArtifactError`` (one
    line naming the problem) for a missing, unreadable or foreign file (``writer``: the function
    the message names)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    if not path.is_file():
        raise ArtifactError(f"no such file: {path}; pass the path written by {writer}")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("posgeom")
        tensors = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types
        raise ArtifactError(f"{path} is not a readable safetensors file: {exc}") from exc
    if raw is None:
        raise ArtifactError(
            f"{path} has no 'posgeom' metadata entry; it was not written by {writer} "
            "(load plain state dicts with safetensors.torch.load_file)"
        )
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: the 'posgeom' metadata is not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise ArtifactError(f"{path}: the 'posgeom' metadata is not a JSON object")
    return meta, tensors


def _load_into(module: nn.Module, tensors: dict[str, torch.Tensor], path: Path) -> None:
    expected = module.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise ArtifactError(
            f"{path} does not match {type(module).__name__}: missing tensors {missing}, "
            f"unexpected tensors {unexpected}"
        )
    for name, want in expected.items():
        got = tensors[name]
        if tuple(got.shape) != tuple(want.shape):
            raise ArtifactError(
                f"{path}: tensor {name!r} has shape {tuple(got.shape)} but "
                f"{type(module).__name__} expects shape {tuple(want.shape)}; the file belongs to "
                "a module of another size (check n, d, rank)"
            )
    with torch.no_grad():
        module.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()})


def _check_declared(cls: type, cfg: dict, tensors: dict[str, torch.Tensor], path: Path) -> None:
    """Refuse, before anything is built, a configuration whose table (``n x d``, or
    ``(n + d) x rank`` for a low-rank one) holds more numbers than the file's tensors."""
    n, d = int(cfg["n"]), int(cfg["d"])
    rank = int(cfg["rank"]) if cls is LowRankPositionEmbedding else None
    declared = n * d if rank is None else (n + d) * rank
    if min(n, d, rank or 1) < 1 or declared > sum(t.numel() for t in tensors.values()):
        raise ArtifactError(
            f"{path}: its configuration {cfg} declares a table of {declared} numbers that its "
            "tensors do not hold; the file was edited or truncated, write it again with save_module"
        )


def load_module(
    path: str | os.PathLike, module: PositionEmbedding | None = None
) -> PositionEmbedding:
    """Load a module written by :func:`save_module`.

    With ``module=None`` the module is rebuilt from the metadata (class and constructor
    arguments). With ``module`` given, the weights are loaded into it (its class must match);
    either way a tensor of another shape raises :class:`~posgeom._errors.ArtifactError` naming the
    expected and the found shapes.
    """
    path = Path(path)
    meta, tensors = read_tensors(path)
    if meta.get("format") != FORMAT or meta.get("class") not in _CLASSES:
        raise ArtifactError(
            f"{path}: unknown format {meta.get('format')!r} / class {meta.get('class')!r}; "
            f"expected format {FORMAT!r} and one of {sorted(_CLASSES)}"
        )
    cls = _CLASSES[meta["class"]]
    if module is None:
        dtype = _DTYPES.get(meta.get("dtype", "float32"), torch.float32)
        try:
            _check_declared(cls, meta["config"], tensors, path)
            module = cls.from_config(meta["config"], dtype=dtype)
        except ArtifactError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(
                f"{path}: cannot rebuild {cls.__name__} from {meta['config']}: {exc}"
            ) from exc
    elif type(module) is not cls:
        raise ArtifactError(
            f"{path} holds a {cls.__name__}, cannot load it into a {type(module).__name__}"
        )
    _load_into(module, tensors, path)
    return module
