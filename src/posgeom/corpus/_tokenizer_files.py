"""Tokenizer files, bounded before they are parsed.

A ``tokenizer.json`` under the JSON file cap (256 MiB) can hold 10 M words, about 500 bytes each
to load. Before a tokenizer file is parsed, posgeom counts (1 MiB at a time) its entries, its
``:`` and ``[`` bytes (at least one per vocabulary entry or merge), and its strings, half its
``"`` bytes (both upper bounds), and refuses a file with more than
:data:`MAX_TOKENIZER_ENTRIES` entries or :data:`MAX_TOKENIZER_STRINGS` strings (published
vocabularies hold at most a few hundred thousand tokens; the load stays under about 800 MiB).
"""

from __future__ import annotations

import os
from pathlib import Path

from posgeom._errors import PosgeomError

__all__ = [
    "MAX_TOKENIZER_ENTRIES",
    "MAX_TOKENIZER_STRINGS",
    "WORD_KIND",
    "check_tokenizer_file",
    "is_word_json",
]

MAX_TOKENIZER_ENTRIES = 1_500_000
MAX_TOKENIZER_STRINGS = 3_000_000
WORD_KIND = "posgeom-word-level"  # the "kind" of a posgeom word tokenizer file
_PIECE = 1 << 20


def check_tokenizer_file(path: str | os.PathLike) -> None:
    """Refuse a tokenizer file of too many entries or strings (module docstring); ``path``: a
    regular file of bounded size."""
    entries = quotes = 0
    with open(path, "rb") as fh:
        while piece := fh.read(_PIECE):
            entries += piece.count(b":") + piece.count(b"[")
            quotes += piece.count(b'"')
            if entries > MAX_TOKENIZER_ENTRIES or quotes > 2 * MAX_TOKENIZER_STRINGS:
                raise PosgeomError(
                    f"{path} holds more than {MAX_TOKENIZER_ENTRIES} vocabulary entries and "
                    f"merges (or {MAX_TOKENIZER_STRINGS} strings), more than a tokenizer may "
                    "hold (each takes about 500 bytes to load); pass the model's own tokenizer "
                    "or a smaller vocabulary"
                )


def is_word_json(path: Path) -> bool:
    """Whether ``path`` is a posgeom word tokenizer file (its kind in the first 4 KiB)."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return WORD_KIND.encode() in head
