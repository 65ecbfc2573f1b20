"""What reading a corpus may hold at once: the longest text line, and temporary copies.

:data:`MAX_LINE_BYTES` (16 MiB) bounds a line of a text file, a quoted CSV field and a Parquet
text alike; a longer one is refused, so memory stays bounded by it, not by the file.
:class:`Spooled` is a temporary file (a stream read once, a ``.parquet.gz`` inflated for random
access) removed with its last reference.
"""

from __future__ import annotations

import os
import shutil
import weakref
from pathlib import Path

__all__ = ["MAX_LINE_BYTES", "Spooled"]

MAX_LINE_BYTES = 16 << 20  # longer lines are refused: memory stays bounded


class Spooled(os.PathLike):
    """A temporary copy of a stream; its folder is removed when the object is collected."""

    def __init__(self, folder: str, name: str):
        self.path = Path(folder) / name
        weakref.finalize(self, shutil.rmtree, folder, True)

    def __fspath__(self) -> str:
        return str(self.path)
