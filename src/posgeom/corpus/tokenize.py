"""Tokenizers behind one small protocol.

Every tokenizer here has::

    encode_batch(texts: list[str]) -> list[list[int]]   # no padding, no truncation
    vocab_size: int                                      # ids are in [0, vocab_size)
    special_ids: set[int]                                # [CLS], [SEP], [PAD], [UNK], BOS/EOS, ...
    unk_id: int | None                                   # the unknown token (a word, not special)
    pad_id: int | None                                   # the padding token, if it has one
    identity: dict   # {"kind", "name", "vocab_size", "vocab_sha256", ...} recorded with counts

Three kinds (``vocab_sha256``: the SHA-256 of the canonical JSON of the ``token -> id`` mapping):
:class:`HFTokenizer` (a ``tokenizers.Tokenizer``: a ``tokenizer.json`` file or the fast backend of
a ``transformers`` tokenizer; padding and truncation off, ``add_special_tokens`` keeps its
template), :class:`TransformersTokenizer` (a slow ``transformers`` tokenizer; local files only
unless ``allow_download=True``, never remote code) and
:class:`~posgeom.corpus.word_tokenizer.WordLevelTokenizer` (whitespace split).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from posgeom._errors import PosgeomError, require
from posgeom._hub import one_line, pretrained_tokenizer
from posgeom._library_output import held_stderr
from posgeom._paths import portable_path
from posgeom._validation import check_path
from posgeom.corpus._tokenizer_files import check_tokenizer_file, is_word_json
from posgeom.corpus.word_tokenizer import WordLevelTokenizer, vocab_sha256

__all__ = [
    "HFTokenizer",
    "Tokenizer",
    "TransformersTokenizer",
    "from_transformers",
    "load_tokenizer",
]

_PAD_NAMES = ("[PAD]", "<pad>", "<|pad|>", "<PAD>", "[pad]")


@runtime_checkable
class Tokenizer(Protocol):
    """The protocol every posgeom tokenizer follows (see the module docstring)."""

    vocab_size: int
    special_ids: set[int]
    unk_id: int | None
    pad_id: int | None
    identity: dict[str, Any]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...


def _identity(kind: str, name: str, vocab: dict[str, int], size: int, special: bool) -> dict:
    """A library tokenizer's identity; ``vocab_size``: the larger of ``size`` and the largest id
    of ``vocab`` plus one; ``special``: ``add_special_tokens``."""
    return {
        "kind": kind,
        "name": name,
        "vocab_size": max(size, max(vocab.values(), default=-1) + 1),
        "vocab_sha256": vocab_sha256(vocab),
        "add_special_tokens": special,
    }


class HFTokenizer:
    """A ``tokenizers.Tokenizer`` with padding and truncation off, batched through Rust."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        name: str,
        kind: str = "tokenizers",
        add_special_tokens: bool = True,
        special_ids: Iterable[int] | None = None,
        unk_id: int | None = None,
        pad_id: int | None = None,
    ):
        padding = tokenizer.padding
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tok = tokenizer
        added = tokenizer.get_added_tokens_decoder()
        if unk_id is None:
            unk_name = getattr(tokenizer.model, "unk_token", None)
            unk_id = tokenizer.token_to_id(unk_name) if unk_name else None
        if pad_id is None and padding:
            pad_id = padding.get("pad_id")
        if pad_id is None:
            pad_id = next((i for i, t in added.items() if t.content in _PAD_NAMES), None)
        self.unk_id = None if unk_id is None else int(unk_id)
        self.pad_id = None if pad_id is None else int(pad_id)
        self.add_special_tokens = bool(add_special_tokens)
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        self.identity = _identity(kind, name, vocab, size, self.add_special_tokens)
        self.vocab_size = self.identity["vocab_size"]
        if self.vocab_size < 1:
            raise PosgeomError(f"tokenizer {name} has an empty vocabulary; pass a trained one")
        if special_ids is None:
            special_ids = [i for i, t in added.items() if t.special]
        self.special_ids = {int(i) for i in special_ids}

    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs: Any) -> HFTokenizer:
        tokenizers = require("tokenizers", "hf")
        from posgeom.io.jsonfiles import checked_regular

        try:  # read here: a byte-order mark is dropped, a read error names the file
            checked_regular(path)  # not a pipe or a device, not larger than a tokenizer can be
            check_tokenizer_file(path)  # nor holding more strings
            text = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
            tok = tokenizers.Tokenizer.from_str(text)
        except OSError as exc:
            raise PosgeomError(f"cannot read tokenizer {path} ({exc.strerror or exc})") from exc
        except PosgeomError:
            raise
        except Exception as exc:
            raise PosgeomError(
                f"{path} is not a valid tokenizers JSON file ({one_line(exc, 200) or exc!r}); "
                "pass a tokenizer.json saved by the tokenizers library"
            ) from None
        return cls(tok, name=portable_path(path), **kwargs)

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        try:  # a Rust panic's message goes to descriptor 2: dropped, the error line says it
            with held_stderr():
                return encode(list(texts), add_special_tokens=self.add_special_tokens)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a Rust panic (pyo3 PanicException) is a BaseException
            raise PosgeomError(
                f"tokenizer {self.identity['name']} failed on a text of this batch "
                f"({one_line(exc, 160) or type(exc).__name__}); "
                "its normalizer or pre-tokenizer cannot handle this input: use another tokenizer"
            ) from None

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._encode(texts)]

    def encode_batch_arrays(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_batch` as ``(ids, lengths)``: the sequences' ids concatenated in order
        (int64, ``(lengths.sum(),)``) and each sequence's length (int64, ``(len(texts),)``)."""
        encodings = self._encode(texts)
        lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))
        ids = np.fromiter(
            chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=int(lengths.sum())
        )
        return ids, lengths


class TransformersTokenizer:
    """A ``transformers`` slow tokenizer (fast ones are wrapped as :class:`HFTokenizer`)."""

    def __init__(self, tokenizer: Any, *, name: str, add_special_tokens: bool = True):
        self._tok = tokenizer
        self.add_special_tokens = bool(add_special_tokens)
        vocab = tokenizer.get_vocab()
        self.identity = _identity(
            "transformers", name, vocab, len(tokenizer), self.add_special_tokens
        )
        self.vocab_size = self.identity["vocab_size"]
        self.special_ids = {int(i) for i in tokenizer.all_special_ids}
        unk, pad = tokenizer.unk_token_id, tokenizer.pad_token_id
        self.unk_id = None if unk is None else int(unk)
        self.pad_id = None if pad is None else int(pad)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        out = self._tok(
            list(texts),
            add_special_tokens=self.add_special_tokens,
            padding=False,
            truncation=False,
            verbose=False,
        )
        return [list(ids) for ids in out["input_ids"]]


def _looks_like_path(spec: str) -> bool:
    """A string that can only be a path (hub names are ``name`` or ``org/name``)."""
    return (
        spec.startswith((".", "/", "~"))
        or "\\" in spec
        or spec.endswith(".json")
        or spec.count("/") > 1
    )


def load_tokenizer(
    spec: Any,
    *,
    lowercase: bool = False,
    add_special_tokens: bool = True,
    allow_download: bool = False,
) -> Any:
    """A tokenizer from ``spec``: an object with ``encode_batch`` (returned as is); ``"word"`` /
    ``"whitespace"`` (an unfitted :class:`WordLevelTokenizer`); a ``.json`` file (posgeom words
    or ``tokenizers``); a ``.gguf`` checkpoint; a folder (its ``tokenizer.json``, else
    ``transformers.AutoTokenizer``); otherwise a ``transformers`` model name (local cache unless
    ``allow_download``)."""
    if hasattr(spec, "encode_batch") and not isinstance(spec, (str, os.PathLike)):
        return spec
    text = os.fspath(check_path(spec, "tokenizer (a path, a name, 'word' or a tokenizer object)"))
    if text in ("word", "whitespace"):
        return WordLevelTokenizer(lowercase=lowercase)
    path = Path(text).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":  # a GGUF checkpoint carries one
        tok = pretrained_tokenizer(path.parent, gguf_file=path.name)
        return from_transformers(
            tok, name=portable_path(text), add_special_tokens=add_special_tokens
        )
    if path.is_file():
        if is_word_json(path):
            return WordLevelTokenizer.load(path)
        return HFTokenizer.from_file(path, add_special_tokens=add_special_tokens)
    if path.is_dir() and (path / "tokenizer.json").is_file():
        return HFTokenizer.from_file(path / "tokenizer.json", add_special_tokens=add_special_tokens)
    if path.is_dir() and not any(path.glob("tokenizer*.json")) and not any(path.glob("*vocab*")):
        raise PosgeomError(
            f"tokenizer folder {text} holds no tokenizer (no tokenizer.json, tokenizer_config.json "
            "or vocabulary file); pass a folder saved by save_pretrained, a tokenizer.json, a "
            ".gguf checkpoint (its tokenizer), or 'word'"
        )
    if not path.exists() and (isinstance(spec, os.PathLike) or _looks_like_path(text)):
        raise PosgeomError(
            f"tokenizer path {text} does not exist; pass an existing tokenizer.json, a tokenizer "
            "folder, 'word', or a transformers model name"
        )
    tok = pretrained_tokenizer(text, allow_download=allow_download)
    return from_transformers(tok, name=portable_path(text), add_special_tokens=add_special_tokens)


def from_transformers(tok: Any, *, name: str, add_special_tokens: bool = True) -> Any:
    """A posgeom tokenizer for a loaded ``transformers`` tokenizer: fast ones as
    :class:`HFTokenizer` on a copy of the Rust backend, slow ones as :class:`TransformersTokenizer`."""
    if getattr(tok, "is_fast", False) and hasattr(tok, "backend_tokenizer"):
        backend = require("tokenizers", "hf").Tokenizer.from_str(tok.backend_tokenizer.to_str())
        return HFTokenizer(
            backend,
            name=name,
            kind="transformers",
            add_special_tokens=add_special_tokens,
            special_ids=tok.all_special_ids,
            unk_id=tok.unk_token_id,
            pad_id=tok.pad_token_id,
        )
    return TransformersTokenizer(tok, name=name, add_special_tokens=add_special_tokens)
