"""Reading ``.npy``, ``.npz`` and ``.safetensors`` files that may be damaged or hostile.

Every reader validates the file's own description before it allocates or interprets any data
and turns every failure into one :class:`~posgeom._errors.PosgeomError` naming the file, the
problem and the fix. Nothing is ever unpickled; numeric dtypes only (bool, integers, floats,
complex):

- ``.npy``: header parsed by ``numpy.lib.format`` (a literal dict); object and structured dtypes
  refused; the file size must equal header + ``prod(shape) * itemsize`` exactly.
- ``.npz``: each ``.npy`` member checked as above against its declared size, within the
  inflation limits of :mod:`posgeom.io._inflate`, and read to its end (the zip CRC is verified).
- ``.safetensors``: parsed here (no extra needed): 8-byte little-endian header length ``N``
  (``8 <= 8 + N <= file size``), a JSON object of ``name -> {"dtype", "shape", "data_offsets":
  [begin, end]}`` plus optional ``"__metadata__"`` (``str -> str``); each tensor's byte range lies
  inside the data and has exactly ``prod(shape) * itemsize`` bytes. ``BF16`` is widened to float32.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from posgeom._errors import ArtifactError
from posgeom.io._inflate import INFLATION_RATIO, inflation_limit
from posgeom.io.jsonfiles import checked_regular, json_text

__all__ = [
    "csr_from_parts",
    "read_array_file",
    "read_npy",
    "read_npz",
    "read_safetensors",
    "write_safetensors",
]

_NUMERIC = "biufc"
#: safetensors' dtype codes: BOOL, U8 .. I64 (U8: "<u1"), F16 .. F64; BF16 is read as "<u2" and
#: widened to float32 after reading
_ST_DTYPES = {"BOOL": np.dtype(np.bool_), "BF16": np.dtype("<u2")} | {
    f"{code}{8 * size}": np.dtype(f"<{kind}{size}")
    for code, kind, sizes in (
        ("U", "u", (1, 2, 4, 8)),
        ("I", "i", (1, 2, 4, 8)),
        ("F", "f", (2, 4, 8)),
    )
    for size in sizes
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items() if k != "BF16"}
_MAX_ST_HEADER = 100 << 20
_NO_LIMIT = 1 << 62  # array files: any size, but a regular file (not a pipe or /dev/zero)


def _bad(path: Any, kind: str, problem: str) -> ArtifactError:
    return ArtifactError(
        f"{path} is damaged or not a readable {kind} file ({problem}); re-create it "
        f"(numpy.save / numpy.savez / safetensors, numeric arrays only, no pickles)"
    )


def _nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def _npy_header(fh: BinaryIO, path: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except Exception as exc:  # bad magic, truncated or malformed header
        raise _bad(path, ".npy", str(exc) or type(exc).__name__) from None
    if dtype.hasobject or dtype.kind not in _NUMERIC or dtype.fields is not None:
        raise _bad(path, ".npy", f"dtype {dtype} is not a plain numeric dtype")
    return tuple(int(s) for s in shape), bool(fortran), dtype


def _from_buffer(buf: Any, shape: tuple[int, ...], fortran: bool, dtype: np.dtype) -> np.ndarray:
    arr = np.frombuffer(buf, dtype=dtype, count=math.prod(shape))
    return arr.reshape(shape, order="F" if fortran else "C")


def read_npy(path: str | os.PathLike, *, mmap: bool = False) -> np.ndarray:
    """A ``.npy`` file as an array (memory-mapped read-only with ``mmap=True``), validated."""
    path = Path(path)
    checked_regular(path, max_bytes=_NO_LIMIT)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            shape, fortran, dtype = _npy_header(fh, path)
            offset = fh.tell()
            need = _nbytes(shape, dtype)
            if size != offset + need:
                raise _bad(
                    path,
                    ".npy",
                    f"shape {shape} of {dtype} needs {need} data bytes, the file "
                    f"holds {size - offset}",
                )
            if mmap and need:
                return np.memmap(
                    path,
                    dtype=dtype,
                    mode="r",
                    offset=offset,
                    shape=shape,
                    order="F" if fortran else "C",
                )
            buf = bytearray(need)
            fh.readinto(buf)
    except OSError as exc:
        raise ArtifactError(f"cannot read {path} ({exc.strerror or exc}); check the path") from exc
    except MemoryError:
        raise _bad(path, ".npy", "the array does not fit in memory") from None
    return _from_buffer(buf, shape, fortran, dtype)


def _npz_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Any) -> np.ndarray:
    where = f"{path} (member {info.filename})"
    with zf.open(info) as fh:
        shape, fortran, dtype = _npy_header(fh, where)
        need = _nbytes(shape, dtype)
        if info.file_size != fh.tell() + need:
            raise _bad(where, ".npy", f"shape {shape} of {dtype} does not match the member size")
        buf = bytearray(need)
        if fh.readinto(buf) != need or fh.read(1):  # reading to the end checks the CRC
            raise _bad(where, ".npy", "the member is truncated or longer than its header says")
    return _from_buffer(buf, shape, fortran, dtype)


def _check_inflation(infos: list[zipfile.ZipInfo], path: Path) -> None:
    """Refuse, from the zip directory, a member declaring more than the inflation limit of its
    compressed size, and members that together declare more than the limit of the whole file's
    size (each may be under its own: 90 members of 60 MiB)."""
    for info in infos:
        if info.file_size > inflation_limit(info.compress_size):
            raise ArtifactError(
                f"{path} (member {info.filename}) declares {info.file_size} bytes from "
                f"{info.compress_size} compressed, more than {INFLATION_RATIO} times (a "
                "decompression bomb?); save the arrays with numpy.savez (uncompressed) instead"
            )
    total = sum(i.file_size for i in infos)
    limit = inflation_limit(path.stat().st_size)
    if total > limit:
        raise ArtifactError(
            f"{path}: its {len(infos)} members declare {total} bytes together, more than "
            f"{limit >> 20} MiB ({INFLATION_RATIO} times the file's size; a decompression bomb?); "
            "save the arrays with numpy.savez (uncompressed) instead"
        )


def read_npz(path: str | os.PathLike, *, only: str | None = None) -> dict[str, np.ndarray]:
    """Every member of an ``.npz`` file (name without ``.npy``), validated (module docstring);
    ``only``: just that member (absent: an empty dict)."""
    path = Path(path)
    checked_regular(path, max_bytes=_NO_LIMIT)
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if only is not None:
                infos = [i for i in infos if i.filename == f"{only}.npy"]
            _check_inflation(infos, path)
            for info in infos:
                if not info.filename.endswith(".npy") or info.is_dir():
                    raise _bad(path, ".npz", f"member {info.filename!r} is not a .npy array")
                out[info.filename[:-4]] = _npz_member(zf, info, path)
    except ArtifactError:
        raise
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise ArtifactError(f"cannot read {path} ({exc.strerror}); check the path") from exc
        raise _bad(path, ".npz", str(exc)) from None
    except MemoryError:
        raise _bad(path, ".npz", "an array does not fit in memory") from None
    except Exception as exc:  # BadZipFile, zlib errors, CRC mismatch, bad member names, ...
        raise _bad(path, ".npz", f"{type(exc).__name__}: {exc}") from None
    return out


_MAX_DIM = int(np.iinfo(np.intp).max)  # [0, 10**20]: 0 bytes, but numpy cannot shape it


def _st_tensor(name: str, info: Any, data_len: int, path: Any) -> tuple[np.dtype, tuple, int, int]:
    if not isinstance(info, dict) or set(info) - {"dtype", "shape", "data_offsets"}:
        raise _bad(path, ".safetensors", f"entry {name!r} is malformed")
    code = info.get("dtype")
    dtype = _ST_DTYPES.get(code) if isinstance(code, str) else None
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if dtype is None:
        raise _bad(path, ".safetensors", f"tensor {name!r} has unsupported dtype {code!r}")
    ok_shape = isinstance(shape, list) and all(  # a dimension numpy can hold (even beside a 0)
        isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= _MAX_DIM for s in shape
    )
    ok_off = (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        and 0 <= offsets[0] <= offsets[1] <= data_len
    )
    if not (ok_shape and ok_off):
        raise _bad(path, ".safetensors", f"tensor {name!r} has an invalid shape or byte range")
    if offsets[1] - offsets[0] != _nbytes(tuple(shape), dtype):
        raise _bad(path, ".safetensors", f"tensor {name!r}: shape {shape} does not match its bytes")
    return dtype, tuple(shape), offsets[0], offsets[1]


def read_safetensors(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``(arrays, header metadata)`` of a ``.safetensors`` file, validated (module docstring)."""
    path = Path(path)
    checked_regular(path, max_bytes=_NO_LIMIT)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read {path} ({exc.strerror or exc}); check the path") from exc
    if len(blob) < 8:
        raise _bad(
            path, ".safetensors", f"{len(blob)} bytes, shorter than the 8-byte header length"
        )
    (n,) = struct.unpack("<Q", blob[:8])
    if n > min(len(blob) - 8, _MAX_ST_HEADER):
        raise _bad(path, ".safetensors", f"header length {n} exceeds the file")
    try:
        header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(path, ".safetensors", f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise _bad(path, ".safetensors", "header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _bad(path, ".safetensors", "__metadata__ is not a string -> string mapping")
    data = memoryview(blob)[8 + n :]
    arrays: dict[str, np.ndarray] = {}
    for name, info in header.items():
        dtype, shape, b, e = _st_tensor(name, info, len(data), path)
        arr = np.frombuffer(data[b:e], dtype=dtype).reshape(shape).copy()
        if info["dtype"] == "BF16":
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        arrays[name] = arr
    return arrays, dict(meta)


def write_safetensors(
    fh: BinaryIO, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, str]
) -> None:
    """Write ``arrays`` (C-contiguous, little-endian numeric) as safetensors to ``fh``.

    Layout as the ``safetensors`` package writes it: tensors sorted by name, packed back to back,
    the JSON header padded with spaces to a multiple of 8 bytes.
    """
    header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
    parts, at = [], 0
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        code = _ST_NAMES.get(a.dtype)
        if code is None:
            raise ArtifactError(
                f"array {name!r} has dtype {a.dtype}, which safetensors cannot hold"
            )
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        parts.append(a)
        at += a.nbytes
    text = json_text(header, indent=None, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    fh.write(struct.pack("<Q", len(text)) + text)
    for a in parts:
        fh.write(a.tobytes())


def csr_from_parts(path: Any, name: str, info: Any, flat: dict[str, np.ndarray]) -> Any:
    """A CSR matrix from its parts, after checking the structure scipy would trust."""
    bad = ArtifactError(f"sparse array {name!r} in {path} is not a valid CSR matrix; re-create it")
    shape = info.get("shape") if isinstance(info, dict) else None
    parts = [flat.get(f"{name}.{p}") for p in ("data", "indices", "indptr")]
    if (
        not isinstance(shape, list)
        or len(shape) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
        or any(p is None or p.ndim != 1 for p in parts)
    ):
        raise bad
    data, indices, indptr = parts  # type: ignore[misc]
    rows, cols = shape
    if (
        indices.dtype.kind not in "iu"
        or indptr.dtype.kind not in "iu"
        or indptr.size != rows + 1
        or data.size != indices.size
        or (indptr.size and (indptr[0] != 0 or indptr[-1] != indices.size))
        or np.any(np.diff(indptr.astype(np.int64)) < 0)
        or (indices.size and (indices.min() < 0 or indices.max() >= cols))
    ):
        raise bad
    import scipy.sparse as sp

    return sp.csr_matrix((data, indices, indptr), shape=(rows, cols))


def read_array_file(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a ``.npy`` (under the name ``""``), ``.npz`` or ``.safetensors`` file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return {"": read_npy(path)}
    if suffix == ".npz":  # without the metadata member of a posgeom artifact
        return {k: v for k, v in read_npz(path).items() if k != "__posgeom__"}
    if suffix == ".safetensors":
        return read_safetensors(path)[0]
    raise ArtifactError(f"{path}: unsupported file type {suffix!r}; use .npy, .npz or .safetensors")
