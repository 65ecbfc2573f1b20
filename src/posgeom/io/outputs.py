"""The one output rule of posgeom: what may be written where, checked before any work.

Every file and folder posgeom writes goes through :func:`check_output` before the work starts
(work folders through :class:`posgeom.io.workfolders.WorkFolder`); each refusal is one
:class:`~posgeom._errors.PosgeomError` line naming the path and the fix:

- **symlinks are resolved first**: the output is the link's target (a dangling link is refused);
- **names fit**: a name longer than ``255 - TEMP_EXTRA`` (the hidden temporary's extra) is refused;
- **never inside an input**: the output may not be an input file, lie inside an input folder, or
  (a folder output) hold an input;
- **replace only posgeom's own, unchanged, of the same kind**, and only with ``overwrite``: an
  artifact whose checksums verify and whose kind the command writes; a stamped page
  (:func:`~._claims.stamp`) whose hash matches its content; a results folder whose
  ``posgeom-manifest.json`` (its entries checked as untrusted data, :mod:`posgeom.io._entries`)
  lists every file it holds, unchanged, and records the ``content`` the command writes;
- **writable**: a probe file is created and removed in the nearest existing parent;
- **re-checked at the commit**: a file output is renamed into place only if what stands there is
  what stood there at the check (:func:`~._claims.commit_refusal`), a results folder only if its
  checks still pass under the folder lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from posgeom._errors import PosgeomError
from posgeom.io._atomic import (
    check_writable,
    clean_stale,
    make_folder,
    temp_sibling,
    write_error,
    write_synced,
)
from posgeom.io._claims import claim, file_refusal, stamped_kind
from posgeom.io._results import (
    RESULTS_MANIFEST,
    changed_file,
    commit_folder,
    listing,
    locked_refusal,
    manifest_files,
    write_listed,
    write_manifest,
)

__all__ = [
    "TEMP_EXTRA",
    "check_file_set",
    "check_output",
    "record_file_set",
    "resolve_output",
    "results_directory",
]

TEMP_EXTRA = 40  # ".<name>.posgeom-<6 hex>-<pid>-<8 hex>.tmp" adds at most this much
_NAME_MAX = 255


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
        if (p.is_dir() or not p.exists()) and _inside(target, p):  # a job folder made later
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

    ``kinds``: what an existing file may be to be replaced (``"report"``,
    ``"artifact:position_counts"``, ...), or a folder's manifest ``content`` (empty: any).
    ``identify``: what posgeom output an existing file is, unchanged, or None. A file output is
    claimed, so that its commit re-checks it (:func:`~._claims.commit_refusal`).
    """
    out = resolve_output(path)
    reason = name_refusal(out) or input_refusal(out, inputs, folder)
    if reason is None and folder:
        reason = locked_refusal(out, overwrite, (), tuple(kinds))
    elif reason is None and (out.exists() or out.is_symlink()):
        reason = file_refusal(out, tuple(kinds), overwrite, identify)
    if reason is not None:
        raise PosgeomError(reason)
    check_writable(out, folder=folder)
    if not folder:
        claim(out, tuple(kinds), overwrite, identify)
    return out


def check_file_set(
    folder: str | os.PathLike, *, overwrite: bool, keep: Iterable[str | os.PathLike] = ()
) -> Path:
    """Check, before the work, a folder of files posgeom writes among others (``reproduce``'s
    ``reproduction/``): every file under it except those under ``keep`` (a cache) must be listed,
    unchanged, in its ``posgeom-manifest.json``, and any file there needs ``overwrite``."""
    out = resolve_output(folder)
    if not out.is_dir():
        return check_output(out, kinds=(), overwrite=overwrite, folder=True)
    kept = [Path(os.path.realpath(k)) for k in keep]
    present = [
        rel
        for rel in sorted(listing(out) - {RESULTS_MANIFEST})
        if not any(_inside(Path(os.path.realpath(out / rel)), k) for k in kept)
    ]
    record = manifest_files(out)
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
    write_listed(Path(folder), [Path(f) for f in files])


@contextlib.contextmanager
def results_directory(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    content: str = "results",
    companions: Mapping[str | os.PathLike, bytes] | None = None,
) -> Iterator[Path]:
    """Build a results folder in a temporary sibling and rename it into place: complete or absent.

    ::

        with results_directory(out, overwrite=args.overwrite, inputs=[counts_file]) as tmp:
            ...expensive work...                 # write every file under ``tmp``
        # here ``out`` holds exactly what was written under ``tmp``, plus posgeom-manifest.json

    The output rule (module docstring) is applied on entry. At the block's end the manifest
    (``{"kind": "posgeom-results", "content": content, "posgeom_version", "files": {relative
    path: {"size", "sha256"}}}``) is written and the folder committed under the parent folder's
    lock (:func:`posgeom.io._results.commit_folder`); on any exception the temporary is removed.
    ``content``: the kind of folder (``"run"``, ``"figures"``, ...). ``companions``: files beside
    ``path`` (path -> bytes, checked by the caller) committed with the folder, all or none.
    """
    path = check_output(path, kinds=(content,), overwrite=overwrite, inputs=inputs, folder=True)
    inputs = tuple(inputs)
    make_folder(path.parent)
    clean_stale(path.parent)
    tmp = temp_sibling(path)
    parts: list[tuple[Path, Path]] = []
    try:
        os.mkdir(tmp, 0o777)
    except OSError as exc:
        raise write_error(path, exc) from exc
    try:
        yield tmp
        write_manifest(tmp, content)
        for target, data in (companions or {}).items():
            parts.append((temp_sibling(Path(target)), Path(target)))
            write_synced(parts[-1][0], data)
        commit_folder(tmp, path, overwrite, inputs, (content,), tuple(parts))
    except BaseException as exc:
        for part, _ in parts:
            with contextlib.suppress(OSError):
                part.unlink()
        shutil.rmtree(tmp, ignore_errors=True)
        name = getattr(exc, "filename", None)  # an input's error is not a write error
        if isinstance(exc, OSError) and (name is None or str(tmp) in os.fsdecode(name)):
            raise write_error(path, exc) from exc
        raise
