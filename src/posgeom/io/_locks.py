"""Folder locks (POSIX ``flock`` on the folder itself; nothing is written for them).

- :func:`folder_lock`: an exclusive lock for a few renames (commits into a folder run one at a
  time), waited for at most :data:`WAIT_S` seconds;
- :func:`hold`: a work folder's lock for a whole run, taken without waiting (a second writer is
  refused at once) and kept until :func:`release`. The kernel drops a ``flock`` when the
  process's descriptor closes, so a killed run leaves no stale lock.

Within one process a held folder's :func:`folder_lock` is the hold itself (an ``flock`` taken
through two descriptors of one process would wait for itself); its threads take turns by a
re-entrant lock, and :func:`release` counts the holds.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from posgeom._errors import PosgeomError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks
    fcntl = None  # type: ignore[assignment]

__all__ = ["WAIT_S", "folder_lock", "hold", "release"]

WAIT_S = 60.0  # the longest a commit waits for a folder's lock

#: realpath of a held folder -> [descriptor, times held, the lock of this process's threads]
_HELD: dict[str, list] = {}
_GUARD = threading.Lock()


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` (POSIX): commits into it run one at a time. Not
    re-entrant (a process must not take it twice on the same folder), except on a folder this
    process holds (:func:`hold`)."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    held = _HELD.get(os.path.realpath(folder))
    if held is not None:
        with held[2]:
            yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + WAIT_S
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise PosgeomError(
                    f"{folder} stays locked by another posgeom process (a run that writes there "
                    "holds it until it ends); wait until it ends, or write elsewhere"
                )
            time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def hold(folder: Path) -> bool:
    """Take the whole-run lock of ``folder`` (an existing folder) without waiting; False when
    another process holds it (or is committing into it right now)."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    key = os.path.realpath(folder)
    with _GUARD:
        if key in _HELD:
            _HELD[key][1] += 1
            return True
        fd = os.open(folder, os.O_RDONLY)
        if not _try_lock(fd):
            os.close(fd)
            return False
        _HELD[key] = [fd, 1, threading.RLock()]
        return True


def release(key: str) -> None:
    """Give back one :func:`hold` of the folder whose realpath is ``key``."""
    with _GUARD:
        entry = _HELD.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _HELD[key]
            os.close(entry[0])
