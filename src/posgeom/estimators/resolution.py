"""The resolution of an estimate: the token classes whose positional distributions it identifies.

A resolution is a token -> class map ``c`` (an int array of length ``V``), the same for every
position; the estimate is then the geometry of the coarsened distributions
``p'_i(k) = sum_{t: c(t) = k} p_i(t)``. Classes are defined from the *pooled* counts (all
positions together), so no position's own sample decides them:

- ``"full"``: every token is its own class (``c(t) = t``);
- ``"top:K"``: the ``K`` most frequent tokens (pooled; ties by id) keep their own class, every
  other token falls into one "other" class;
- ``"bins:B"``: ``B`` frequency-rank bins of geometrically growing width
  (:mod:`posgeom.estimators.transforms`);
- ``"auto"`` (the default): the finest ``top:K`` that the samples per position support, by the
  rule below.

The rule (:func:`auto_resolution`). With pooled relative frequencies ``f_t`` and the fewest
samples of any position ``T_min = min_i T_i``, token ``t`` is *resolved* when its expected count at
the thinnest position reaches ``c``::

    K = #{t : T_min f_t >= c},      c = RESOLVED_COUNT

``K`` is rounded down to the grid ``1, 2, 3, 5, 10, 20, 30, 50, 100, ...`` (so two corpora of
similar size share a resolution and the label is readable), and the result is ``"full"`` when every
token that occurs passes but at most one (``top:(V-1)`` + other is the full vocabulary). Why a count: the bias-corrected estimator cannot see a token seen about
once (``h(1) = 0``), and whether it is seen depends on ``T_i``; with the same classes at every
position and each class expected about ``c`` times even at the thinnest position, no position is
measured at a finer resolution than another. ``c = 1`` is the choice of the real-population
benchmark (``docs/ESTIMATION.md``, "Resolution": IMDB and the long texts as populations, MiniLM
WordPiece, word and character tokens, 300 to 10,000 sequences, the default Euclidean estimate):
the finest of the candidates 0.3, 1, 2, 5 whose Kendall tau of the encoding ranking stays >= 0.8
and whose Spearman with the truth stays within 0.05 of the best candidate's in the most cells
(16 of 24, tied with 2; 0.3 picks resolutions the samples do not support, tau down to 0.2 at
m = 10,000).

Hellinger distance contracts under coarse-graining (``D(p', q') <= D(p, q)``): a coarser
resolution is a lower bound on a finer one, not an estimate of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError

__all__ = ["RESOLVED_COUNT", "auto_resolution", "describe_resolution", "resolve"]

RESOLVED_COUNT = 1.0  # c: expected count of the rarest kept class at the thinnest position
_GRID_STEPS = (1, 2, 3, 5)


def _frequency_order(c: sp.csr_matrix) -> np.ndarray:
    pooled = np.asarray(c.sum(axis=0)).ravel()
    return np.lexsort((np.arange(c.shape[1]), -pooled))  # by count, ties by id


def _class_map(spec: Any, c: sp.csr_matrix) -> tuple[np.ndarray, str]:
    vocab = c.shape[1]
    if isinstance(spec, Mapping):
        missing = sorted(set(range(vocab)) - {int(k) for k in spec})
        if missing:
            raise PosgeomError(
                f"the class map does not cover the vocabulary: {len(missing)} token ids have no "
                f"class (first: {missing[:10]}); map every id 0..{vocab - 1}"
            )
        return np.array([spec[t] for t in range(vocab)]), "map"
    if isinstance(spec, str):
        kind, _, value = spec.partition(":")
        if kind not in ("top", "bins") or not value.isdigit() or int(value) < 1:
            raise PosgeomError(
                f"coarsen={spec!r} not understood; use 'top:K', 'bins:B', an int K, or a "
                "token -> class map"
            )
        return _rank_classes(kind, int(value), c), spec
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return _rank_classes("top", int(spec), c), f"top:{int(spec)}"
    arr = np.asarray(spec)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise PosgeomError("a class map must be a 1-D integer array (one class per token id)")
    if arr.size < vocab:
        raise PosgeomError(
            f"the class map covers ids 0..{arr.size - 1} but the vocabulary has {vocab} ids; "
            f"missing ids {arr.size}..{vocab - 1}: give every token id a class"
        )
    if arr.size > vocab:
        raise PosgeomError(f"the class map has {arr.size} entries for a vocabulary of {vocab}")
    return arr, "map"


def _rank_classes(kind: str, value: int, c: sp.csr_matrix) -> np.ndarray:
    vocab = c.shape[1]
    order = _frequency_order(c)
    rank = np.empty(vocab, dtype=np.int64)
    rank[order] = np.arange(vocab)
    if kind == "top":
        return np.minimum(rank, value) if value < vocab else np.arange(vocab)  # K >= V: identity
    edges = np.unique(np.round(np.geomspace(1, vocab, value + 1)).astype(np.int64)) - 1
    return np.searchsorted(edges[1:], rank, side="right")


def _grid_floor(k: int) -> int:
    """The largest ``g <= k`` in ``{1, 2, 3, 5} x 10^j`` (``k >= 1``)."""
    scale = 10 ** int(np.floor(np.log10(k)))
    return max(s * scale for s in _GRID_STEPS if s * scale <= k)


def auto_resolution(counts: sp.csr_matrix, *, resolved_count: float = RESOLVED_COUNT) -> str:
    """The label of the finest resolution the samples support (module docstring): ``"full"`` or
    ``"top:K"``. ``counts``: ``(n, V)`` integer CSR, every row with at least one sample."""
    pooled = np.asarray(counts.sum(axis=0), dtype=np.float64).ravel()
    totals = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    t_min, total = (float(totals.min()) if totals.size else 0.0), float(pooled.sum())
    if total <= 0 or t_min <= 0:
        raise PosgeomError("the resolution needs counts with samples at every position")
    resolved = int(np.count_nonzero(t_min * pooled / total >= resolved_count))
    if resolved >= np.count_nonzero(pooled) - 1:  # top:(V-1) + other is the full vocabulary
        return "full"
    return f"top:{_grid_floor(max(resolved, 1))}"


def resolve(counts: sp.csr_matrix, resolution: Any) -> tuple[np.ndarray, str]:
    """``(class_map, label)`` for ``resolution`` on ``counts`` (``(n, V)`` CSR).

    ``class_map``: int64 ``(V,)``, classes numbered ``0 .. k-1`` (dense); ``label``: ``"full"``,
    ``"top:K"``, ``"bins:B"`` or ``"map"``. Accepts ``"auto"``, ``"full"``, ``"top:K"``,
    ``"bins:B"``, an int ``K`` or a token -> class map (array or dict covering every id).
    """
    if isinstance(resolution, str) and resolution == "auto":
        resolution = auto_resolution(counts)
    if isinstance(resolution, str) and resolution == "full":
        return np.arange(counts.shape[1], dtype=np.int64), "full"
    classes, label = _class_map(resolution, counts)
    if classes.min(initial=0) < 0:
        raise PosgeomError("class ids must be >= 0")
    _, dense = np.unique(classes, return_inverse=True)  # drop unused class ids
    dense = dense.astype(np.int64).ravel()
    if label.startswith("top:") and int(label[4:]) >= counts.shape[1]:
        label = "full"
    return dense, label


def describe_resolution(label: str) -> str:
    """Words for a resolution label: ``"top:300"`` -> ``"the top 300 tokens + other"``."""
    kind, _, value = str(label).partition(":")
    if kind == "full":
        return "the full vocabulary"
    if kind == "top":
        return f"the top {int(value):,} tokens + other"
    if kind == "bins":
        return f"{int(value):,} frequency bins of the vocabulary"
    return "a given token -> class map"
