"""Artifacts (arrays + checked JSON metadata in ONE file) and all-or-nothing results folders.

**Artifacts.** An artifact is a single file that carries its own metadata:

- ``.npz`` (``numpy.savez`` layout): the arrays, plus one member ``__posgeom__`` holding the
  metadata JSON as ``uint8`` bytes;
- ``.safetensors``: the arrays, with the metadata JSON in the header ``__metadata__["posgeom"]``.

Metadata layout (keys sorted, UTF-8)::

    {"kind": str, "posgeom_version": "X.Y.Z", "format": "npz" | "safetensors",
     "metadata": {...user metadata, e.g. creation options...},
     "arrays": {name: {"dtype": "<i8", "shape": [...], "sha256": hex}},
     "sparse": {name: {"format": "csr", "shape": [rows, cols]}},
     "metadata_sha256": hex}

``metadata_sha256`` is the SHA-256 of the canonical JSON (sorted keys, no spaces, ASCII) of every
other field. An array's ``sha256`` hashes its dtype string, its shape and its C-order bytes. A
sparse matrix ``X`` is stored as CSR components ``X.data``, ``X.indices``, ``X.indptr`` and comes
back as a ``scipy.sparse.csr_matrix``.

Written atomically (:func:`atomic_path`). The two-file layout of earlier versions (arrays +
``<path>.json``) still loads; saving over it removes the sidecar when posgeom wrote it. Loading
checks the file (:mod:`posgeom.io._arrayfiles`), kind, version (major.minor), metadata checksum,
arrays, checksums and sparse structure; each failure raises one
:class:`posgeom._errors.ArtifactError` line. Results folders: :func:`results_directory`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom import _version
from posgeom._errors import ArtifactError, PosgeomError
from posgeom._validation import check_param, check_path
from posgeom.io._arrayfiles import csr_from_parts, read_npz, read_safetensors, write_safetensors
from posgeom.io._atomic import atomic_path, canonical_json
from posgeom.io._claims import stamped_kind
from posgeom.io.outputs import check_output

__all__ = [
    "canonical_sha256",
    "check_output_file",
    "is_artifact",
    "load_artifact",
    "read_sidecar",
    "save_artifact",
    "sidecar_path",
]

log = logging.getLogger(__name__)
_SPARSE_PARTS = ("data", "indices", "indptr")
_FORMATS = ("npz", "safetensors")
_MEMBER = "__posgeom__"  # the metadata member of an .npz artifact


# ----------------------------------------------------------------------------- hashing helpers
def _array_sha256(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(a.dtype.str.encode())
    h.update(repr(tuple(int(s) for s in a.shape)).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def canonical_sha256(obj: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json` of ``obj``: the checksum of a JSON record (plan,
    vocabulary, configuration, metadata) that files store and compare."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def _metadata_sha256(sidecar: Mapping[str, Any]) -> str:
    return canonical_sha256({k: v for k, v in sidecar.items() if k != "metadata_sha256"})


def sidecar_path(path: str | os.PathLike) -> Path:
    """The JSON sidecar of an artifact of earlier versions: ``<path>.json``."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(str(version).split(".")[:2])


# ----------------------------------------------------------------------------- save
def _flatten(arrays: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    flat: dict[str, np.ndarray] = {}
    sparse: dict[str, dict] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or "." in name or name == _MEMBER:
            raise PosgeomError(
                f"array name {name!r} must be a non-empty string without '.' (and not {_MEMBER})"
            )
        if sp.issparse(value):
            csr = sp.csr_matrix(value)
            csr.sum_duplicates()
            sparse[name] = {"format": "csr", "shape": [int(s) for s in csr.shape]}
            for part in _SPARSE_PARTS:
                flat[f"{name}.{part}"] = np.ascontiguousarray(getattr(csr, part))
        else:
            a = np.ascontiguousarray(np.asarray(value))
            if a.dtype.hasobject or a.dtype.kind not in "biufc":
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
    overwrite: bool = True,
) -> Path:
    """Save ``arrays`` (numpy arrays or scipy sparse matrices) and JSON ``metadata`` as one file.

    Parameters
    ----------
    path : the file to write (``.npz`` or ``.safetensors``); its metadata is inside it.
    arrays : name -> ``np.ndarray`` (numeric) or scipy sparse matrix (stored as CSR components).
        Names may not contain ``"."``.
    metadata : JSON-serializable dict (e.g. the creation options), stored under ``"metadata"``.
    kind : what the artifact is (e.g. ``"position_counts"``); checked by :func:`load_artifact`.
    format : ``"npz"`` or ``"safetensors"``; ``None`` picks ``"safetensors"`` for a ``.safetensors``
        suffix and ``"npz"`` otherwise.
    overwrite : ``False`` refuses an existing ``path`` (atomically: never replaces a file that
        another writer created meanwhile).

    Returns the path. Atomic (module docstring): a failed write raises a one-line error.
    """
    path = Path(check_path(path, "save_artifact: path"))
    check_param("arrays", arrays, [Mapping], where="save_artifact")  # name -> array
    if format is None:
        format = "safetensors" if path.suffix == ".safetensors" else "npz"
    if format not in _FORMATS:
        raise PosgeomError(f"unknown artifact format {format!r}; use one of {list(_FORMATS)}")
    flat, sparse = _flatten(arrays)
    header: dict[str, Any] = {
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
    header["metadata_sha256"] = _metadata_sha256(header)
    text = canonical_json(header)
    with atomic_path(path, overwrite=overwrite) as tmp, open(tmp, "wb") as fh:
        if format == "npz":
            member = np.frombuffer(text.encode(), dtype=np.uint8)
            np.savez(fh, **flat, **{_MEMBER: member})
        else:
            write_safetensors(fh, flat, {"posgeom": text})
    legacy = sidecar_path(path)
    if legacy.is_file() and _is_legacy_sidecar(legacy):
        with contextlib.suppress(OSError):
            legacy.unlink()
    return path


# ----------------------------------------------------------------------------- load
def _is_legacy_sidecar(side: Path) -> bool:
    """Whether ``side`` is a sidecar posgeom wrote, unchanged: its metadata checksum verifies (a
    user's JSON that merely has ``kind`` and ``arrays`` keys is not one, and is kept)."""
    try:
        if side.stat().st_size > 64 << 20:
            return False
        doc = json.loads(side.read_text(encoding="utf-8"))
        return (
            isinstance(doc, dict)
            and {"kind", "arrays", "posgeom_version"} <= set(doc)
            and doc.get("metadata_sha256") == _metadata_sha256(doc)
        )
    except (OSError, ValueError, RecursionError):
        return False


def _parse_header(text: Any, where: Any) -> dict[str, Any]:
    try:
        header = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ArtifactError(
            f"metadata of {where} is not valid JSON ({exc}); re-create it"
        ) from None
    ok = isinstance(header, dict) and all(
        isinstance(header.get(k), t)
        for k, t in (("kind", str), ("arrays", dict), ("metadata", dict))
    )
    if not ok or not isinstance(header.get("sparse", {}), dict):
        raise ArtifactError(f"{where} does not hold posgeom artifact metadata; re-create it")
    return header


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(flat arrays, metadata header) of the file at ``path``, embedded or legacy sidecar."""
    if not path.is_file():
        what = "a folder, not an artifact file" if path.is_dir() else "missing"
        raise ArtifactError(f"artifact {path} is {what}; pass the file written by posgeom")
    if path.suffix == ".safetensors":
        flat, meta = read_safetensors(path)
        text = meta.get("posgeom")
    else:
        flat = read_npz(path)
        member = flat.pop(_MEMBER, None)
        text = None if member is None else member.astype(np.uint8, copy=False).tobytes()
    if text is not None:
        return flat, _parse_header(text, path)
    side = sidecar_path(path)
    if not side.is_file():
        raise ArtifactError(
            f"{path} carries no posgeom metadata (and no {side.name} of older versions); it was "
            "not written by posgeom: pass a posgeom artifact, or re-create it"
        )
    try:
        return flat, _parse_header(side.read_bytes(), side)
    except OSError as exc:
        raise ArtifactError(f"cannot read {side} ({exc.strerror}); check the file") from exc


def read_sidecar(path: str | os.PathLike) -> dict[str, Any]:
    """The whole metadata header of the artifact at ``path`` (embedded, or an old sidecar),
    parsed, not verified (:func:`load_artifact` verifies). Of an ``.npz`` only that member is read."""
    path = Path(check_path(path, "artifact path"))
    if path.suffix != ".safetensors" and path.is_file():
        member = read_npz(path, only=_MEMBER).get(_MEMBER)
        if member is not None:
            return _parse_header(member.astype(np.uint8, copy=False).tobytes(), path)
    return _read(path)[1]


def _check_header(path: Path, header: dict[str, Any], kind: str | None) -> None:
    found = header["kind"]
    if kind is not None and found != kind:
        raise ArtifactError(f"{path} holds a {found!r} artifact, not {kind!r}; pass the right file")
    saved = str(header.get("posgeom_version"))
    if _major_minor(saved) != _major_minor(_version.__version__):
        raise ArtifactError(
            f"{path} was written by posgeom {saved} but this is posgeom "
            f"{_version.__version__} (major.minor differ); re-create the artifact with this version"
        )
    try:
        digest = _metadata_sha256(header)
    except PosgeomError:
        digest = None
    if header.get("metadata_sha256") != digest:
        raise ArtifactError(
            f"metadata checksum of {path} differs from its content: the metadata was edited or "
            "damaged; re-create the artifact instead of editing it"
        )


def _check_arrays(path: Path, flat: dict[str, np.ndarray], expected: dict[str, Any]) -> None:
    if set(flat) != set(expected):
        missing, extra = sorted(set(expected) - set(flat)), sorted(set(flat) - set(expected))
        raise ArtifactError(
            f"arrays in {path} do not match its metadata (missing {missing}, unexpected {extra}); "
            "re-create the artifact"
        )
    for name, info in expected.items():
        digest = _array_sha256(flat[name])
        want = info.get("sha256") if isinstance(info, dict) else None
        if digest != want:
            raise ArtifactError(
                f"checksum of array {name!r} in {path} differs from its metadata "
                f"(sha256 {digest[:12]}... != {str(want)[:12]}...): the data was changed or "
                "damaged; re-create the artifact"
            )


def load_artifact(
    path: str | os.PathLike, *, kind: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load an artifact of :func:`save_artifact`, verifying kind, version and checksums: its
    ``(arrays, metadata)`` (sparse arrays as ``csr_matrix``; the user metadata given at save
    time). Any problem raises :class:`ArtifactError` naming the file, what differs and the fix."""
    path = Path(check_path(path, "load_artifact: path"))
    flat, header = _read(path)
    _check_header(path, header, kind)
    _check_arrays(path, flat, header["arrays"])
    arrays: dict[str, Any] = {k: v for k, v in flat.items() if "." not in k}
    for name, info in header.get("sparse", {}).items():
        arrays[name] = csr_from_parts(path, name, info, flat)
    return arrays, header["metadata"]


def is_artifact(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file posgeom wrote (it parses and carries posgeom metadata)."""
    try:
        _read(Path(path))
    except PosgeomError:
        return False
    return True


def _output_kind(path: Path) -> str | None:
    """``"artifact:<kind>"`` of a posgeom artifact whose checksums verify, else a page's stamp."""
    try:
        return f"artifact:{read_sidecar(path)['kind']}" if load_artifact(path) else None
    except PosgeomError:
        return stamped_kind(path)


def check_output_file(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    kinds: Iterable[str] | None = None,
    inputs: Iterable[str | os.PathLike] = (),
) -> Path:
    """Check an artifact output before the work (:func:`posgeom.io.outputs.check_output`): only a
    posgeom artifact of ``kinds`` (default: any), checksums verified, is replaced (``overwrite``)."""
    kinds = ("artifact:*",) if kinds is None else tuple(f"artifact:{k}" for k in kinds)
    return check_output(
        path, kinds=kinds, overwrite=overwrite, inputs=inputs, identify=_output_kind
    )
