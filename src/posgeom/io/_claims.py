"""Which outputs are posgeom's, and whether one may still be replaced at its commit.

- **Stamps**: a text page posgeom writes (a report, ``REPRODUCTION.md``) ends with
  ``<!-- posgeom-output kind=KIND sha256=HEX -->`` (:func:`stamp`); :func:`stamped_kind` reads it
  back, and only while the page is unchanged.
- **Claims**: :func:`posgeom.io.outputs.check_output` claims a file output before the work;
  every atomic write asks :func:`commit_refusal` at its commit, which lets it replace only what
  stood there at the check (anything that appeared or changed meanwhile must pass the check
  again).

The bottom of ``io``: it imports nothing else of posgeom, so the atomic writers and the results
folders (below the output rule) can ask it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "claim",
    "claimed",
    "commit_refusal",
    "file_refusal",
    "forget_claims",
    "stamp",
    "stamped_kind",
]

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
        reason = file_refusal(Path(key), kinds, overwrite, identify)
        if reason is not None:
            return f"while posgeom worked, a file appeared or changed at the output: {reason}"
    del _CLAIMS[key]
    return None


def forget_claims() -> None:
    """Drop the claims of earlier commands of this process (the CLI calls it per command)."""
    _CLAIMS.clear()


def file_refusal(
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


def claim(
    out: Path, kinds: tuple[str, ...], overwrite: bool, identify: Callable[[Path], str | None]
) -> None:
    """Record what stands at the file output ``out`` now (checked, about to be worked for)."""
    _CLAIMS[os.path.abspath(out)] = (_identity(out), kinds, overwrite, identify)
