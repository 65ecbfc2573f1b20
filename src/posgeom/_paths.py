"""How a path is recorded in posgeom's outputs (bottom layer): never a machine's absolute path.

Summaries, counts metadata and reports name the corpus, tokenizer and model they came from. A
name recorded as ``/home/alice/venv/lib/python3.11/site-packages/pkg/tokenizer.json`` leaks the
machine's layout into files that are shared and committed, and means nothing on another machine.
:func:`portable_path` records instead:

- a relative path or a bare name (a hub model name, ``word``) as given;
- an absolute path inside an installed package (below ``site-packages`` or ``dist-packages``)
  from the package on: ``pkg/tokenizer.json``;
- any other absolute path relative to the working directory when it lies below the working
  directory's parent: ``../shared/data/sst2/train.tsv.gz``; else (``/tmp/models/mpnet/tok.json``
  seen from ``/work/repo``, another Windows drive) its last two components: ``mpnet/tok.json``.
"""

from __future__ import annotations

import os
from pathlib import PurePath

__all__ = ["portable_path"]

_PACKAGE_ROOTS = ("site-packages", "dist-packages")


def portable_path(path: str | os.PathLike[str]) -> str:
    """The name under which ``path`` is recorded in an output (module docstring)."""
    text = os.fspath(path)
    if not os.path.isabs(os.path.expanduser(text)):
        return text
    parts = PurePath(os.path.expanduser(text)).parts
    for root in _PACKAGE_ROOTS:
        if root in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index(root)
            return PurePath(*parts[at + 1 :]).as_posix()
    try:
        relative = PurePath(os.path.relpath(os.path.expanduser(text)))
    except ValueError:  # no relative path (another drive)
        relative = None
    if relative is None or relative.parts[:2] == ("..", ".."):
        return PurePath(*parts[-2:]).as_posix()
    return relative.as_posix()
