"""The study's three corpora, as :class:`posgeom.training.pretrain.CorpusSpec` (the package
takes paths; the study supplies them).

- ``prose``: the three novels of ``$POSGEOM_DATA/long`` (Moby-Dick, War and Peace, Pride and
  Prejudice; ``PROVENANCE.md`` there), cut at line ends into documents of about 64 KiB;
- ``latex``: the two Stacks project chapters there (``algebra.tex``, ``morphisms.tex``), cut the
  same way;
- ``code``: the top-level modules (``*.py``) of this Python's standard library
  (``sysconfig.get_paths()["stdlib"]``), one document per file; the Python version and the file
  list are recorded in the results folder's ``grid.json`` and ``corpora/code.json``.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from posgeom.training.pretrain import CorpusSpec
from studies._common import DATA

BLOCK = 65536
NOVELS = ("moby_dick.txt.gz", "war_and_peace.txt.gz", "pride_and_prejudice.txt.gz")
STACKS = ("stacks_algebra.tex.gz", "stacks_morphisms.tex.gz")


def stdlib_files() -> tuple[str, ...]:
    """The top-level ``*.py`` modules of the running Python's standard library, sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return tuple(str(p) for p in sorted(root.glob("*.py")) if p.is_file())


def corpora() -> list[CorpusSpec]:
    long = DATA / "long"
    return [
        CorpusSpec("prose", tuple(str(long / f) for f in NOVELS), BLOCK),
        CorpusSpec("latex", tuple(str(long / f) for f in STACKS), BLOCK),
        CorpusSpec("code", stdlib_files()),
    ]
