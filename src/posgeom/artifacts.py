"""Saving and loading arrays with checked JSON metadata, and atomic file writes.

An artifact is two files written next to each other:

- the array file ``path``: ``.npz`` (``numpy.savez``, read back with ``allow_pickle=False``) or
  ``.safetensors``;
- the JSON sidecar ``<path>.json`` (e.g. ``counts.npz.json``), for both formats. The sidecar is the
  authority that :func:`load_artifact` checks; a safetensors file also carries a copy of the sidecar
  in its header ``__metadata__["posgeom"]`` so the file describes itself, but that copy is not
  needed for loading.

Sidecar layout (keys sorted, UTF-8)::

    {"kind": str, "posgeom_version": "X.Y.Z", "format": "npz" | "safetensors",
     "metadata": {...user metadata, e.g. creation options...},
     "arrays": {name: {"dtype": "<i8", "shape": [...], "sha256": hex}},
     "sparse": {name: {"format": "csr", "shape": [rows, cols]}},
     "metadata_sha256": hex}

``metadata_sha256`` is the SHA-256 of the canonical JSON (sorted keys, no spaces, ASCII) of every
other field. An array's ``sha256`` hashes its dtype string, its shape and its C-order bytes. A
sparse matrix ``X`` is stored as CSR components ``X.data``, ``X.indices``, ``X.indptr`` and comes
back as a ``scipy.sparse.csr_matrix``.

Loading checks, in order: the sidecar exists; the kind; the posgeom version (major.minor must
match); the metadata checksum (edited JSON); the set of arrays and each array's checksum
(tampered data). Each failure raises :class:`posgeom._errors.ArtifactError` saying what differs.

Writes go to a temporary file in the same folder followed by ``os.replace`` (atomic on POSIX and
Windows); the array file is replaced first and the sidecar second, so an interrupted save leaves at
worst a checksum mismatch that loading reports, never a silently inconsistent pair.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom import _version
from posgeom._errors import ArtifactError, PosgeomError, require

__all__ = [
    "atomic_directory",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_json",
    "json_default",
    "load_artifact",
    "read_sidecar",
    "save_artifact",
    "sidecar_path",
]

_SPARSE_PARTS = ("data", "indices", "indptr")
_FORMATS = ("npz", "safetensors")


# ----------------------------------------------------------------------------- atomic writes
@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the folder of ``path``; on success move it onto ``path``.

    Write the file at the yielded path; when the ``with`` block ends without an exception the file
    is moved onto ``path`` with ``os.replace`` (atomic). On an exception the temporary file is
    removed and ``path`` is left untouched. The parent folder is created if needed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, ``os.replace``)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode(encoding))


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; on success it becomes ``path``.

    A results folder is therefore either complete or absent: an exception (or Ctrl-C) inside the
    ``with`` block removes the temporary folder and leaves ``path`` as it was. An existing
    non-empty ``path`` is refused unless ``overwrite=True``, in which case it is replaced.
    """
    import shutil

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise PosgeomError(f"{path} exists and is not a folder; choose another output folder")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise PosgeomError(
            f"output folder {path} already exists and is not empty; pass --overwrite "
            "(overwrite=True) or choose another folder"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ----------------------------------------------------------------------------- hashing helpers
def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for numpy scalars/arrays, sets, paths and mappings."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, ASCII only, NaN refused."""
    try:
        return json.dumps(
            obj,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
            allow_nan=False,
            default=json_default,
        )
    except (TypeError, ValueError) as exc:
        raise PosgeomError(
            f"artifact metadata must be plain JSON (str, int, finite float, bool, None, lists, "
            f"dicts): {exc}; convert the value before saving"
        ) from exc


def _array_sha256(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(a.dtype.str.encode())
    h.update(repr(tuple(int(s) for s in a.shape)).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def _metadata_sha256(sidecar: Mapping[str, Any]) -> str:
    body = {k: v for k, v in sidecar.items() if k != "metadata_sha256"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def sidecar_path(path: str | os.PathLike) -> Path:
    """The JSON sidecar of an artifact: ``<path>.json``."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(str(version).split(".")[:2])


# ----------------------------------------------------------------------------- save / load
def _flatten(arrays: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    flat: dict[str, np.ndarray] = {}
    sparse: dict[str, dict] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or "." in name:
            raise PosgeomError(f"array name {name!r} must be a non-empty string without '.'")
        if sp.issparse(value):
            csr = sp.csr_matrix(value)
            csr.sum_duplicates()
            sparse[name] = {"format": "csr", "shape": [int(s) for s in csr.shape]}
            for part in _SPARSE_PARTS:
                flat[f"{name}.{part}"] = np.ascontiguousarray(getattr(csr, part))
        else:
            a = np.ascontiguousarray(np.asarray(value))
            if a.dtype.hasobject or a.dtype.kind in "USV":
                raise PosgeomError(
                    f"array {name!r} has dtype {a.dtype}; artifacts hold numeric arrays only "
                    "(store strings in the metadata)"
                )
            flat[name] = a
    return flat, sparse


def save_artifact(
    path: str | os.PathLike,
    arrays: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    *,
    kind: str,
    format: str | None = None,
) -> Path:
    """Save ``arrays`` (numpy arrays or scipy sparse matrices) and JSON ``metadata`` atomically.

    Parameters
    ----------
    path : array file to write; the sidecar goes to ``<path>.json``.
    arrays : name -> ``np.ndarray`` (numeric) or scipy sparse matrix (stored as CSR components).
        Names may not contain ``"."``.
    metadata : JSON-serializable dict (e.g. the creation options), stored under ``"metadata"``.
    kind : what the artifact is (e.g. ``"position_counts"``); checked by :func:`load_artifact`.
    format : ``"npz"`` or ``"safetensors"``; ``None`` picks ``"safetensors"`` for a ``.safetensors``
        suffix and ``"npz"`` otherwise.

    Returns the array file path.
    """
    path = Path(path)
    if format is None:
        format = "safetensors" if path.suffix == ".safetensors" else "npz"
    if format not in _FORMATS:
        raise PosgeomError(f"unknown artifact format {format!r}; use one of {list(_FORMATS)}")
    flat, sparse = _flatten(arrays)
    sidecar: dict[str, Any] = {
        "kind": str(kind),
        "posgeom_version": _version.__version__,
        "format": format,
        "metadata": json.loads(canonical_json(dict(metadata or {}))),
        "arrays": {
            k: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _array_sha256(a)}
            for k, a in flat.items()
        },
        "sparse": sparse,
    }
    sidecar["metadata_sha256"] = _metadata_sha256(sidecar)
    text = json.dumps(sidecar, sort_keys=True, indent=1, ensure_ascii=True) + "\n"

    if format == "npz":
        buf = io.BytesIO()
        np.savez(buf, **flat)
        atomic_write_bytes(path, buf.getvalue())
    else:
        st = require("safetensors.numpy", "hf")
        header = {"posgeom": canonical_json(sidecar)}
        atomic_write_bytes(path, st.save(flat, metadata=header))
    atomic_write_text(sidecar_path(path), text)
    return path


def _read_arrays(path: Path, format: str) -> dict[str, np.ndarray]:
    try:
        if format == "npz":
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        st = require("safetensors.numpy", "hf")
        return dict(st.load(path.read_bytes()))
    except FileNotFoundError as exc:
        raise ArtifactError(f"artifact array file {path} is missing; re-create it") from exc
    except Exception as exc:  # zipfile CRC errors, truncated headers, pickled objects, ...
        raise ArtifactError(
            f"artifact array file {path} is corrupted or not a {format} file ({exc}); "
            "re-create the artifact"
        ) from exc


def load_artifact(
    path: str | os.PathLike, *, kind: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load an artifact written by :func:`save_artifact`, verifying kind, version and checksums.

    Returns ``(arrays, metadata)``: arrays by name (sparse ones as ``csr_matrix``) and the user
    metadata dict given at save time (the whole sidecar is returned by :func:`read_sidecar`).
    Raises :class:`ArtifactError` naming what differs.
    """
    path = Path(path)
    side = read_sidecar(path)
    found = side.get("kind")
    if kind is not None and found != kind:
        raise ArtifactError(f"{path} holds a {found!r} artifact, not {kind!r}; pass the right file")
    saved_version = str(side.get("posgeom_version"))
    if _major_minor(saved_version) != _major_minor(_version.__version__):
        raise ArtifactError(
            f"{path} was written by posgeom {saved_version} but this is posgeom "
            f"{_version.__version__} (major.minor differ); re-create the artifact with this version"
        )
    if side.get("metadata_sha256") != _metadata_sha256(side):
        raise ArtifactError(
            f"metadata checksum of {sidecar_path(path)} differs from its content: the JSON was "
            "edited or damaged; re-create the artifact instead of editing it"
        )
    fmt = side.get("format", "npz")
    flat = _read_arrays(path, fmt)
    expected = side["arrays"]
    if set(flat) != set(expected):
        missing, extra = sorted(set(expected) - set(flat)), sorted(set(flat) - set(expected))
        raise ArtifactError(
            f"arrays in {path} do not match its metadata (missing {missing}, unexpected {extra}); "
            "re-create the artifact"
        )
    for name, info in expected.items():
        digest = _array_sha256(flat[name])
        if digest != info["sha256"]:
            raise ArtifactError(
                f"checksum of array {name!r} in {path} differs from its metadata "
                f"(sha256 {digest[:12]}... != {info['sha256'][:12]}...): the data was changed or "
                "damaged; re-create the artifact"
            )
    arrays: dict[str, Any] = {k: v for k, v in flat.items() if "." not in k}
    for name, info in side.get("sparse", {}).items():
        parts = [flat[f"{name}.{p}"] for p in _SPARSE_PARTS]
        arrays[name] = sp.csr_matrix(tuple(parts), shape=tuple(info["shape"]))
    return arrays, side["metadata"]


def read_sidecar(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed JSON sidecar of the artifact at ``path`` (no checks beyond valid JSON)."""
    side_path = sidecar_path(path)
    if not side_path.exists():
        raise ArtifactError(
            f"metadata sidecar {side_path} is missing for artifact {path}; artifacts are saved as "
            "two files (arrays + JSON): copy both, or re-create the artifact"
        )
    try:
        side = json.loads(side_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArtifactError(
            f"metadata sidecar {side_path} is not valid JSON ({exc}); re-create the artifact"
        ) from exc
    if not isinstance(side, dict) or "arrays" not in side or "kind" not in side:
        raise ArtifactError(f"{side_path} is not a posgeom artifact sidecar; re-create it")
    return side
