"""A corpus to token-id batches (:func:`corpus_batches`: token ids as read, texts tokenized).

Texts (:class:`TextBatches`): empty or whitespace-only texts are skipped (``n_empty``); texts with
NUL characters are reported by one warning. A text longer than ``cut_chars(n)`` characters is cut
before tokenization, at a whitespace, to the part that can reach the counted positions (its start
for ``align="start"``, its end for ``align="end"``); if the cut text gives fewer than ``n + 8``
tokens the cut is doubled and the text encoded again. The first ``n`` positions are those of the
whole text whenever the tokenizer splits at whitespace; length and fingerprint are the cut text's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.corpus._counter import flat_batches, flatten
from posgeom.corpus.options import CountOptions
from posgeom.corpus.readers import batches

__all__ = ["TextBatches", "corpus_batches", "cut_chars"]

log = logging.getLogger("posgeom.corpus.counting")
_MARGIN = 8  # tokens beyond n that a cut text must still give


def cut_chars(n: int) -> int:
    """Characters of a text kept before tokenization at first (doubled while too few tokens)."""
    return 32 * n + 1024


def _cut(text: str, limit: int, align: str) -> str:
    """At most ``limit`` characters of ``text`` from its start (or end), cut at a whitespace."""
    if len(text) <= limit:
        return text
    if align == "start":
        part = text[:limit]
        at = max(part.rfind(" "), part.rfind("\n"), part.rfind("\t"))
        return part[:at] if at > 0 else part
    part = text[-limit:]
    at = min((i for i in (part.find(" "), part.find("\n"), part.find("\t")) if i >= 0), default=-1)
    return part[at + 1 :] if 0 <= at < len(part) - 1 else part


class TextBatches:
    """Tokenized batches ``(flat int64 ids, int64 lengths)`` of texts, in input order (module
    docstring). ``keep``: an object held while the batches are read (a spooled stream's copy)."""

    def __init__(
        self, tok: Any, texts: Iterable[str], size: int, n: int, align: str, keep: Any = None
    ):
        self.tok, self.texts, self.size, self.n, self.align = tok, texts, size, n, align
        self.keep = keep
        self.n_empty = self.n_nul = self.n_cut = 0
        self._arrays = getattr(tok, "encode_batch_arrays", None)  # HFTokenizer

    def _encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is not None:
            return self._arrays(texts)
        return flatten(self.tok.encode_batch(texts))

    def _encode_long(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Encode a batch with long texts cut; re-encode, with doubled cuts, those too short."""
        limit = cut_chars(self.n)
        cut = [_cut(t, limit, self.align) for t in texts]
        flat, lengths = self._encode(cut)
        seqs = np.split(flat, np.cumsum(lengths)[:-1])
        for i, text in enumerate(texts):
            size = limit
            while len(cut[i]) < len(text) and len(seqs[i]) < self.n + _MARGIN:
                size *= 2
                cut[i] = _cut(text, size, self.align)
                seqs[i] = self._encode([cut[i]])[0]
            self.n_cut += len(cut[i]) < len(text)
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        return np.concatenate(seqs) if seqs else flat, lens

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        limit = cut_chars(self.n)
        for batch in batches(self.texts, self.size):
            kept = [t for t in batch if t and not t.isspace()]
            self.n_empty += len(batch) - len(kept)
            self.n_nul += sum("\x00" in t for t in kept)
            if not kept:
                continue
            if max(map(len, kept)) > limit:
                yield self._encode_long(kept)
            else:
                yield self._encode(kept)

    def report(self) -> None:
        """Log what was skipped, flagged or cut (one line each)."""
        if self.n_empty:
            log.info("skipped %d empty texts", self.n_empty)
        if self.n_nul:
            log.warning("%d texts contain NUL characters (counted as they are)", self.n_nul)
        if self.n_cut:
            log.info("%d long texts were cut before tokenization", self.n_cut)


def corpus_batches(
    source: Any, tokenizer: Any, options: CountOptions
) -> tuple[Any, Iterable[tuple[np.ndarray, np.ndarray]]]:
    """The loaded tokenizer (or None) and the ``(flat int64 ids, int64 lengths)`` batches of a
    corpus for :func:`~posgeom.corpus.counting.count_corpus`: token ids as read; texts through
    :class:`TextBatches`, after fitting an unfitted ``"word"`` tokenizer on them (a one-shot
    iterator kept in a list, a pipe spooled to a temporary file)."""
    from posgeom.corpus.readers import TOKEN_FORMATS, detect_format, is_stream, read_texts, spool
    from posgeom.corpus.token_ids import read_token_ids
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    o, is_path = options, isinstance(source, (str, os.PathLike))
    fmt = (o.format or detect_format(source)) if is_path and o.format != "hf-hub" else o.format
    tok = load_tokenizer(tokenizer) if tokenizer is not None else None
    if isinstance(source, np.ndarray) or fmt in TOKEN_FORMATS:
        ids = read_token_ids(
            source,
            format=fmt,
            pad_id=o.pad_id,
            separator_id=o.separator_id,
            dtype=o.token_dtype,
            limit=o.limit,
        )
        return tok, flat_batches(ids, o.batch_size)
    if tok is None:
        raise PosgeomError(
            "a text corpus needs a tokenizer: pass tokenizer= a tokenizer.json, "
            "a folder, 'word', or a transformers model name"
        )

    def texts() -> Iterable[str]:
        if is_path:
            how = {"format": fmt, "text_column": o.text_column, "split": o.split}
            return read_texts(source, limit=o.limit, **how, **o.decoding())
        return islice(source, o.limit)

    if isinstance(tok, WordLevelTokenizer) and not tok.fitted:
        if not is_path and iter(source) is source:  # one-shot iterator: keep it for 2 passes
            source = list(source)
        if is_path and is_stream(source):  # a pipe is read once: into a file, then twice
            source = spool(source)  # removed with its last reference
        tok.fit(texts())
    return tok, TextBatches(tok, texts(), o.batch_size, o.max_positions, o.align, keep=source)
