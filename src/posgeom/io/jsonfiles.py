"""Reading JSON files that may be damaged or hostile: bounded, one read, one line on failure.

:func:`read_json` refuses, before reading, what is not a regular file (a FIFO, ``/dev/zero``, a
folder) or is larger than ``max_bytes``, then reads at most ``max_bytes + 1`` bytes once and
parses strict UTF-8 (a byte-order mark dropped); every failure is one
:class:`~posgeom._errors.ArtifactError`. :func:`json_text` is the one place posgeom turns a value
into JSON text: strict JSON, a non-finite float written as ``null`` ("not defined / not
measured").
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from posgeom._errors import ArtifactError

__all__ = [
    "MAX_JSON_BYTES",
    "checked_regular",
    "finite_json",
    "json_text",
    "read_json",
]

MAX_JSON_BYTES = 256 << 20


def checked_regular(path: str | os.PathLike, *, max_bytes: int = MAX_JSON_BYTES) -> None:
    """Refuse (one line) a ``path`` that is not a regular file or holds more than ``max_bytes``."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ArtifactError(f"cannot read {path} ({exc.strerror or exc}); check the path") from exc
    if not stat.S_ISREG(st.st_mode):
        raise ArtifactError(
            f"{path} is not a regular file (a folder, pipe or device); pass the file posgeom "
            "or the library wrote"
        )
    if st.st_size > max_bytes:
        raise ArtifactError(
            f"{path} holds {st.st_size} bytes, more than the {max_bytes} such a file can have; "
            "pass the right file"
        )


def read_json(path: str | os.PathLike, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The parsed JSON of ``path`` (module docstring for what is refused)."""
    path = Path(path)
    checked_regular(path, max_bytes=max_bytes)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ArtifactError(f"cannot read {path} ({exc.strerror or exc}); check the path") from exc
    if len(data) > max_bytes:
        raise ArtifactError(f"{path} grew beyond {max_bytes} bytes while read; pass a stable file")
    try:
        return json.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        raise ArtifactError(f"{path} is not valid JSON ({reason}); re-create it") from None


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite float (stress-1 of NoPE is undefined: inf) replaced by None,
    recursively, so that it is strict JSON and reads back as "n/a" everywhere."""
    if isinstance(obj, Mapping):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        if isinstance(obj, (set, frozenset)):
            obj = sorted(obj)
        return [finite_json(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return finite_json(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_text(
    obj: Any,
    *,
    indent: int | None = 1,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
) -> str:
    """``obj`` as strict JSON text (no trailing newline): non-finite floats become ``null``
    (:func:`finite_json`), numpy values, sets and paths their plain JSON forms; anything else that
    is not JSON is refused (``TypeError``). ``allow_nan=False`` holds, so no ``NaN`` escapes."""
    from posgeom.io._atomic import json_default

    return json.dumps(
        finite_json(obj),
        indent=indent,
        sort_keys=sort_keys,
        separators=separators,
        ensure_ascii=ensure_ascii,
        allow_nan=False,
        default=json_default,
    )
