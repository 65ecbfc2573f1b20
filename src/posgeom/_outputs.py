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
- **writable**: a probe file is created and removed in the nearest existing parent.

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


def _input_refusal(out: Path, inputs: Iterable[str | os.PathLike], folder: bool) -> str | None:
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


def _name_refusal(out: Path) -> str | None:
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
    ``"reproduction"``, ``"artifact:position_counts"``, ...; ignored for a folder, which must be a
    results folder posgeom wrote, unchanged). ``identify``: what posgeom output an existing file
    is, unchanged, or None (default: a stamped page; artifacts pass their own check, see
    :func:`posgeom.io.artifacts.check_output_file`). Nothing is created.
    """
    from posgeom.io._atomic import check_writable
    from posgeom.io._results import locked_refusal

    out = resolve_output(path)
    inputs = tuple(inputs)
    reason = _name_refusal(out) or _input_refusal(out, inputs, folder)
    if reason is None and folder:
        reason = locked_refusal(out, overwrite, ())
    elif reason is None and out.exists():
        reason = _file_refusal(out, tuple(kinds), overwrite, identify)
    if reason is not None:
        raise PosgeomError(reason)
    check_writable(out, folder=folder)
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
