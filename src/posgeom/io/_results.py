"""Helpers of :func:`posgeom.io.artifacts.results_directory`: manifest, refusals, locked commit."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from posgeom import _version
from posgeom._errors import PosgeomError
from posgeom.io._atomic import atomic_write_text, fsync_path, signals_deferred, temp_sibling

log = logging.getLogger("posgeom.io.artifacts")
RESULTS_MANIFEST = "posgeom-manifest.json"
_RESULTS_KIND = "posgeom-results"


def _manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of a results folder posgeom wrote, or None."""
    from posgeom._jsonfiles import read_json

    try:
        doc = read_json(folder / RESULTS_MANIFEST)
    except PosgeomError:
        return None
    ok = isinstance(doc, dict) and doc.get("kind") == _RESULTS_KIND
    return doc if ok and isinstance(doc.get("files"), dict) else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def changed_file(path: Path, info: Any) -> bool:
    """Whether a file listed in a manifest differs from its record (absent files have not)."""
    if not isinstance(info, dict):
        return True
    if "symlink" in info:
        return path.is_symlink() and os.readlink(path) != info["symlink"]
    if not path.exists() and not path.is_symlink():
        return False
    try:
        return (
            path.is_symlink()
            or not path.is_file()
            or path.stat().st_size != info.get("size")
            or _sha256(path) != info.get("sha256")
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


def refusal(path: Path, overwrite: bool, inputs: Iterable[Any]) -> str | None:
    """Why ``path`` may not become (or be replaced by) a results folder, or None."""
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
    foreign = sorted(listing(path) - set(manifest["files"]) - {RESULTS_MANIFEST})
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        return (
            f"{path} holds files posgeom did not write ({shown}); --overwrite would delete them: "
            "move them out or choose another folder"
        )
    changed = [
        rel for rel, info in sorted(manifest["files"].items()) if changed_file(path / rel, info)
    ]
    if changed:
        return (
            f"{path}: {', '.join(changed[:3])} changed since posgeom wrote it (its size or SHA-256 "
            f"differs from {RESULTS_MANIFEST}); --overwrite would lose the change: move the "
            "folder or the file out, or choose another folder"
        )
    return None


def manifest_files(folder: Path) -> dict[str, Any] | None:
    """``relative path -> {"size", "sha256"}`` of the manifest in ``folder``, or None."""
    doc = _manifest(folder)
    return None if doc is None else doc["files"]


def write_listed(folder: Path, files: list[Path], content: str = "files") -> None:
    """A manifest in ``folder`` listing ``files`` (paths under it) with sizes and SHA-256."""
    listed = {
        p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
        for p in files
    }
    doc = {
        "kind": _RESULTS_KIND,
        "content": content,
        "posgeom_version": _version.__version__,
        "files": listed,
    }
    atomic_write_text(folder / RESULTS_MANIFEST, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def write_manifest(tmp: Path, content: str) -> None:
    files = {}
    for rel in sorted(listing(tmp)):
        p = tmp / rel
        if p.is_symlink():
            files[rel] = {"symlink": os.readlink(p)}
            continue
        fsync_path(p)
        files[rel] = {"size": p.stat().st_size, "sha256": _sha256(p)}
    doc = {
        "kind": _RESULTS_KIND,
        "content": content,
        "posgeom_version": _version.__version__,
        "files": files,
    }
    atomic_write_text(tmp / RESULTS_MANIFEST, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    for root, _, _ in os.walk(tmp):
        fsync_path(Path(root), directory=True)


def _remove_listed(old: Path) -> None:
    """Delete what an old results folder's manifest lists, then the folders left empty."""
    manifest = _manifest(old) or {"files": {}}
    for rel in [*manifest["files"], RESULTS_MANIFEST]:
        with contextlib.suppress(OSError):
            (old / rel).unlink()
    for root, _, _ in sorted(os.walk(old), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(root)
    if old.exists():
        log.warning("kept files that appeared in the replaced results folder: %s", old)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` (POSIX); results commits in it run one at a time."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def locked_refusal(path: Path, overwrite: bool, inputs: Iterable[Any]) -> str | None:
    """:func:`refusal` while no other posgeom process commits beside ``path``: its checks read
    ``path`` in several steps, and a commit in between (old folder renamed aside, new one in)
    would make a posgeom folder look foreign."""
    if not path.parent.is_dir():
        return refusal(path, overwrite, inputs)
    with _folder_lock(path.parent):
        return refusal(path, overwrite, inputs)


def commit_folder(tmp: Path, path: Path, overwrite: bool, inputs: tuple) -> None:
    with _folder_lock(path.parent), signals_deferred():
        reason = refusal(path, overwrite, inputs)  # again: another process may have written
        if reason is not None:
            raise PosgeomError(reason)
        if path.is_dir() and any(path.iterdir()):
            old = temp_sibling(path, "old")
            os.rename(path, old)
            os.rename(tmp, path)
            _remove_listed(old)
        else:
            os.replace(tmp, path)  # onto nothing, or onto an empty folder
        fsync_path(path.parent, directory=True)
