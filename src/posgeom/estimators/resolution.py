"""The resolution of an estimate: the token classes whose positional distributions it identifies.

A resolution is a token -> class map ``c`` (an int array of length ``V``), the same for every
position, defined from the *pooled* counts; the estimate is then the geometry of the coarsened
distributions ``p'_i(k) = sum_{t: c(t) = k} p_i(t)``:

- ``"full"``: every token is its own class (``c(t) = t``);
- ``"top:K"``: the ``K`` most frequent tokens (pooled; ties by id) keep their own class, every
  other token falls into one "other" class;
- ``"top:K+bands:B"`` (``"bands:B"`` when ``K = 0``): the ``K`` most frequent tokens one by one,
  the rest in ``B`` *frequency bands* of equal pooled mass ``m_rest / B``, consecutive in
  frequency rank (:func:`band_classes`);
- ``"bins:B"``: ``B`` frequency-rank bins of geometrically growing width
  (:mod:`posgeom.estimators.transforms`);
- ``"auto"`` (the default): the finest ``top:K+bands:B`` that the samples per position support,
  by the rule below.

The rule (:func:`auto_resolution`). With pooled relative frequencies ``f_t`` and ``T_ref`` the
fewest samples of any position holding at least ``REACH`` (5%) of the best-sampled position's
samples (the share ``posgeom lengths`` suggests ``n`` by)::

    K = #{t : T_ref f_t >= c}                       c = RESOLVED_COUNT = 1
    B = floor(T_ref m_rest / c_band)                c_band = BAND_COUNT = 10,
                                                    m_rest = 1 - (sum of the K kept f_t)

so each token kept alone is expected at least ``c`` times at the reference position and each
band ``c_band`` times. ``K`` and ``B`` are rounded down to the grid ``1, 2, 3, 5, 10, 20, 30, 50,
100, ...`` (two corpora of similar size share a resolution, and the label is readable); ``B <=
1`` is the one "other" class of ``top:K``; the result is ``"full"`` when every token that occurs
passes but at most one. A count, because the bias-corrected estimator cannot see a class seen
about once (``h(1) = 0``); ``T_ref``, because a position reached by under 5% of the sequences
pins down no class (such positions: :func:`thin_positions`); bands keep how the rarer tokens
share the positions. ``c``, ``c_band`` and ``REACH`` were chosen on real populations
(``docs/ESTIMATION.md``, "Resolution" and "A resolution that keeps the signal").

Hellinger distance contracts under coarse-graining (``D(p', q') <= D(p, q)``): a coarser
resolution is a lower bound on a finer one, not an estimate of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import PosgeomError

__all__ = [
    "BAND_COUNT",
    "REACH",
    "RESOLVED_COUNT",
    "auto_resolution",
    "band_classes",
    "describe_resolution",
    "frequency_order",
    "kept_one_by_one",
    "reference_samples",
    "resolution_reference",
    "resolve",
    "thin_positions",
]

RESOLVED_COUNT = 1.0  # c: expected count of a token kept one by one at the reference position
BAND_COUNT = 10.0  # c_band: expected count of each frequency band at the reference position
REACH = 0.05  # positions with fewer than this share of the most samples do not set T_ref
_GRID_STEPS = (1, 2, 3, 5)
_LABEL = re.compile(r"^(?:top:(\d+)\+)?bands:(\d+)$")


def _pooled(c: Any) -> np.ndarray:
    return np.asarray(c.sum(axis=0), dtype=np.float64).ravel()


def frequency_order(c: Any) -> np.ndarray:
    pooled = _pooled(c)
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
        return _labelled_classes(spec, c)
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


def _labelled_classes(spec: str, c: sp.csr_matrix) -> tuple[np.ndarray, str]:
    """The class map of a label: ``top:K``, ``bins:B``, ``top:K+bands:B`` or ``bands:B``."""
    bands = _LABEL.match(spec)
    if bands is not None and int(bands.group(2)) >= 1:
        k, b = int(bands.group(1) or 0), int(bands.group(2))
        return band_classes(c, k, b), spec
    kind, _, value = spec.partition(":")
    if kind not in ("top", "bins") or not value.isdigit() or int(value) < 1:
        raise PosgeomError(
            f"coarsen={spec!r} not understood; use 'top:K', 'top:K+bands:B', 'bands:B', "
            "'bins:B', an int K, or a token -> class map"
        )
    return _rank_classes(kind, int(value), c), spec


def _rank_classes(kind: str, value: int, c: sp.csr_matrix) -> np.ndarray:
    vocab = c.shape[1]
    order = frequency_order(c)
    rank = np.empty(vocab, dtype=np.int64)
    rank[order] = np.arange(vocab)
    if kind == "top":
        return np.minimum(rank, value) if value < vocab else np.arange(vocab)  # K >= V: identity
    edges = np.unique(np.round(np.geomspace(1, vocab, value + 1)).astype(np.int64)) - 1
    return np.searchsorted(edges[1:], rank, side="right")


def band_classes(c: Any, top: int, bands: int) -> np.ndarray:
    """``(V,)`` int64 class map of ``top:K+bands:B``: the ``K = top`` most frequent tokens
    (pooled counts of ``c``, ``(n, V)``; ties by id) are classes ``0 .. K-1``; the others, in
    frequency order, go to band ``floor(B (M_t - m_t / 2) / m_rest)`` (``M_t`` the cumulative
    mass up to and including ``t``, ``m_t`` its own). Tokens never seen join the last band."""
    pooled = _pooled(c)
    order = frequency_order(c)
    k = min(int(top), order.size)
    classes = np.empty(order.size, dtype=np.int64)
    classes[order[:k]] = np.arange(k)
    rest = order[k:]
    mass = pooled[rest]
    total = float(mass.sum())
    if rest.size == 0 or total <= 0:
        classes[rest] = k
        return classes
    nb = max(int(bands), 1)
    middle = np.cumsum(mass) - 0.5 * mass
    band = np.minimum(np.floor(nb * middle / total).astype(np.int64), nb - 1)
    band[mass == 0] = nb - 1
    classes[rest] = k + band
    return classes


def _grid_floor(k: int) -> int:
    """The largest ``g <= k`` in ``{1, 2, 3, 5} x 10^j`` (``k >= 1``)."""
    scale = 10 ** int(np.floor(np.log10(k)))
    return max(s * scale for s in _GRID_STEPS if s * scale <= k)


def reference_samples(totals: Any, *, reach: float = REACH) -> float:
    """``T_ref``: the fewest samples of any position holding at least ``reach`` times the
    most samples of any position (module docstring). ``totals``: ``(n,)`` samples per position."""
    t = np.asarray(totals, dtype=np.float64).ravel()
    if t.size == 0 or t.max() <= 0:
        raise PosgeomError("the resolution needs counts with samples at every position")
    return float(t[t >= reach * t.max()].min())


def thin_positions(totals: Any, *, reach: float = REACH) -> np.ndarray:
    """Positions with fewer samples than ``T_ref`` (:func:`reference_samples`)."""
    t = np.asarray(totals, dtype=np.float64).ravel()
    return np.flatnonzero(t < reference_samples(t, reach=reach))


def resolution_reference(totals: Any, *, reach: float = REACH) -> dict[str, Any]:
    """What set an auto resolution: ``reference_samples`` (``T_ref``) and ``thin_positions``.
    ``totals``: ``(n,)`` samples per position."""
    return {
        "reference_samples": reference_samples(totals, reach=reach),
        "thin_positions": thin_positions(totals, reach=reach).tolist(),
    }


def auto_resolution(
    counts: sp.csr_matrix,
    *,
    resolved_count: float = RESOLVED_COUNT,
    band_count: float = BAND_COUNT,
    reach: float = REACH,
) -> str:
    """The label of the finest resolution the samples support (module docstring): ``"full"``,
    ``"top:K"``, ``"top:K+bands:B"`` or ``"bands:B"``. ``counts``: ``(n, V)`` integer CSR,
    every row with at least one sample; ``resolved_count``: ``c`` of the tokens kept one by
    one, ``band_count``: ``c_band`` of the bands; ``reach=0`` and ``band_count=inf`` give the
    rule before the bands (``T_ref = min_i T_i``, ``top:K`` only)."""
    pooled = _pooled(counts)
    totals = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    total = float(pooled.sum())
    if total <= 0 or totals.size == 0 or totals.min() <= 0:
        raise PosgeomError("the resolution needs counts with samples at every position")
    t_ref = reference_samples(totals, reach=reach)
    freq = np.sort(pooled)[::-1] / total
    resolved = int(np.count_nonzero(t_ref * freq >= resolved_count))
    if resolved >= np.count_nonzero(pooled) - 1:  # top:(V-1) + other is the full vocabulary
        return "full"
    k = _grid_floor(resolved) if resolved else 0
    rest = max(1.0 - float(freq[:k].sum()), 0.0)
    b = int(np.floor(t_ref * rest / band_count * (1 + 1e-12))) if np.isfinite(band_count) else 1
    b = min(_grid_floor(b) if b >= 1 else 1, int(np.count_nonzero(pooled)) - k)
    if b <= 1:
        return f"top:{max(k, 1)}"
    return f"top:{k}+bands:{b}" if k else f"bands:{b}"


def resolve(counts: sp.csr_matrix, resolution: Any) -> tuple[np.ndarray, str]:
    """``(class_map, label)`` for ``resolution`` on ``counts`` (``(n, V)`` CSR).

    ``class_map``: int64 ``(V,)``, classes numbered ``0 .. k-1`` (dense); ``label``: ``"full"``,
    ``"top:K"``, ``"top:K+bands:B"``, ``"bands:B"``, ``"bins:B"`` or ``"map"``. Accepts
    ``"auto"``, ``"full"``, those labels, an int ``K`` or a token -> class map (array or dict
    covering every id).
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
    if label.startswith("top:") and "+" not in label and int(label[4:]) >= counts.shape[1]:
        label = "full"
    return dense, label


def describe_resolution(label: str) -> str:
    """Words for a resolution label: ``"top:300"`` -> ``"the top 300 tokens + other"``."""
    label = str(label)
    bands = _LABEL.match(label)
    if bands is not None:
        k, b = int(bands.group(1) or 0), int(bands.group(2))
        if k:
            return f"the top {k:,} tokens + {b:,} frequency bands of the other tokens"
        return f"{b:,} frequency bands of the tokens"
    kind, _, value = label.partition(":")
    if kind == "full":
        return "the full vocabulary"
    if kind == "top":
        return f"the top {int(value):,} tokens + other"
    if kind == "bins":
        return f"{int(value):,} frequency bins of the vocabulary"
    return "a given token -> class map"


def kept_one_by_one(label: str) -> int | None:
    """``K`` of ``top:K`` / ``top:K+bands:B`` (0 for ``bands:B``), None for other labels."""
    bands = _LABEL.match(label)
    if bands is not None:
        return int(bands.group(1) or 0)
    kind, _, value = label.partition(":")
    return int(value) if kind == "top" and value.isdigit() else None
