"""posgeom's own word-level tokenizer (``-t word``): whitespace split (``str.split``), optional
lowercasing, vocabulary built from the corpus with ids ordered by descending frequency then
lexicographically, after the unknown token ``[UNK]`` (id 0). Saved and loaded as JSON (its
``kind``: ``posgeom-word-level``). It follows :class:`posgeom.corpus.tokenize.Tokenizer`'s protocol.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._paths import portable_path
from posgeom._validation import Items, check_param
from posgeom.corpus._tokenizer_files import WORD_KIND, check_tokenizer_file
from posgeom.corpus._vocabularies import remember
from posgeom.io.artifacts import canonical_sha256
from posgeom.io.jsonfiles import json_text

__all__ = ["WordLevelTokenizer", "vocab_sha256"]


def vocab_sha256(vocab: dict[str, int]) -> str:
    """The SHA-256 of the canonical JSON of a ``token -> id`` mapping: the ``vocab_sha256`` of
    every posgeom tokenizer's identity."""
    return canonical_sha256(vocab)


class WordLevelTokenizer:
    """Whitespace word tokenizer with a vocabulary built from the corpus.

    Ids: ``unk_token`` is 0, then words by descending count, ties broken lexicographically
    (Python string order), so the vocabulary is a deterministic function of the corpus. Words not
    in the vocabulary map to the unknown id. ``special_ids == {unk_id}``.
    """

    def __init__(
        self,
        vocab: Sequence[str] | None = None,
        *,
        lowercase: bool = False,
        unk_token: str = "[UNK]",
        name: str = "word",
    ):
        self.lowercase = bool(lowercase)
        self.unk_token = unk_token
        self.name = name
        self._vocab: dict[str, int] | None = None
        if vocab is not None:
            self._set_vocab(list(check_param("vocab", vocab, [Items("words")], where="words")))

    def _set_vocab(self, tokens: list[str]) -> None:
        if not tokens or tokens[0] != self.unk_token or len(set(tokens)) != len(tokens):
            raise PosgeomError(
                f"a word vocabulary must start with {self.unk_token!r} and have no duplicates"
            )
        self._vocab = {t: i for i, t in enumerate(tokens)}

    def _split(self, text: str) -> list[str]:
        if not isinstance(text, str):  # one line, not AttributeError (and no check_param cost)
            raise PosgeomError(f"the word tokenizer reads texts (str), not {type(text).__name__}")
        return (text.lower() if self.lowercase else text).split()

    def fit(
        self, texts: Iterable[str], *, min_count: int = 1, max_size: int | None = None
    ) -> WordLevelTokenizer:
        """Build the vocabulary from ``texts`` (words seen at least ``min_count`` times)."""
        counter: Counter[str] = Counter()
        for text in check_param("texts", texts, [Items("texts")], where="fit"):
            counter.update(self._split(text))
        counter.pop(self.unk_token, None)
        words = sorted(
            (w for w, c in counter.items() if c >= min_count), key=lambda w: (-counter[w], w)
        )
        if max_size is not None:
            words = words[: max(0, max_size - 1)]
        self._set_vocab([self.unk_token, *words])
        remember(vocab_sha256(self.vocab), self.vocab)  # the words of an estimate's classes
        return self

    @property
    def fitted(self) -> bool:
        return self._vocab is not None

    @property
    def vocab(self) -> dict[str, int]:
        if self._vocab is None:
            raise PosgeomError("the word tokenizer has no vocabulary yet; call .fit(texts) first")
        return self._vocab

    unk_id = 0  # the unknown token's id

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    pad_id = None  # a word tokenizer never pads

    @property
    def special_ids(self) -> set[int]:
        return {self.unk_id}

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "kind": "word",
            "name": self.name,
            "vocab_size": self.vocab_size,
            "vocab_sha256": vocab_sha256(self.vocab),
            "lowercase": self.lowercase,
        }

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        get, unk = self.vocab.get, self.unk_id
        check_param("texts", texts, [Items("texts")], where="encode_batch")
        return [[get(w, unk) for w in self._split(t)] for t in texts]

    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary (tokens in id order) and options as JSON, atomically."""
        from posgeom.io._atomic import atomic_write_text

        tokens = sorted(self.vocab, key=self.vocab.__getitem__)
        doc = {
            "kind": WORD_KIND,
            "format_version": 1,
            "lowercase": self.lowercase,
            "unk_token": self.unk_token,
            "vocab": tokens,
        }
        return atomic_write_text(path, json_text(doc, ensure_ascii=False, indent=0) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> WordLevelTokenizer:
        from posgeom.io.jsonfiles import checked_regular, read_json

        try:
            checked_regular(path)
            check_tokenizer_file(path)
            doc = read_json(path)
        except PosgeomError as exc:
            raise PosgeomError(f"cannot read word tokenizer: {exc}") from None
        if not isinstance(doc, dict) or doc.get("kind") != WORD_KIND:
            raise PosgeomError(f"{path} is not a posgeom word tokenizer file")
        vocab, unk = doc.get("vocab"), doc.get("unk_token", "[UNK]")
        if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
            raise PosgeomError(f"{path}: 'vocab' must be a list of strings; re-create the file")
        if not isinstance(unk, str):
            raise PosgeomError(f"{path}: 'unk_token' must be a string; re-create the file")
        return cls(
            vocab, lowercase=bool(doc.get("lowercase")), unk_token=unk, name=portable_path(path)
        )
