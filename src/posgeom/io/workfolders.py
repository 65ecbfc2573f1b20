"""Work folders: the folders posgeom fills step by step and resumes (a counting job's
``--job-dir``, a training run, an experiment grid, ``extend``'s cache of measured windows).

They follow the output rule of results folders (:mod:`posgeom.io.outputs`):

- **never inside an input**, never holding one, names that fit;
- **posgeom's own, marked**: new, empty, or made by posgeom for the same kind of work; its
  ``posgeom-manifest.json`` (``content`` = the kind, e.g. ``"count-job"``) lists every file
  posgeom wrote with its size and SHA-256; an unlisted or changed file is refused in one line;
- **nothing cleared that posgeom did not write**: a restart deletes only the listed files;
- **recorded at the commit**: each file is recorded in the manifest under the folder's lock,
  with SIGINT/SIGTERM held, just before its rename (its previous record kept under ``"was"``);
- **the manifest is untrusted data**: every entry is checked (:mod:`posgeom.io._entries`)
  before anything is deleted or written; deleting follows no symbolic link;
- **one writer for the whole run**: :meth:`WorkFolder.open` takes the folder's lock without
  waiting until :meth:`WorkFolder.release`; a folder it made that stayed empty is removed then.

``self_checked`` work (a counting job verifies every file it reads back) leaves a changed file
to those checks on a resume. A work folder may list nested work folders (``{"folder": kind}``).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.io._atomic import (
    atomic_path,
    atomic_write_text,
    check_writable,
    clean_stale,
    make_folder,
)
from posgeom.io._entries import key_problem, place_problem, unlink_inside
from posgeom.io._locks import folder_lock, hold, release
from posgeom.io._results import (
    RESULTS_MANIFEST,
    _manifest,
    file_record,
    kind_refusal,
    listing,
    owned_refusal,
    write_listed,
)
from posgeom.io.jsonfiles import json_text

__all__ = ["WORK_KINDS", "WorkFolder"]

#: the kinds of work folder (their manifests' ``content``); no other output is written into one
WORK_KINDS = (
    "posgeom-count-job",
    "count-cache",
    "train-run",
    "experiment",
    "measure-cache",
    "pretrain-grid",
    "pretrain-run",
)


def _clean_stale_below(folder: Path) -> None:
    """:func:`~posgeom.io._atomic.clean_stale` in ``folder`` and its real sub-folders."""
    for root, dirs, _ in os.walk(folder, followlinks=False):
        clean_stale(root)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]


class WorkFolder:
    """A folder posgeom works in (module docstring); open it with :meth:`open`."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        #: whether :meth:`open` made the folder (None: not opened, e.g. a listed sub-folder)
        self.made: bool | None = None
        self._fresh = False  # whether the folder was absent or empty when opened
        self._held: Any = None  # the finalizer that gives the whole-run lock back

    def __enter__(self) -> WorkFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        *,
        kind: str,
        inputs: Iterable[str | os.PathLike] = (),
        restart: bool = False,
        option: str = "the folder",
        self_checked: bool = False,
        create: bool = True,
    ) -> WorkFolder:
        """Check ``path`` by the output rule and make it posgeom's work folder of ``kind``:
        created, marked or resumed; with ``restart`` its listed files are deleted first.
        ``option`` names the folder in messages (``"job folder"``); ``create=False`` only checks
        (nothing is made or marked). Refusals: one line."""
        from posgeom.io.outputs import input_refusal, name_refusal, resolve_output

        if kind not in WORK_KINDS:
            raise ValueError(f"{kind!r} is not one of the work folder kinds {WORK_KINDS}")
        out = resolve_output(path)
        reason = name_refusal(out) or input_refusal(out, tuple(inputs), folder=True)
        if reason is None and out.exists() and not out.is_dir():
            reason = f"{option} {out} exists and is not a folder; choose another folder"
        if reason is not None:
            raise PosgeomError(reason)
        folder = cls(out, kind)
        if not create:
            if out.is_dir():  # a writer at work there is refused now, not after the work
                folder._hold(option)
                folder.release()
            folder._refuse(option, restart, self_checked)
            check_writable(out, folder=True)
            return folder
        make_folder(out.parent)
        check_writable(out, folder=True)
        with folder_lock(out.parent):
            folder.made = not out.exists()
            folder._fresh = folder.made or not any(out.iterdir())
            make_folder(out)
            folder._hold(option)  # before the folder is read: another writer's files are not ours
            try:
                folder._refuse(option, restart, self_checked)
                if restart:
                    folder.clear()
                elif _manifest(out) is None:
                    write_listed(out, [], content=kind)
            except BaseException:
                folder.release()
                raise
        return folder

    # ------------------------------------------------------------------ one writer
    def _hold(self, option: str) -> None:
        if not hold(self.path):
            raise PosgeomError(
                f"another posgeom process is writing in the {option.removeprefix('the ')} "
                f"{self.path} (it holds the folder's lock); wait until it ends, or choose "
                "another folder"
            )
        self._held = weakref.finalize(self, release, os.path.realpath(self.path))

    def release(self) -> None:
        """Give back the folder's whole-run lock. A folder that was absent or empty when
        opened and that nothing was written to (its manifest lists nothing, it holds
        nothing else) is left as it was found: removed again, or empty."""
        if self._held is None or not self._held.alive:
            return
        if self._fresh and listing(self.path) <= {RESULTS_MANIFEST} and not self._files():
            self.discard()
        self._held()

    def _refuse(self, option: str, restart: bool, self_checked: bool) -> None:
        out = self.path
        if out.is_dir() and not out.is_symlink():
            _clean_stale_below(out)  # a killed run's temporaries are not a user's files
        if not out.is_dir() or not any(out.iterdir()):
            return
        manifest = _manifest(out)
        if manifest is None:
            raise PosgeomError(
                f"{option} {out} holds files posgeom did not write (no {RESULTS_MANIFEST}); "
                "posgeom works only in a new or empty folder or one it made: choose another folder"
            )
        what = "restarting" if restart else "resuming in it"
        reason = (
            kind_refusal(out, manifest, (self.kind,))
            or owned_refusal(out, manifest, what, restart or not self_checked)
            or (self._nested_refusal(manifest) if restart else None)
        )
        if reason is not None:
            raise PosgeomError(reason)

    def _nested_refusal(self, manifest: dict[str, Any]) -> str | None:
        """Why a sub-folder listed in ``manifest`` may not be cleared, or None."""
        for rel, info in manifest["files"].items():
            nested = WorkFolder(self.path / rel, str(info.get("folder")))
            sub = _manifest(nested.path) if "folder" in info and nested.path.is_dir() else None
            reason = None if sub is None else owned_refusal(nested.path, sub, "restarting")
            reason = reason or (None if sub is None else nested._nested_refusal(sub))
            if reason is not None:
                return reason
        return None

    # ------------------------------------------------------------------ the manifest
    def _files(self) -> dict[str, Any]:
        doc = _manifest(self.path)
        return {} if doc is None else dict(doc["files"])

    def _save(self, files: dict[str, Any]) -> None:
        doc = {**(_manifest(self.path) or {}), "files": files}
        doc.setdefault("kind", "posgeom-results")
        doc["content"] = self.kind
        text = json_text(doc, indent=1, sort_keys=True) + "\n"
        atomic_write_text(self.path / RESULTS_MANIFEST, text)

    def listed_files(self) -> list[str]:
        """The files posgeom wrote here (POSIX paths under the folder; nested folders not)."""
        return sorted(
            rel
            for rel, info in self._files().items()
            if not (isinstance(info, dict) and "folder" in info)
        )

    def listed(self, rel: str) -> bool:
        """Whether posgeom wrote ``rel`` (a POSIX path under the folder) and it exists."""
        self._check(rel)
        return rel in self._files() and (self.path / rel).exists()

    def _check(self, rel: str) -> None:
        """Refuse ``rel`` unless it is a path a manifest may list (:mod:`posgeom.io._entries`)."""
        problem = key_problem(rel) or place_problem(self.path, rel)
        if problem is not None:
            raise PosgeomError(
                f"{self.path}: the path {str(rel)[:80]!r} {problem}; posgeom writes only inside "
                "its work folder, below no symbolic link: pass a relative path such as 'a/b.json'"
            )

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def atomic(self, rel: str) -> Iterator[Path]:
        """Yield a temporary file; on success it is recorded and renamed onto ``rel``
        (:func:`posgeom.io._atomic.atomic_path`, with the record as its pre-commit step)."""
        self._check(rel)
        target = self.path / rel
        if (target.exists() or target.is_symlink()) and rel not in self._files():
            raise PosgeomError(
                f"{target} appeared in the work folder and was not written by posgeom; move it "
                "out and run again"
            )
        with atomic_path(target, precommit=lambda tmp: self._record(rel, tmp)) as tmp:
            yield tmp

    def _record(self, rel: str, tmp: Path) -> None:
        files = self._files()
        entry = file_record(tmp)
        old, target = files.get(rel), self.path / rel
        if isinstance(old, dict) and "size" in old and target.is_file():
            entry["was"] = {"size": old["size"], "sha256": old["sha256"]}
        elif rel in files and target.exists():
            raise PosgeomError(f"{target} changed while posgeom worked; move it out and run again")
        files[rel] = entry
        self._save(files)

    def write_text(self, rel: str, text: str) -> Path:
        """``text`` (UTF-8) as the file ``rel``, recorded."""
        with self.atomic(rel) as tmp:
            tmp.write_bytes(text.encode("utf-8"))
        return self.path / rel

    def write_json(self, rel: str, obj: Any, *, indent: int = 1) -> Path:
        """``obj`` as indented JSON and a final newline in the file ``rel``, recorded."""
        return self.write_text(rel, json_text(obj, indent=indent) + "\n")

    def sub(self, rel: str, kind: str) -> WorkFolder:
        """The nested work folder ``rel`` of ``kind``, listed here as a folder."""
        self._check(rel)
        files = self._files()
        target = self.path / rel
        if target.is_symlink():  # a sub-folder is a real folder: never followed out
            raise PosgeomError(
                f"{target} is a symbolic link, not a folder posgeom made; remove it and run again"
            )
        if rel not in files:
            if target.exists() and any(target.iterdir()):
                raise PosgeomError(
                    f"{target} appeared in the work folder and was not made by posgeom; move it "
                    "out and run again"
                )
            files[rel] = {"folder": kind}
            self._save(files)
        return WorkFolder.open(target, kind=kind)

    # ------------------------------------------------------------------ clearing
    def remove(self, rel: str) -> None:
        """Delete the listed file ``rel`` (and its record)."""
        self._check(rel)
        files = self._files()
        if rel in files:
            unlink_inside(self.path, rel)
            del files[rel]
            self._save(files)

    def clear(self) -> None:
        """Delete every file (and nested work folder) posgeom listed here; keep the folder. The
        manifest's entries (nested ones too) are checked before anything is deleted."""
        files = self._files()
        for rel, info in files.items():
            target = self.path / rel
            if "folder" in info:
                if target.is_dir() and not target.is_symlink():
                    WorkFolder(target, str(info["folder"])).discard()
                continue
            unlink_inside(self.path, rel)
        parents = {
            "/".join(rel.split("/")[:k]) for rel in files for k in range(1, rel.count("/") + 1)
        }
        for rel in sorted(parents, key=lambda p: -p.count("/")):
            unlink_inside(self.path, rel, directory=True)  # only when empty: posgeom made it
        self._save({})

    def discard(self) -> None:
        """Delete what posgeom listed here, the manifest, and the folder if nothing else is left
        and posgeom made it (files someone else put there stay; a folder of the user's that
        posgeom worked in, e.g. through a symbolic link, stays)."""
        if _manifest(self.path) is not None:
            self.clear()
            with contextlib.suppress(FileNotFoundError):
                (self.path / RESULTS_MANIFEST).unlink()
        if self.made is not False:
            with contextlib.suppress(OSError):
                self.path.rmdir()
