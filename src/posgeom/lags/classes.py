"""Token classes for lag statistics: the resolution at which the corpus pins pairs down.

A pair table over a vocabulary of ``V`` tokens has ``V^2`` cells, far more than any corpus fills,
so lag statistics are counted over ``C`` token classes (``C^2`` cells). A :class:`TokenClasses`
maps every token id to a class ``0 .. C-1``; ids outside the table go to the last class, "other".

:func:`top_classes` (the ``K`` most frequent tokens, which carry short-range syntax) and
:func:`embedding_classes` (``K`` clusters of a model's token embeddings, which keep the rarer,
topical tokens that carry dependence over thousands of tokens) both add "other": ``C = K + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int

__all__ = ["TokenClasses", "embedding_classes", "parse_classes", "top_classes"]


@dataclass(frozen=True, eq=False)
class TokenClasses:
    """``table[t]``: the class of token id ``t`` (``(V,)`` int64, values in ``0 .. C-1``); ids
    ``>= V`` are class ``C - 1`` ("other"). ``kind``: how the classes were made (``"top:30"``,
    ``"embedding:64"``); ``tokens``: for ``top`` classes, the token id of each named class."""

    table: np.ndarray
    n_classes: int
    kind: str
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        table = np.asarray(self.table, dtype=np.int64).reshape(-1)
        if table.size and (table.min() < 0 or table.max() >= self.n_classes):
            raise PosgeomError(f"token classes must lie in 0 .. {self.n_classes - 1}")
        table.setflags(write=False)
        object.__setattr__(self, "table", table)

    def __call__(self, ids: Any) -> np.ndarray:
        """The ``(m,)`` int64 classes of the token ids ``ids``."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and ids.min() < 0:
            raise PosgeomError("token ids must be non-negative")
        out = np.full(ids.shape, self.n_classes - 1, dtype=np.int64)
        inside = ids < self.table.size
        out[inside] = self.table[ids[inside]]
        return out

    def summary(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_classes": int(self.n_classes), "vocab_size": self.table.size}


def top_classes(token_counts: Any, k: int) -> TokenClasses:
    """The ``k`` most frequent tokens of ``token_counts`` (``(V,)`` occurrences per id) as their
    own classes, most frequent first (ties: smaller id first), the rest as class ``k``."""
    counts = np.asarray(token_counts, dtype=np.int64).reshape(-1)
    k = check_int(k, "top classes K", 1, None)
    order = np.lexsort((np.arange(counts.size), -counts))
    keep = order[: min(k, int(np.count_nonzero(counts)))]
    table = np.full(counts.size, keep.size, dtype=np.int64)
    table[keep] = np.arange(keep.size)
    return TokenClasses(table, int(keep.size) + 1, f"top:{k}", tokens=keep.astype(np.int64))


def embedding_classes(embeddings: Any, k: int, *, seed: int = 0) -> TokenClasses:
    """``k`` k-means clusters (``scipy.cluster.vq.kmeans2``, ``"++"`` start, ``seed``) of the
    ``(V, d)`` token embeddings scaled to unit rows (cosine geometry), plus "other" (class ``k``)."""
    from scipy.cluster.vq import kmeans2

    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or not np.all(np.isfinite(x)):
        raise PosgeomError(
            f"embeddings must be a finite (V, d) matrix with V >= 2, got shape {x.shape}"
        )
    k = check_int(k, "embedding classes K", 2, x.shape[0])
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms > 0, norms, 1.0)
    _, labels = kmeans2(x, k, minit="++", seed=np.random.default_rng(seed), iter=20)
    return TokenClasses(labels.astype(np.int64), k + 1, f"embedding:{k}")


def parse_classes(spec: Any, *, token_counts: Any = None, embeddings: Any = None) -> TokenClasses:
    """A :class:`TokenClasses` from ``"top:K"`` (needs ``token_counts``), ``"embedding:K"``
    (needs ``embeddings``), or a ready :class:`TokenClasses`."""
    if isinstance(spec, TokenClasses):
        return spec
    kind, _, value = str(spec).partition(":")
    if kind not in ("top", "embedding") or not value.isdigit():
        raise PosgeomError(
            f"unknown token classes {spec!r}; use 'top:K' (the K most frequent tokens + other) "
            "or 'embedding:K' (K clusters of the model's token embeddings)"
        )
    if kind == "top":
        if token_counts is None:
            raise PosgeomError("'top:K' classes need the corpus's token counts")
        return top_classes(token_counts, int(value))
    if embeddings is None:
        raise PosgeomError(
            "'embedding:K' classes need the model's token embeddings (a Hugging Face model, not "
            "a bare family spec); use 'top:K' instead"
        )
    return embedding_classes(embeddings, int(value))
