"""Manifest entries as untrusted data: the one check of what a ``posgeom-manifest.json`` lists,
before posgeom deletes, replaces or writes anything it names (a manifest with one bad entry is
refused as a whole, :func:`entry_problem`):

- **the key** is a relative POSIX path as posgeom writes them (:func:`key_problem`): not
  absolute, no ``..``, ``.`` or empty part, no control character, each part at most 255 bytes,
  the whole at most 4,096;
- **inside the folder** (:func:`place_problem`): no existing parent is a symbolic link;
- **the record** is one posgeom writes: ``{"size": int, "sha256": hex}`` (with ``"was"`` of the
  same form), ``{"symlink": str}`` only where a symbolic link stands (or nothing),
  ``{"folder": kind}`` only where a real sub-folder stands (or nothing).

Deleting (:func:`unlink_inside`) walks the parents by file descriptor without following symbolic
links, so a parent swapped for a link after the check is not followed either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError

__all__ = ["entry_problem", "key_problem", "place_problem", "unlink_inside"]

_HEX = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DOT_PART = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")  # an empty, "." or ".." part
_PART_MAX, _PATH_MAX = 255, 4096


def key_problem(rel: Any) -> str | None:
    """Why ``rel`` is not a relative POSIX path posgeom could have written (module docstring),
    or None. Says what is wrong, e.g. ``"has a '..' part"``."""
    if not isinstance(rel, str) or not rel:
        return "is not a non-empty relative path"
    if _CONTROL.search(rel):
        return "holds a NUL or another control character"
    try:
        raw = os.fsencode(rel)
    except UnicodeEncodeError:
        return "is not a valid file name"
    if rel.startswith("/") or os.path.isabs(rel):
        return "is an absolute path"
    if _DOT_PART.search(rel):
        return "has a '..', '.' or empty part"
    if len(raw) > _PATH_MAX or max(map(len, raw.split(b"/"))) > _PART_MAX:
        return f"is longer than a path can be ({_PART_MAX} bytes a part, {_PATH_MAX} in all)"
    return None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def place_problem(folder: Path, rel: str) -> str | None:
    """Why ``folder / rel`` (``rel`` passed :func:`key_problem`) may resolve outside ``folder``:
    an existing parent that is a symbolic link; or None."""
    if "/" not in rel:
        return None
    here = folder
    for name in rel.split("/")[:-1]:
        here = here / name
        st = _lstat(here)
        if st is not None and stat.S_ISLNK(st.st_mode):
            return f"lies under the symbolic link {here.relative_to(folder).as_posix()}"
        if st is None or not stat.S_ISDIR(st.st_mode):
            return None  # nothing exists below it
    return None


def _file_record(info: Any, *, was: bool) -> bool:
    """Whether ``info`` is ``{"size": int >= 0, "sha256": 64 hex}`` (``was``: with an optional
    ``"was"`` record of that form), nothing else."""
    if not isinstance(info, dict):
        return False
    if "was" in info:
        if not was or len(info) != 3 or not _file_record(info["was"], was=False):
            return False
    elif len(info) != 2:
        return False
    size, digest = info.get("size"), info.get("sha256")
    if type(size) is not int or size < 0 or type(digest) is not str:
        return False
    return _HEX.fullmatch(digest) is not None


def _record_problem(folder: Path, rel: str, info: Any) -> str | None:
    if not isinstance(info, dict):
        return "has a record that is not an object"
    if "folder" not in info and "symlink" not in info:
        ok = _file_record(info, was=True)
        return None if ok else "has a record that posgeom does not write (a size and a SHA-256)"
    for key, want, what in (
        ("folder", stat.S_ISDIR, "a folder, but what stands there is not a real folder"),
        ("symlink", stat.S_ISLNK, "a symbolic link, but what stands there is not one"),
    ):
        if key not in info:
            continue
        if set(info) != {key} or not isinstance(info[key], str):
            return f"has a {key} record that posgeom does not write"
        st = _lstat(folder / rel)
        return None if st is None or want(st.st_mode) else f"is listed as {what}"
    return None


def entry_problem(folder: Path, rel: Any, info: Any) -> str | None:
    """Why the entry ``rel: info`` of the manifest of ``folder`` is not one posgeom wrote there
    (module docstring), or None."""
    return key_problem(rel) or place_problem(folder, rel) or _record_problem(folder, rel, info)


def unlink_inside(folder: Path, rel: str, *, directory: bool = False) -> None:
    """Delete the file or symbolic link ``folder / rel`` (``directory``: the empty folder), its
    parents opened one by one without following a symbolic link; nothing when it is absent, a
    folder (a file is asked) or not empty. ``rel`` must pass :func:`key_problem`."""
    parts = rel.split("/")
    remove = os.rmdir if directory else os.unlink
    if remove not in os.supports_dir_fd:  # pragma: no cover - no dir_fd (Windows)
        if place_problem(folder, rel) is None:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, OSError):
                remove(folder / rel)
        return
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for name in parts[:-1]:
            inner = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = inner
        remove(parts[-1], dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PosgeomError(
                f"{folder / rel} lies under a symbolic link that appeared while posgeom cleared "
                f"{folder}; nothing was deleted through it: remove the link and run again"
            ) from None
        if not directory or exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY):
            raise
    finally:
        os.close(fd)
