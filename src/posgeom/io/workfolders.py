"""Work folders: the folders posgeom fills step by step and resumes (a counting job's
``--job-dir``, a training run, an experiment grid, ``extend``'s cache of measured windows).

They follow the output rule of results folders (:mod:`posgeom.io.outputs`):

- **never inside an input**, never holding one, names that fit;
- **posgeom's own, marked**: the folder must be new, empty, or one posgeom made for the same
  kind of work. Its ``posgeom-manifest.json`` (the layout of a results folder's, ``content`` =
  the kind, e.g. ``"count-job"``) lists every file posgeom wrote there with its size and
  SHA-256; a folder holding a file it does not list, or a listed file that changed since, is
  refused with one line (resumed or restarted, it could lose that file);
- **nothing cleared that posgeom did not write**: a restart deletes only the listed files;
- **recorded at the commit**: each file is written to a temporary sibling and, under the
  folder's lock with SIGINT/SIGTERM held, recorded in the manifest just before it is renamed
  into place; the record keeps the file's previous size and SHA-256 under ``"was"`` so that a
  process killed between the two still leaves a folder whose every file is posgeom's.

Work that verifies every file it reads back (a counting job: artifact checksums, the plan's
checksum, each shard's provenance) opens its folder with ``self_checked``: on a resume a listed
file that changed is left to those checks (they name what is wrong with it); a restart, which
would delete it, still refuses.

A work folder may hold work folders of its own (an experiment's training runs): the parent lists
them as ``{"folder": kind}`` and leaves their files to their own manifests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.io._atomic import (
    atomic_path,
    atomic_write_text,
    check_writable,
    folder_lock,
    make_folder,
)
from posgeom.io._results import (
    RESULTS_MANIFEST,
    _manifest,
    _sha256,
    kind_refusal,
    owned_refusal,
    write_listed,
)
from posgeom.io.jsonfiles import json_text

__all__ = ["WorkFolder"]


class WorkFolder:
    """A folder posgeom works in (module docstring); open it with :meth:`open`."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind

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
        created when missing, marked when empty, resumed when posgeom made it for ``kind``
        (every file listed, unchanged); with ``restart`` its listed files are deleted first.
        ``option`` names the folder in messages (``"job folder"``); ``self_checked``: see the
        module docstring; ``create=False`` only checks (nothing is made or marked: a check
        before the work of a folder made when its first file is written). Refusals: one line."""
        from posgeom.io.outputs import input_refusal, name_refusal, resolve_output

        out = resolve_output(path)
        reason = name_refusal(out) or input_refusal(out, tuple(inputs), folder=True)
        if reason is None and out.exists() and not out.is_dir():
            reason = f"{option} {out} exists and is not a folder; choose another folder"
        if reason is not None:
            raise PosgeomError(reason)
        folder = cls(out, kind)
        if not create:
            reason = folder._refusal(option, restart, self_checked)
            if reason is not None:
                raise PosgeomError(reason)
            check_writable(out, folder=True)
            return folder
        make_folder(out.parent)
        check_writable(out, folder=True)
        with folder_lock(out.parent):
            reason = folder._refusal(option, restart, self_checked)
            if reason is not None:
                raise PosgeomError(reason)
            make_folder(out)
            if restart:
                folder.clear()
            elif _manifest(out) is None:
                write_listed(out, [], content=kind)
        return folder

    def _refusal(self, option: str, restart: bool, self_checked: bool) -> str | None:
        out = self.path
        if not out.is_dir() or not any(out.iterdir()):
            return None
        manifest = _manifest(out)
        if manifest is None:
            return (
                f"{option} {out} holds files posgeom did not write (no {RESULTS_MANIFEST}); "
                "posgeom works only in a new or empty folder or one it made: choose another folder"
            )
        what = "restarting" if restart else "resuming in it"
        changed = restart or not self_checked
        return kind_refusal(out, manifest, (self.kind,)) or owned_refusal(
            out, manifest, what, changed
        )

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
        return rel in self._files() and (self.path / rel).exists()

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def atomic(self, rel: str) -> Iterator[Path]:
        """Yield a temporary file; on success it is recorded and renamed onto ``rel``
        (:func:`posgeom.io._atomic.atomic_path`, with the record as its pre-commit step)."""
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
        entry: dict[str, Any] = {"size": tmp.stat().st_size, "sha256": _sha256(tmp)}
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
        files = self._files()
        target = self.path / rel
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
        files = self._files()
        if rel in files:
            with contextlib.suppress(FileNotFoundError):
                (self.path / rel).unlink()
            del files[rel]
            self._save(files)

    def clear(self) -> None:
        """Delete every file (and nested work folder) posgeom listed here; keep the folder."""
        files = self._files()
        for rel, info in files.items():
            target = self.path / rel
            if isinstance(info, dict) and "folder" in info:
                if target.is_dir() and not target.is_symlink():
                    WorkFolder(target, str(info["folder"])).discard()
                continue
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                target.unlink()
        parents = {p for rel in files for p in (self.path / rel).parents if self.path in p.parents}
        for folder in sorted(parents, key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: what posgeom made for its files
        self._save({})

    def discard(self) -> None:
        """Delete what posgeom listed here, the manifest, and the folder if nothing else is left
        (files someone else put there stay)."""
        self.clear()
        with contextlib.suppress(FileNotFoundError):
            (self.path / RESULTS_MANIFEST).unlink()
        with contextlib.suppress(OSError):
            self.path.rmdir()
