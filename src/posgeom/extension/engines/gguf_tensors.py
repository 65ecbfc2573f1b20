"""llama3 as llama.cpp reads it: the GGUF tensor ``rope_freqs``, and a copy of a GGUF carrying it.

llama.cpp has no command-line or metadata spelling for llama3's frequency bands: its
``convert_hf_to_gguf.py`` writes them, from a ``config.json`` whose ``rope_scaling`` is llama3,
as the float32 tensor ``rope_freqs.weight`` of shape ``(rotary_dim / 2,)``; ``ggml_rope_ext``
divides each plane's angle by its entry (``freq_factors``). The entry of plane ``k`` is therefore
``w_k(default) / w_k(llama3)``: 1 for the high-frequency planes (wavelength ``< L0 /
high_freq_factor``), ``factor`` for the low ones (wavelength ``> L0 / low_freq_factor``) and
``1 / ((1 - smooth) / factor + smooth)`` between, ``smooth = (L0 / wavelength - low) / (high -
low)``, the converter's loop. ``extend --emit llamacpp`` with ``--gguf-file`` writes the copy
(:func:`write_rope_freqs_gguf`); docs/ENGINES.md has its measured parity with transformers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, printable

__all__ = ["copy_name", "rope_freqs", "write_rope_freqs_gguf"]

TENSOR = "rope_freqs.weight"


def rope_freqs(target: Any) -> np.ndarray:
    """``(head_dim/2,)`` float32 ``rope_freqs`` of a llama3 :class:`~.base.EngineTarget`
    (module docstring: ``w_default / w_llama3`` plane by plane)."""
    from posgeom.encodings.rope_types import rope_frequencies

    if target.rope_type != "llama3":
        raise PosgeomError(f"rope_freqs holds llama3's bands; {target.strategy!r} is not llama3")
    default, _ = rope_frequencies("default", target.head_dim, target.theta)
    scaled, _ = rope_frequencies("llama3", target.head_dim, target.theta, target.rope_parameters)
    return (default / scaled).astype(np.float32)


def copy_name(gguf_file: str | os.PathLike) -> str:
    """The copy's file name beside the emitted files: ``NAME.llama3.gguf``."""
    return f"{Path(gguf_file).stem}.llama3.gguf"


def write_rope_freqs_gguf(source: str | os.PathLike, target: Any, out: str | os.PathLike) -> Path:
    """Write a copy of the GGUF ``source`` with ``rope_freqs.weight`` for ``target`` added (every
    key and tensor as it was) to ``out``, atomically; one line when ``source`` is not a GGUF, or
    already carries the tensor (its bands are then the model's own: convert from the original)."""
    try:
        import gguf
    except ImportError as exc:
        raise PosgeomError("writing a GGUF needs the gguf package (pip install gguf)") from exc
    from posgeom.io._atomic import atomic_path

    try:
        reader = gguf.GGUFReader(str(source))
    except (OSError, ValueError) as exc:
        raise PosgeomError(f"{printable(source)} is not a readable GGUF file ({exc})") from None
    if any(t.name == TENSOR for t in reader.tensors):
        raise PosgeomError(
            f"{printable(source)} already has {TENSOR} (a llama3 model): give the GGUF converted "
            "without rope scaling"
        )
    arch = reader.fields["general.architecture"].contents()
    with atomic_path(Path(out)) as tmp:
        writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=reader.endianess)
        _copy_with_tensor(reader, writer, rope_freqs(target))
    return Path(out)


def _copy_with_tensor(reader: Any, writer: Any, freqs: np.ndarray) -> None:
    import gguf

    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    tensors = [(t.name, t.data, t.n_bytes, t.tensor_type) for t in reader.tensors]
    tensors.append((TENSOR, freqs, freqs.nbytes, gguf.GGMLQuantizationType.F32))
    for name, data, nbytes, ttype in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, nbytes, ttype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _, _ in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
