"""Where a position table comes from: an array, an array file, a posgeom decoder file or model,
or a Hugging Face model whose learned table :mod:`posgeom.models.mechanisms` finds (rows from its
offset on: 2 for RoBERTa/MPNet)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._paths import portable_path
from posgeom.probes.table import real_values

__all__ = ["ARRAY_SUFFIXES", "read_table"]

ARRAY_SUFFIXES = (".npy", ".npz", ".safetensors")


def _is_table(key: str) -> bool:
    """A posgeom model's learned table (``LearnedPositionEmbedding`` as ``position``)."""
    return key == "position.embedding.weight"


def _decoder_table(path: Path) -> np.ndarray | None:
    """The learned table of a posgeom decoder file, or ``None`` when the file is not one."""
    from posgeom.io._arrayfiles import read_safetensors

    arrays, meta = read_safetensors(path)
    if "posgeom" not in meta:
        return None
    table = next((v for k, v in arrays.items() if _is_table(k)), None)
    if table is None:
        raise PosgeomError(f"{path} is a posgeom decoder without a learned position table")
    return real_values(table, f"{path}'s position table")


def _array_file(path: Path, key: str | None) -> np.ndarray:
    from posgeom.io._arrayfiles import read_array_file

    if path.suffix.lower() == ".safetensors" and key is None:
        table = _decoder_table(path)
        if table is not None:
            return table
    arrays = read_array_file(path)
    if key is None and len(arrays) != 1:
        named = [k for k in arrays if "position" in k.lower()]
        if len(named) != 1:
            raise PosgeomError(
                f"{path} holds several arrays {sorted(arrays)}; pass key=<name> (--key)"
            )
        key = named[0]
    key = next(iter(arrays)) if key is None else key
    if key not in arrays:
        raise PosgeomError(f"{path} has no array {key!r}; it holds {sorted(arrays)}")
    return real_values(arrays[key], f"{path}" + (f" (array {key!r})" if key else ""))


def _model_table(
    model: Any, n: int | None, start: int, gguf_file: str | None, placement: dict[str, Any]
) -> np.ndarray:
    from posgeom.models.loading import loaded_model
    from posgeom.models.mechanisms import find_positional_mechanisms, mechanism_encodings

    model = loaded_model(model, **placement, **({"gguf_file": gguf_file} if gguf_file else {}))
    if not hasattr(getattr(model, "config", None), "model_type"):  # a posgeom model
        weights = {k: v for k, v in model.state_dict().items() if _is_table(k)}
        if len(weights) != 1:
            raise PosgeomError(f"{type(model).__name__} has no learned position table to probe")
        table = next(iter(weights.values())).detach().double().cpu().numpy()[start:]
        return table if n is None else table[:n]
    learned = [
        m for m in find_positional_mechanisms(model, on_missing="none") if m.kind == "learned"
    ]
    if not learned:
        raise PosgeomError(
            f"{type(model).__name__} has no learned position table to probe; give it a corpus "
            "to probe its layers instead"
        )
    rows = learned[0].params.n_positions - start
    encodings = mechanism_encodings(learned[:1], rows if n is None else n, start=start)
    return next(e.vectors for e in encodings.values() if e.vectors is not None)


def read_table(
    source: Any,
    *,
    n: int | None = None,
    start: int = 0,
    key: str | None = None,
    gguf_file: str | None = None,
    device: Any = None,
    dtype: Any = None,
) -> tuple[np.ndarray, str]:
    """The ``(n, d)`` table of ``source`` (module docstring) and a name for it; ``gguf_file``
    only for a Hugging Face model folder or name (refused for anything else: it would be
    ignored); ``device`` and ``dtype`` load a model named by ``source``
    (:func:`posgeom.models.loading.load_model`)."""
    if gguf_file is not None and (
        not isinstance(source, (str, os.PathLike)) or Path(source).is_file()
    ):
        raise PosgeomError(
            f"gguf_file={gguf_file!r} names a checkpoint inside a model folder, but the source "
            "is not one; drop it"
        )
    if isinstance(source, np.ndarray) or (
        hasattr(source, "__array__") and not hasattr(source, "parameters")
    ):
        table, name = real_values(source, "the table")[start:], "array"
    elif isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() in ARRAY_SUFFIXES:
        path = Path(source)
        if not path.is_file():
            raise PosgeomError(f"table file {path} does not exist; check the path")
        table, name = _array_file(path, key)[start:], path.name
    elif not isinstance(source, (str, os.PathLike)) and not hasattr(source, "state_dict"):
        raise PosgeomError(
            "probe takes a position table (an array or an .npy/.npz/.safetensors file), a model "
            f"folder or name, or a loaded model, not a {type(source).__name__}"
        )
    else:
        table = _model_table(source, n, start, gguf_file, {"device": device, "dtype": dtype})
        named = isinstance(source, (str, os.PathLike))  # a folder or name, else a loaded model
        name = portable_path(source) if named else type(source).__name__
    if n is not None:
        if n > table.shape[0]:
            raise PosgeomError(
                f"n = {n} but the table has {table.shape[0]} rows from row {start}; use -n <= {table.shape[0]}"
            )
        table = table[:n]
    return table, name
