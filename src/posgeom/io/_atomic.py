"""Atomic files, their temporaries, write errors and output checks (used by :mod:`posgeom.io.artifacts`).

Temporaries are hidden siblings of their target (``os.replace`` is atomic only on one
filesystem), named ``.<name>.posgeom-<host>-<pid>-<random>.tmp`` (``.old`` for a results folder
being replaced) so that :func:`clean_stale` can remove those of dead processes of this host.
Files and folders get the modes ``open`` and ``mkdir`` give (``0o666`` / ``0o777`` less the umask).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.io._claims import claimed, commit_refusal
from posgeom.io._locks import folder_lock

__all__ = [
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_json",
    "check_writable",
    "clean_stale",
    "json_default",
    "write_error",
]

_TEMP = re.compile(
    r"^\.(?P<name>.+)\.posgeom-(?P<host>[0-9a-f]{6})-(?P<pid>\d+)-[0-9a-f]{8}\.(?P<what>tmp|old)$"
)
_HINTS = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space (disk quota) or write elsewhere",
    errno.EROFS: "the filesystem is read-only; choose an output on a writable one",
    errno.EACCES: "you have no permission there; choose another output path",
    errno.EPERM: "you have no permission there; choose another output path",
    errno.EFBIG: "the file is too large for this filesystem or limit; write elsewhere",
    errno.ENOTDIR: "a file stands where a folder is needed; choose another output path",
    errno.ENAMETOOLONG: "the name is too long; choose a shorter output path",
}


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


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def temp_sibling(path: Path, what: str = "tmp") -> Path:
    """A fresh temporary name beside ``path`` that :func:`clean_stale` can attribute."""
    tag = f"posgeom-{_host()}-{os.getpid()}-{secrets.token_hex(4)}"
    return path.with_name(f".{path.name}.{tag}.{what}")


def write_error(path: os.PathLike | str, exc: OSError) -> PosgeomError:
    """One-line error for a failed write of ``path``: the reason and what to do."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = _HINTS.get(exc.errno or -1, "check the output path")
    return PosgeomError(f"cannot write {path}: {reason}; {hint}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs under another user
        return True
    return True


def clean_stale(folder: os.PathLike | str) -> list[Path]:
    """Remove the temporaries that dead posgeom processes of this host left in ``folder``.

    A stale ``.old`` results folder whose target is missing (the process was killed between its
    two renames) is renamed back to its target instead. Returns the paths removed or restored.
    """
    folder = Path(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    done = []
    for name in names:
        m = _TEMP.match(name)
        if not m or m["host"] != _host() or int(m["pid"]) == os.getpid() or _alive(int(m["pid"])):
            continue
        entry, target = folder / name, folder / m["name"]
        if m["what"] == "old" and not target.exists():
            with contextlib.suppress(OSError):
                os.rename(entry, target)
                done.append(entry)
                continue
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        done.append(entry)
    return done


def make_folder(folder: Path) -> None:
    """``mkdir -p folder``, with a one-line error naming a file that stands in the way."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next(
            (p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), folder
        )
        raise PosgeomError(
            f"cannot create folder {folder}: {blocker} is a file, not a folder; choose another "
            "output path"
        ) from None
    except OSError as exc:
        raise write_error(folder, exc) from exc


def fsync_path(path: Path, *, directory: bool = False) -> None:
    """Flush ``path`` to disk (best effort for folders: some filesystems refuse)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        if not directory:
            raise


def default_mode(path: Path) -> None:
    """Give ``path`` the mode ``open`` creates files with (``0o666`` less the umask): libraries
    that write their file anew (safetensors: ``0o600``) do not decide an output's mode."""
    mask = os.umask(0o022)
    os.umask(mask)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666 & ~mask)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM during a few renames that must happen together (main thread only)."""
    mask = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - Windows
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_synced(path: Path, data: bytes) -> None:
    """``data`` in the new file ``path`` (mode ``0o666`` less the umask), flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _commit_checked(
    tmp: Path, path: Path, overwrite: bool, precommit: Callable[[Path], None] | None
) -> None:
    guarded = precommit is not None or claimed(path)
    with folder_lock(path.parent) if guarded else contextlib.nullcontext(), signals_deferred():
        reason = commit_refusal(path)
        if reason is not None:
            raise PosgeomError(reason)
        if precommit is not None:
            precommit(tmp)
        _commit_file(tmp, path, overwrite)
        fsync_path(path.parent, directory=True)


def _commit_file(tmp: Path, path: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, path)
        return
    try:  # create-if-absent, atomically: a concurrent writer cannot be silently replaced
        os.link(tmp, path)
    except FileExistsError:
        raise PosgeomError(
            f"{path} already exists (another process wrote it meanwhile?); pass --overwrite "
            "(overwrite=True) to replace it, or choose another output"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if path.exists():  # a filesystem without hard links: check, then replace
            raise PosgeomError(f"{path} already exists; pass --overwrite to replace it") from None
        os.replace(tmp, path)
        return
    tmp.unlink()


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike,
    *,
    overwrite: bool = True,
    precommit: Callable[[Path], None] | None = None,
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is fsynced and moved onto ``path``.

    When the ``with`` block ends without an exception the file written at the yielded path gets
    the mode ``0o666`` less the umask, is flushed and renamed onto ``path`` (atomic); on any
    exception (Ctrl-C and SIGTERM included) the temporary is removed and ``path`` keeps its old
    content. A failed write raises a one-line :class:`PosgeomError`. ``overwrite=False`` refuses
    an existing ``path``, atomically. The commit re-checks a claimed ``path``
    (:func:`posgeom.io._claims.commit_refusal`) and runs ``precommit(tmp)`` (a work folder's
    record), under an exclusive lock on the parent folder with SIGINT/SIGTERM held.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise PosgeomError(
            commit_refusal(path) or f"{path} already exists; pass --overwrite to replace it"
        )
    make_folder(path.parent)
    clean_stale(path.parent)
    tmp = temp_sibling(path)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:
        raise write_error(path, exc) from exc
    try:
        yield tmp
        default_mode(tmp)
        fsync_path(tmp)
        _commit_checked(tmp, path, overwrite, precommit)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise write_error(path, exc) from exc
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path, overwrite=overwrite) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return Path(path)


def atomic_write_text(
    path: str | os.PathLike, text: str, *, encoding: str = "utf-8", overwrite: bool = True
) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode(encoding), overwrite=overwrite)


def check_writable(
    path: str | os.PathLike, *, overwrite: bool = True, folder: bool = False
) -> Path:
    """Check, before any expensive work, that ``path`` can be written; return it as a ``Path``.

    Refused in one line: a file where a parent folder should be, an existing ``path`` of the
    wrong type or (``overwrite=False``) at all, a parent where a probe file cannot be created.
    Nothing is created or left behind.
    """
    path = Path(path)
    if path.exists():
        if folder and not path.is_dir():
            raise PosgeomError(f"{path} exists and is not a folder; choose another output folder")
        if not folder and path.is_dir():
            raise PosgeomError(f"{path} is a folder; pass a file name as the output")
        if not overwrite:
            raise PosgeomError(
                f"{path} already exists; pass --overwrite to replace it, or choose another output"
            )
    anchor = next(p for p in (path.parent, *path.parent.parents) if p.exists() or p == p.parent)
    if not anchor.is_dir():
        raise PosgeomError(
            f"cannot write {path}: {anchor} is a file, not a folder; choose another output path"
        )
    probe = temp_sibling(anchor / path.name)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        raise write_error(path, exc) from exc
    return path
