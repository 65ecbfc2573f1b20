"""Token id -> text of the tokenizer a counts file records (:func:`token_names`), the words an
estimate's classes are described with (:func:`posgeom.estimators.class_words.describe_classes`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["token_names"]


def token_names(identity: Mapping[str, Any] | None) -> Callable[[int], str | None] | None:
    """Token id -> text for the tokenizer ``identity`` (a counts file's ``tokenizer`` record:
    ``kind``, ``name``, ``vocab_sha256``) when it names a ``tokenizers`` JSON file or a saved
    word vocabulary found here with that vocabulary hash, or a word vocabulary fitted in this
    process (:mod:`posgeom.corpus._vocabularies`); else None (no hub access)."""
    if not identity or not isinstance(identity.get("name"), str):
        return None
    vocab = _vocabulary(str(identity["name"]), str(identity.get("kind")))
    if vocab is None and identity.get("kind") == "word":  # fitted on the corpus, this process
        from posgeom.corpus._vocabularies import recall

        vocab = recall(identity.get("vocab_sha256"))
    if vocab is None:
        return None
    from posgeom.corpus.word_tokenizer import vocab_sha256 as _vocab_sha256

    if _vocab_sha256(vocab) != identity.get("vocab_sha256"):
        return None
    text = {i: t for t, i in vocab.items()}
    return text.get


def _located(name: str) -> Path | None:
    """The file a recorded tokenizer name points to: the path itself, or a package-relative one
    (``pkg/tokenizer.json``, as :func:`posgeom._paths.portable_path` records it)."""
    path = Path(name)
    if path.is_file():
        return path
    if path.is_absolute() or not path.parts:
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(path.parts[0])
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        found = Path(root).parent / path
        if found.is_file():
            return found
    return None


@functools.lru_cache(maxsize=4)
def _vocabulary(name: str, kind: str) -> dict[str, int] | None:
    path = _located(name) if kind in ("tokenizers", "word") else None
    if path is None:
        return None
    try:
        if kind == "word":
            from posgeom.corpus.word_tokenizer import WordLevelTokenizer

            return dict(WordLevelTokenizer.load(path).vocab)
        import tokenizers

        return dict(tokenizers.Tokenizer.from_file(str(path)).get_vocab(with_added_tokens=True))
    except Exception:  # names are a courtesy: a file that will not load gives counted tokens
        return None
