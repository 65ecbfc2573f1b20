"""The options of one training run: :class:`TrainConfig`, its validation and its identity.

``TrainConfig.task``: ``"sst2"`` (binary sentence classification, SST-2 sentence split),
``"imdb-mlm"`` (masked-language modelling on IMDB reviews) or ``"order"`` (the order-only task of
Theorem 1, :func:`posgeom.nn.tasks.order_task`). ``TrainConfig.model``: ``"tiny"``
(:class:`posgeom.nn.TinyEncoder` with any encoding of :data:`ENCODINGS`) or ``"minilm"`` (the real
all-MiniLM-L6-v2 weights, ``encoding="pretrained"``, SST-2 only).

A run is identified by :meth:`TrainConfig.fingerprint` (SHA-256 of the JSON of every option but
``epochs``, ``threads`` and ``progress``): a checkpoint of the same fingerprint is resumed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._registry_names import registry_getattr
from posgeom._validation import Interval, check_int, check_param
from posgeom.encodings import families, family
from posgeom.encodings._registry import Family, TorchSpec
from posgeom.io.artifacts import canonical_sha256

__all__ = ["MODELS", "TASKS", "TrainConfig", "trainable_encodings"]

TASKS = ("sst2", "imdb-mlm", "order")


def trainable_encodings() -> tuple[str, ...]:
    """Encodings the tiny model trains with: every registered family with a torch module (read
    from the registry per call)."""
    return tuple(
        name
        for name, fam in families().items()
        if type(fam).torch_module is not Family.torch_module
    )


__getattr__ = registry_getattr(__name__, {"ENCODINGS": trainable_encodings})


MODELS = ("tiny", "minilm")
# options that may change between a run and its resumption
_RESUMABLE_FIELDS = ("epochs", "threads", "progress")
#: the real-valued options and their ranges (finite: an upper bound of inf, open, refuses inf)
_POSITIVE = Interval(Real, 0, float("inf"), closed="neither")
_REAL_RANGES = {
    "lr": _POSITIVE,
    "weight_decay": Interval(Real, 0, float("inf"), closed="left"),
    "dropout": Interval(Real, 0, 1, closed="left"),
    "mlm_probability": Interval(Real, 0, 1, closed="neither"),
    "random_scale": _POSITIVE,
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
    seeded), ``imdb_eval`` (reviews held out for IMDB evaluation), ``target_estimator`` (the
    estimator of the target geometry, :func:`posgeom.estimate_geometry`). Optimisation: AdamW with a
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
    target_estimator: str = "recommended"

    def validate(self) -> TrainConfig:
        """Check every option; raise :class:`PosgeomError` naming the problem and the fix."""
        if self.task not in TASKS:
            raise PosgeomError(f"unknown task {self.task!r}; known tasks: {', '.join(TASKS)}")
        if self.model not in MODELS:
            raise PosgeomError(f"unknown model {self.model!r}; known models: {', '.join(MODELS)}")
        self._check_model_and_encoding()
        for name in (
            "epochs",
            "d_model",
            "n_heads",
            "n_layers",
            "max_len",
            "batch_size",
            "rank",
            "threads",
            "order_samples",
            "vocab_min_count",
        ):
            check_int(getattr(self, name), name, 0 if name == "epochs" else 1)
        for name in ("train_limit", "eval_limit", "steps_per_epoch", "d_ff"):
            check_param(name, getattr(self, name), [Interval(Integral, 1, None), None])
        if self.model == "tiny":
            self._check_tiny_shapes()
        if self.max_len < 3:
            raise PosgeomError(
                f"max_len must be >= 3 (the geometry needs 3 positions), got {self.max_len}"
            )
        for name, allowed in _REAL_RANGES.items():
            check_param(name, getattr(self, name), [allowed])
        check_int(self.seed, "seed", 0, 2**63 - 1)
        if self.order_samples % 2:
            raise PosgeomError(f"order_samples must be even, got {self.order_samples}")
        from posgeom.estimators import get as get_estimator

        get_estimator(self.target_estimator)  # an unknown name lists the available ones
        return self

    def _check_model_and_encoding(self) -> None:
        if self.model == "minilm":
            if self.encoding != "pretrained":
                raise PosgeomError(
                    f"model='minilm' keeps its own learned table: use encoding='pretrained', "
                    f"not {self.encoding!r}"
                )
            if self.task != "sst2":
                raise PosgeomError("model='minilm' supports task='sst2' only")
        elif self.encoding not in (known := trainable_encodings()):
            raise PosgeomError(
                f"unknown encoding {self.encoding!r}; known encodings: {', '.join(known)} "
                "(and 'pretrained' with model='minilm')"
            )

    def _check_tiny_shapes(self) -> None:
        """The tiny model's widths, then what the encoding's family needs of them."""
        if self.d_model % self.n_heads:
            raise PosgeomError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}"
            )
        family(self.encoding).check_training(self.torch_spec())

    def identity(self) -> dict[str, Any]:
        """The options that define the run (all but epochs, threads, progress)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in _RESUMABLE_FIELDS}

    def fingerprint(self) -> str:
        """16 hex digits of :func:`~posgeom.io.artifacts.canonical_sha256` of :meth:`identity`
        (validated options: finite numbers, plain JSON)."""
        return canonical_sha256(self.identity())[:16]

    def torch_spec(self, geometry: Any = None) -> TorchSpec:
        """What the tiny model's position module is built from (the family registry's
        :class:`~posgeom.encodings._registry.TorchSpec`); ``geometry`` feeds the MDS families."""
        return TorchSpec(
            n=self.max_len,
            d=self.d_model,
            n_heads=self.n_heads,
            seed=self.seed,
            geometry=geometry,
            rank=self.rank,
            random_scale=self.random_scale,
        )
