"""The one output rule of posgeom: what may be written where, checked before any work.

Every file and folder posgeom writes (counts and other artifacts, results folders, reports and
their figures, reproduce's pages) goes through :func:`check_output` before the work starts:

- **symlinks are resolved first**: the output is the link's target (a dangling link is refused);
- **names fit**: the hidden temporary beside the output adds :data:`TEMP_EXTRA` characters to its
  name, so a name longer than ``255 - TEMP_EXTRA`` is refused with the limit;
- **never inside an input**: the output may not be an input file, lie inside an input folder, or
  (a folder output) hold an input;
- **replace only posgeom's own, unchanged, of the same kind**: an existing output is refused
  without ``overwrite``; with it, it is replaced only when posgeom wrote it *and it has not
  changed since*: an artifact whose metadata and array checksums verify and whose kind is one the
  command writes; a stamped text file (:func:`stamp`, a report or ``REPRODUCTION.md``) whose stamp
  hash matches its content; a results folder whose ``posgeom-manifest.json`` lists every file it
  holds with the size and SHA-256 it has now (:func:`posgeom.io._results.refusal`);
- **of the same kind**: a folder is replaced (or resumed) only by a command writing that kind
  of folder (its manifest's ``content``: ``run``, ``compare``, ``figures``, ``count-job``, ...);
- **writable**: a probe file is created and removed in the nearest existing parent;
- **re-checked at the commit**: a file output checked here is renamed into place only if what
  stands at its path then is what stood there at the check (:func:`commit_refusal`, called by
  every atomic write), a results folder only if its checks still pass under the folder lock.

Folders that posgeom fills step by step and resumes (job folders, training runs, caches) follow
the same rule through :class:`posgeom.io.workfolders.WorkFolder`.

Each refusal is one :class:`~posgeom._errors.PosgeomError` line naming the path and the fix.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError

__all__ = [
    "TEMP_EXTRA",
    "check_file_set",
    "check_output",
    "claimed",
    "commit_refusal",
    "forget_claims",
    "record_file_set",
    "resolve_output",
    "stamp",
    "stamped_kind",
]

TEMP_EXTRA = 40  # ".<name>.posgeom-<6 hex>-<pid>-<8 hex>.tmp" adds at most this much
_NAME_MAX = 255
_STAMP = re.compile(
    rb"\n<!-- posgeom-output kind=(?P<kind>[a-z-]+) sha256=(?P<hex>[0-9a-f]{64}) -->\n$"
)
_STAMP_MAX = 256 << 20  # a stamped page larger than this is not one posgeom wrote


def stamp(text: str, kind: str) -> str:
    """``text`` plus a last line ``<!-- posgeom-output kind=KIND sha256=HEX -->`` (an HTML and
    Markdown comment: invisible when rendered), HEX the SHA-256 of ``text``'s UTF-8 bytes."""
    body = text if text.endswith("\n") else text + "\n"
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f"{body}<!-- posgeom-output kind={kind} sha256={digest} -->\n"


def stamped_kind(path: str | os.PathLike) -> str | None:
    """The kind of a stamped file whose stamp matches its content, or None (not stamped, edited,
    not a regular file, or too large to be a posgeom page)."""
    path = Path(path)
    try:
        if not path.is_file() or path.stat().st_size > _STAMP_MAX:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    m = _STAMP.search(data[-200:])
    if m is None:
        return None
    body = data[: len(data) - len(m[0]) + 1]
    ok = hashlib.sha256(body).hexdigest() == m["hex"].decode()
    return m["kind"].decode() if ok else None


#: outputs checked before the work -> (what stood at them then: os.lstat identity, None for
#: nothing; and the check's kinds, overwrite and identify, to run it again on a change)
_CLAIMS: dict[str, tuple[Any, ...]] = {}


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1,)
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def claimed(path: str | os.PathLike) -> bool:
    """Whether ``path`` was checked as an output and not yet committed."""
    return os.path.abspath(path) in _CLAIMS


def commit_refusal(path: str | os.PathLike) -> str | None:
    """At the commit of a checked file output: why it may not be replaced now, or None (the
    claim is then used up). What stands there unchanged since the check passed it; anything
    else (a file that appeared, a replaced or edited one) must pass the check again."""
    key = os.path.abspath(path)
    if key not in _CLAIMS:
        return None
    then, kinds, overwrite, identify = _CLAIMS[key]
    now = _identity(Path(key))
    if now is not None and now != then:
        reason = _file_refusal(Path(key), kinds, overwrite, identify)
        if reason is not None:
            return f"while posgeom worked, a file appeared or changed at the output: {reason}"
    del _CLAIMS[key]
    return None


def forget_claims() -> None:
    """Drop the claims of earlier commands of this process (the CLI calls it per command)."""
    _CLAIMS.clear()


def resolve_output(path: str | os.PathLike) -> Path:
    """``path``, or the target of ``path`` when it is a symbolic link (the output is written
    there and the link keeps pointing at it); a dangling link is refused."""
    path = Path(path).expanduser()
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.exists():
            raise PosgeomError(
                f"{path} is a dangling symbolic link (to {os.readlink(path)}); remove it, or pass "
                "the path it should point to"
            )
        return target
    return path


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def input_refusal(out: Path, inputs: Iterable[str | os.PathLike], folder: bool) -> str | None:
    target = Path(os.path.realpath(out))
    for item in inputs:
        p = Path(os.path.realpath(Path(item).expanduser()))
        if target == p:
            return f"{out} is an input of this command; choose another output"
        if p.is_dir() and _inside(target, p):
            return f"{out} lies inside the input folder {item}; write the output elsewhere"
        if folder and _inside(p, target):
            return (
                f"the input {item} is inside the output folder {out}; choose an output folder "
                "that holds none of the inputs"
            )
    return None


def name_refusal(out: Path) -> str | None:
    limit = _NAME_MAX - TEMP_EXTRA
    if len(out.name.encode()) > limit:
        return (
            f"the output name {out.name[:40]}... is {len(out.name.encode())} bytes; posgeom "
            f"writes it through a hidden temporary with a longer name, so use at most {limit}"
        )
    return None


def check_output(
    path: str | os.PathLike,
    *,
    kinds: Iterable[str],
    overwrite: bool,
    inputs: Iterable[str | os.PathLike] = (),
    folder: bool = False,
    identify: Callable[[Path], str | None] = stamped_kind,
) -> Path:
    """Check an output before the work (module docstring); return it with symlinks resolved.

    ``kinds``: what an existing file may be to be replaced with ``overwrite`` (``"report"``,
    ``"reproduction"``, ``"artifact:position_counts"``, ...); for a folder, the ``content`` its
    manifest must record (``"run"``, ``"figures"``, ...; empty: any), besides being a results
    folder posgeom wrote, unchanged. ``identify``: what posgeom output an existing file
    is, unchanged, or None (default: a stamped page; artifacts pass their own check, see
    :func:`posgeom.io.artifacts.check_output_file`). Nothing is created; a file output is
    claimed, so that its commit re-checks it (:func:`commit_refusal`).
    """
    from posgeom.io._atomic import check_writable
    from posgeom.io._results import locked_refusal

    out = resolve_output(path)
    inputs = tuple(inputs)
    reason = name_refusal(out) or input_refusal(out, inputs, folder)
    if reason is None and folder:
        reason = locked_refusal(out, overwrite, (), tuple(kinds))
    elif reason is None and (out.exists() or out.is_symlink()):
        reason = _file_refusal(out, tuple(kinds), overwrite, identify)
    if reason is not None:
        raise PosgeomError(reason)
    check_writable(out, folder=folder)
    if not folder:
        _CLAIMS[os.path.abspath(out)] = (_identity(out), tuple(kinds), overwrite, identify)
    return out


def _file_refusal(
    out: Path, kinds: tuple[str, ...], overwrite: bool, identify: Callable[[Path], str | None]
) -> str | None:
    if out.is_dir():
        return f"{out} is a folder; pass a file name as the output"
    if not out.is_file():
        return f"{out} is not a regular file (a pipe or device?); pass a file name as the output"
    if not overwrite:
        return f"{out} already exists; pass --overwrite to replace it, or choose another output"
    found = identify(out)
    if found in kinds or ((found or "").startswith("artifact:") and "artifact:*" in kinds):
        return None
    if found is None:
        return (
            f"{out} exists and was not written by posgeom, or was changed since; --overwrite "
            "replaces only posgeom's own unchanged files: move it or choose another output"
        )
    what = found.removeprefix("artifact:")
    return (
        f"{out} is a posgeom {what} file, not an output of this command; --overwrite will not "
        "replace it: choose another output"
    )


def _recorded(folder: Path) -> dict[str, Any]:
    from posgeom.io._results import manifest_files

    return manifest_files(folder) or {}


def check_file_set(
    folder: str | os.PathLike, *, overwrite: bool, keep: Iterable[str | os.PathLike] = ()
) -> Path:
    """Check, before the work, a folder of files posgeom writes among others (``reproduce``'s
    ``reproduction/``): every file under it except those under ``keep`` (a cache) must be listed,
    unchanged, in its ``posgeom-manifest.json``, and any file there needs ``overwrite``."""
    from posgeom.io._results import RESULTS_MANIFEST, changed_file, listing

    out = resolve_output(folder)
    if not out.is_dir():
        return check_output(out, kinds=(), overwrite=overwrite, folder=True)
    kept = [Path(os.path.realpath(k)) for k in keep]
    present = [
        rel
        for rel in sorted(listing(out) - {RESULTS_MANIFEST})
        if not any(_inside(Path(os.path.realpath(out / rel)), k) for k in kept)
    ]
    record = _recorded(out)
    foreign = [rel for rel in present if rel not in record or changed_file(out / rel, record[rel])]
    if foreign:
        raise PosgeomError(
            f"{out} holds files posgeom did not write or that changed since "
            f"({', '.join(foreign[:3])}); move them out or choose another output folder"
        )
    if present and not overwrite:
        raise PosgeomError(
            f"{out} already holds posgeom's files ({', '.join(present[:3])}); pass --overwrite "
            "to replace them, or choose another output folder"
        )
    return out


def record_file_set(folder: str | os.PathLike, files: Iterable[str | os.PathLike]) -> None:
    """List ``files`` (under ``folder``) with their sizes and SHA-256 in the folder's manifest."""
    from posgeom.io._results import write_listed

    write_listed(Path(folder), [Path(f) for f in files])
