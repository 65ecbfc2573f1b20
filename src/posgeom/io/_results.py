"""Helpers of :func:`posgeom.io.outputs.results_directory`: manifest, refusals, locked commit."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from posgeom import _version
from posgeom._errors import PosgeomError
from posgeom.io._atomic import atomic_write_text, fsync_path, signals_deferred, temp_sibling
from posgeom.io._claims import commit_refusal
from posgeom.io._entries import entry_problem, unlink_inside
from posgeom.io._locks import folder_lock
from posgeom.io.jsonfiles import json_text, read_json

log = logging.getLogger("posgeom.io.artifacts")
RESULTS_MANIFEST = "posgeom-manifest.json"
_RESULTS_KIND = "posgeom-results"
#: the ``content`` of results folders of versions that did not record their kind: it matches any
#: kind of results folder (not figures, not a work folder)
ANY_RESULTS = "results"
RESULTS_KINDS = ("run", "compare", "analyze-model", "extend", ANY_RESULTS)
_NESTING = 8  # work folders inside work folders, at most (an experiment's runs: 1)


def _manifest(folder: Path, _depth: int = 0) -> dict[str, Any] | None:
    """The manifest of a folder posgeom wrote, or None (none there, or not posgeom's). A
    posgeom manifest with an entry posgeom would not write (:mod:`posgeom.io._entries`; the
    manifests of the sub-folders it lists too) is refused with one :class:`PosgeomError`: every
    caller that deletes, replaces or writes what a manifest lists reads it here first."""
    try:
        doc = read_json(folder / RESULTS_MANIFEST)
    except PosgeomError:
        return None
    ok = isinstance(doc, dict) and doc.get("kind") == _RESULTS_KIND
    if not ok or not isinstance(doc.get("files"), dict):
        return None
    for rel, info in doc["files"].items():
        problem = entry_problem(folder, rel, info)
        if problem is None and "folder" in info and (folder / rel).is_dir():
            if _depth >= _NESTING:
                problem = f"nests work folders more than {_NESTING} deep"
            else:
                _manifest(folder / rel, _depth + 1)
        if problem is not None:
            shown = repr(rel[:80]) + ("..." if len(rel) > 80 else "")
            raise PosgeomError(
                f"{folder / RESULTS_MANIFEST}: the entry {shown} {problem}; posgeom did not "
                "write this manifest (or it was edited) and deletes or writes nothing it lists: "
                "move the folder aside and choose another folder"
            )
    return doc


def sha256_file(path: Path) -> str:
    """The SHA-256 hex digest of the file at ``path``, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def changed_file(path: Path, info: Any) -> bool:
    """Whether a file listed in a manifest differs from its record (absent files have not). A
    record may keep the file's previous state under ``"was"`` (a work folder records a file just
    before renaming it into place): either state is unchanged. A nested folder (``"folder"``)
    is checked by its own manifest."""
    if not isinstance(info, dict):
        return True
    if "folder" in info:
        return path.exists() and not path.is_dir()
    if isinstance(info.get("was"), dict) and not changed_file(path, info["was"]):
        return False
    if "symlink" in info:
        return os.readlink(path) != info["symlink"] if path.is_symlink() else path.exists()
    if not path.exists() and not path.is_symlink():
        return False
    try:
        return (
            path.is_symlink()
            or not path.is_file()
            or path.stat().st_size != info.get("size")
            or sha256_file(path) != info.get("sha256")
        )
    except OSError:
        return True


def listing(folder: Path) -> set[str]:
    """Relative POSIX paths of every file and symlink under ``folder`` (folders not listed)."""
    out = set()
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            out.add((Path(root) / name).relative_to(folder).as_posix())
    return out


def same_kind(found: Any, wanted: str) -> bool:
    """Whether a folder whose manifest records ``found`` may be replaced by one of ``wanted``."""
    any_results = ANY_RESULTS in (found, wanted) and {found, wanted} <= set(RESULTS_KINDS)
    return found == wanted or any_results


def unlisted(folder: Path, files: dict[str, Any]) -> list[str]:
    """Files under ``folder`` its manifest does not list (nor a nested folder it lists)."""
    nested = [
        rel + "/" for rel, info in files.items() if isinstance(info, dict) and "folder" in info
    ]
    return sorted(
        rel
        for rel in listing(folder) - set(files) - {RESULTS_MANIFEST}
        if not any(rel.startswith(n) for n in nested)
    )


def kind_refusal(path: Path, manifest: dict[str, Any], kinds: tuple[str, ...]) -> str | None:
    """Why the posgeom folder ``path`` (its ``manifest``) is not of one of ``kinds``, or None."""
    found = manifest.get("content")
    if not kinds or any(same_kind(found, k) for k in kinds):
        return None
    return (
        f"{path} is a posgeom {found} folder, not a {' or '.join(kinds)} folder; posgeom "
        "replaces only a folder of the kind it writes: choose another folder"
    )


def owned_refusal(
    path: Path, manifest: dict[str, Any], what: str, changed: bool = True
) -> str | None:
    """Why the files of the posgeom folder ``path`` are not all posgeom's and (with
    ``changed``) unchanged (``what`` the operation that would lose them), or None."""
    foreign = unlisted(path, manifest["files"])
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        return (
            f"{path} holds files posgeom did not write ({shown}); {what} would delete them: "
            "move them out or choose another folder"
        )
    files = sorted(manifest["files"].items()) if changed else []
    edited = [rel for rel, info in files if changed_file(path / rel, info)]
    if edited:
        return (
            f"{path}: {', '.join(edited[:3])} changed since posgeom wrote it (its size or SHA-256 "
            f"differs from {RESULTS_MANIFEST}); {what} would lose the change: move the "
            "folder or the file out, or choose another folder"
        )
    return None


def refusal(
    path: Path, overwrite: bool, inputs: Iterable[Any], kinds: tuple[str, ...] = ()
) -> str | None:
    """Why ``path`` may not become (or be replaced by) a results folder of one of ``kinds``
    (empty: any), or None."""
    target = path.resolve()
    for item in inputs:
        p = Path(item).expanduser().resolve()
        if p == target or target in p.parents:
            return (
                f"the input {item} is inside the output folder {path}; choose an output folder "
                "that holds none of the inputs"
            )
    if path.exists() and not path.is_dir():
        return f"{path} exists and is not a folder; choose another output folder"
    if not path.is_dir() or not any(path.iterdir()):
        return None
    if not overwrite:
        return (
            f"output folder {path} already exists and is not empty; pass --overwrite (replaces "
            "only a results folder posgeom wrote) or choose another folder"
        )
    manifest = _manifest(path)
    if manifest is None:
        return (
            f"{path} was not written by posgeom (no {RESULTS_MANIFEST}); --overwrite replaces "
            "only posgeom's results folders: choose another folder"
        )
    return kind_refusal(path, manifest, kinds) or owned_refusal(path, manifest, "--overwrite")


def manifest_files(folder: Path) -> dict[str, Any]:
    """``relative path -> {"size", "sha256"}`` of the manifest in ``folder`` (``{}``: none)."""
    return (_manifest(folder) or {"files": {}})["files"]


def file_record(path: Path) -> dict[str, Any]:
    """A manifest's record of the file ``path``: ``{"size", "sha256"}``."""
    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def write_listed(folder: Path, files: list[Path], content: str = "files") -> None:
    """A manifest in ``folder`` listing ``files`` (paths under it) with sizes and SHA-256."""
    listed = {p.relative_to(folder).as_posix(): file_record(p) for p in files}
    _write_manifest_doc(folder, content, listed)


def _write_manifest_doc(folder: Path, content: str, files: dict[str, Any]) -> None:
    """``folder``'s manifest (kind, ``content``, posgeom version, ``files``), written atomically."""
    doc = {
        "kind": _RESULTS_KIND,
        "content": content,
        "posgeom_version": _version.__version__,
        "files": files,
    }
    atomic_write_text(folder / RESULTS_MANIFEST, json_text(doc, indent=1, sort_keys=True) + "\n")


def write_manifest(tmp: Path, content: str) -> None:
    files = {}
    for rel in sorted(listing(tmp)):
        p = tmp / rel
        if p.is_symlink():
            files[rel] = {"symlink": os.readlink(p)}
            continue
        fsync_path(p)
        files[rel] = file_record(p)
    _write_manifest_doc(tmp, content, files)
    for root, _, _ in os.walk(tmp):
        fsync_path(Path(root), directory=True)


def _remove_listed(old: Path) -> None:
    """Delete what an old results folder's manifest lists, then the folders left empty."""
    try:  # checked before the commit (refusal), under the same lock
        manifest = _manifest(old) or {"files": {}}
    except PosgeomError as exc:
        log.warning("kept the replaced results folder %s: %s", old, exc)
        return
    for rel in [*manifest["files"], RESULTS_MANIFEST]:
        with contextlib.suppress(OSError, PosgeomError):
            unlink_inside(old, rel)
    for root, _, _ in sorted(os.walk(old), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(root)
    if old.exists():
        log.warning("kept files that appeared in the replaced results folder: %s", old)


def locked_refusal(
    path: Path, overwrite: bool, inputs: Iterable[Any], kinds: tuple[str, ...] = ()
) -> str | None:
    """:func:`refusal` while no other posgeom process commits beside ``path``: its checks read
    ``path`` in several steps, and a commit in between (old folder renamed aside, new one in)
    would make a posgeom folder look foreign."""
    with folder_lock(path.parent) if path.parent.is_dir() else contextlib.nullcontext():
        return refusal(path, overwrite, inputs, kinds)


def commit_folder(
    tmp: Path,
    path: Path,
    overwrite: bool,
    inputs: tuple,
    kinds: tuple[str, ...] = (),
    companions: tuple[tuple[Path, Path], ...] = (),
) -> None:
    """Rename ``tmp`` onto ``path`` and each companion ``(temporary file, file)`` onto its file,
    all or none: under the parent folder's lock with SIGINT/SIGTERM held, after the checks are
    repeated (another process may have written meanwhile). Companions are siblings of ``path``."""
    with folder_lock(path.parent), signals_deferred():
        reason = refusal(path, overwrite, inputs, kinds) or next(
            (r for _, f in companions if (r := commit_refusal(f)) is not None), None
        )
        if reason is not None:
            raise PosgeomError(reason)
        old = None
        if path.is_dir() and any(path.iterdir()):
            old = temp_sibling(path, "old")
            os.rename(path, old)
        os.replace(tmp, path)  # onto nothing, or onto an empty folder
        try:
            for part, target in companions:
                os.replace(part, target)
        except BaseException:
            os.rename(path, tmp)  # put the old state back: neither is committed
            if old is not None:
                os.rename(old, path)
            raise
        if old is not None:
            _remove_listed(old)
        fsync_path(path.parent, directory=True)
