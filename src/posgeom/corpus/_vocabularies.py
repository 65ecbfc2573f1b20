"""The vocabularies of the word tokenizers fitted in this process, by vocabulary hash (the last
:data:`KEEP`): a word vocabulary is not stored with its counts, so the words of an estimate's
token classes are looked up here while the process that counted runs."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["KEEP", "recall", "remember"]

KEEP = 2
_FITTED: OrderedDict[str, dict[str, int]] = OrderedDict()


def remember(sha256: str, vocab: dict[str, int]) -> None:
    """Keep ``vocab`` (word -> id) under its hash ``sha256`` (the oldest beyond ``KEEP`` go)."""
    _FITTED[sha256] = vocab
    _FITTED.move_to_end(sha256)
    while len(_FITTED) > KEEP:
        _FITTED.popitem(last=False)


def recall(sha256: str | None) -> dict[str, int] | None:
    """The vocabulary fitted in this process with hash ``sha256``, or None."""
    return None if sha256 is None else _FITTED.get(sha256)
