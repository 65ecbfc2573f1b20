"""How the pipeline scores encodings at every ``n``: exactly on dense matrices, or on one sample.

Up to :data:`SAMPLED_ABOVE` kept positions every score is exact (each encoding's distance matrix
is built once and shared by its stress kinds, violation rate, separation and the plug-in scores
beside). Above it no ``(n, n)`` matrix is formed: the target is a *blocks target*
(:func:`blocks_target`) and every encoding is scored on one :class:`~posgeom.scores.sampled.
PairSample` (:func:`posgeom.scores.sampled.sampled_scores`: stress kinds and violation rate with
95% intervals, separation exact or a stated upper bound); the rows say ``sampled: true``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from posgeom.scores.sampled import DEFAULT_SAMPLE, draw_pair_sample, sampled_scores

__all__ = [
    "REFINE_MAX_N",
    "SAMPLED_ABOVE",
    "SHEPARD_PAIRS",
    "Scorer",
    "blocks_target",
    "draw_shepard_pairs",
    "long_context_arrays",
    "pair_distances",
    "rank_curve",
    "sampled_block_means",
    "score_encoding",
    "shepard_pairs",
    "stored_target",
]

log = logging.getLogger("posgeom")
SAMPLED_ABOVE = 2048  # exact dense scores up to here; one pair sample above
# SMACOF (O(n^2 r) per Guttman step, O(n^2) memory) runs up to here (the limit the pipeline
# had); above it the refined row is left out and the table says why
REFINE_MAX_N = 2048
SHEPARD_PAIRS = 1500  # pairs kept per encoding for the Shepard plots of a report
REFINE_SKIPPED = (
    f"SMACOF refinement runs for n <= {REFINE_MAX_N} (each Guttman step is O(n^2 r) with an "
    "(n, n) matrix)"
)


def blocks_target(distributions: Any, estimate: Any, convention: str) -> Any:
    """The target as blocks (``n_positions``, ``block``, ``pairs``): the plug-in Hellinger chords
    on demand, or the estimate's own blocks (``estimate.blocks()``) when it has them, else its
    dense matrix."""
    from posgeom.geometry.divergences import HellingerBlocks
    from posgeom.scores.large import DenseTarget

    if estimate is None:
        return HellingerBlocks(distributions, convention=convention)
    blocks = getattr(estimate, "blocks", None)
    if callable(blocks):
        return blocks()
    return DenseTarget(np.asarray(estimate.distances))


def _dense_scores(
    encoding: Any, target: np.ndarray, beside: dict[str, np.ndarray], seed: int, names: Any
) -> dict[str, Any]:
    from posgeom.scores._encoding import encoding_distances
    from posgeom.scores.registry import score_row
    from posgeom.scores.stress import stress_from_pairs, stress_scores

    delta = encoding_distances(encoding)
    if delta.shape != target.shape:
        stress_scores(encoding, target)  # raises the one mismatch message
    out = score_row(delta, target, seed=seed, names=names)
    iu = np.triu_indices(delta.shape[0], 1)
    for name, other in beside.items():  # validated with the target (Scorer.for_target)
        p = stress_from_pairs(delta[iu], other[iu])
        out |= {
            f"{name}_paper": p.paper,
            f"{name}_scale_optimal": p.scale_optimal,
            f"{name}_stress1": p.stress1,
        }
    return out


class Scorer:
    """Scores encodings against one pipeline's target, exactly (dense) or on a pair sample.

    ``dense``: the ``(n, n)`` target (exact mode; a
    :class:`~posgeom._distance_matrix.DistanceMatrix`, or an array validated here once) or
    ``None``; ``sample``: the :class:`~posgeom.scores.sampled.PairSample` (sampled mode);
    ``beside``: dense matrices of the targets shown beside (exact mode, validated by the caller:
    :meth:`for_target`; in sampled mode they are in the sample). ``target_matrix`` is the typed
    target (``None`` when sampled), ``dense`` its array.
    """

    def __init__(
        self,
        *,
        dense: Any = None,
        sample: Any = None,
        beside: dict[str, np.ndarray] | None = None,
        seed: int = 0,
    ):
        from posgeom._distance_matrix import DistanceMatrix, as_distances

        typed = dense is None or isinstance(dense, DistanceMatrix)
        self.target_matrix = dense if typed else as_distances(dense, "target")
        self.dense = None if dense is None else self.target_matrix.distances
        self.sample, self.beside, self.seed = sample, dict(beside or {}), seed

    @classmethod
    def for_target(
        cls,
        target: Any,
        n: int,
        *,
        beside: dict[str, Any] | None = None,
        seed: int = 0,
        size: int = DEFAULT_SAMPLE,
    ) -> Scorer:
        """Exact when ``n <= SAMPLED_ABOVE`` (``target`` and ``beside`` as dense matrices or
        blocks targets), else one sample of ``size`` triples."""
        if n <= SAMPLED_ABOVE:  # read at call time (tests lower it)
            dense = {k: _as_dense(t) for k, t in (beside or {}).items()}
            return cls(dense=_as_typed(target), beside=dense, seed=seed)
        log.info("scores from %d sampled triples per encoding (n = %d)", size, n)
        sample = draw_pair_sample(
            _as_blocks(target), size=size, seed=seed, beside=_blocks(beside or {})
        )
        return cls(sample=sample, seed=seed)

    @property
    def sampled(self) -> bool:
        return self.sample is not None

    @property
    def n_positions(self) -> int:
        return int(self.sample.n_positions if self.sampled else self.dense.shape[0])

    def score(self, encoding: Any, *, names: Any = None) -> dict[str, Any]:
        """Every registered score of ``encoding`` (or those of ``names``; the keys of
        :func:`score_encoding`), plus ``<name>_paper`` /
        ``<name>_scale_optimal`` / ``<name>_stress1`` per target beside. Sampled: the scores
        with a sampled form."""
        if self.sampled:
            return sampled_scores(encoding, self.sample, names=names)
        return _dense_scores(encoding, self.dense, self.beside, self.seed, names)

    def target_at(self, pairs: np.ndarray) -> np.ndarray | None:
        """The dense target at ``(2, m)`` pairs (exact mode), else ``None``."""
        return None if self.sampled else self.dense[pairs[0], pairs[1]]


def _as_typed(target: Any) -> Any:
    """The target as a :class:`~posgeom._distance_matrix.DistanceMatrix`, validated once."""
    from posgeom._distance_matrix import as_distances

    return as_distances(target, "target")


def _as_dense(target: Any) -> np.ndarray:
    """A target's array, validated once (the scores read it without checking it again)."""
    return _as_typed(target).distances


def _as_blocks(target: Any) -> Any:
    from posgeom.scores.large import DenseTarget

    return target if hasattr(target, "pairs") else DenseTarget(np.asarray(target))


def _blocks(targets: dict[str, Any]) -> dict[str, Any]:
    return {k: _as_blocks(t) for k, t in targets.items()}


def score_encoding(encoding: Any, target: Any, *, seed: int = 0) -> dict[str, Any]:
    """Every registered score (:func:`posgeom.scores.available`) of one encoding against the
    target distances (an ``(n, n)`` matrix or an estimate), as a JSON-able dict."""
    from posgeom.scores import registry
    from posgeom.scores._encoding import matched_distance_matrices

    delta, tgt = matched_distance_matrices(encoding, target)
    return registry.score_row(delta, tgt, seed=seed)


def rank_curve(mds: Any, target: Any, *, max_rank: int, seed: int = 0) -> list[dict[str, Any]]:
    """The rank experiment: per ``r = 1 .. min(max_rank, r_MDS)`` every registered score with
    ``rank_curve`` of the rank-``r`` MDS encoding ``P = A B^T`` (rows of
    :func:`posgeom.text.schema.rank_columns`), with its explained variance and its
    parameters ``r (n + d)`` against ``n d``. ``target``: an ``(n, n)`` matrix or a
    :class:`Scorer` (sampled above :data:`SAMPLED_ABOVE` positions)."""
    from posgeom.scores import registry

    scorer = target if isinstance(target, Scorer) else Scorer(dense=np.asarray(target), seed=seed)
    n, d = scorer.n_positions, mds.model_dim
    names = [s.name for s in registry.scores() if s.rank_curve]
    curve = []
    for r in range(1, min(max_rank, mds.n_components) + 1):
        s = scorer.score(mds.truncate(r), names=names)
        curve.append(
            {
                "rank": r,
                **{k: s[k] for k in names if k in s},
                "explained_variance": float(np.sum(mds.explained_variance_ratio[:r])),
                "parameters": r * (n + d),
                "full_parameters": n * d,
                "parameter_reduction": 1.0 - r * (n + d) / (n * d),
                **({"sampled": True} if scorer.sampled else {}),
            }
        )
    return curve


def shepard_pairs(n: int, *, size: int = SHEPARD_PAIRS, seed: int = 0) -> np.ndarray:
    """``(2, m)`` pairs ``i < j`` for Shepard plots: all of them when there are at most ``size``,
    else ``size`` drawn without replacement (``default_rng(seed)``), sorted."""
    return draw_shepard_pairs(n, size, seed)


def pair_distances(encoding: Any, pairs: np.ndarray) -> np.ndarray:
    """``delta_ij`` of ``encoding`` at ``pairs`` (``(2, m)``): from its lag profile or vectors
    when it has them (no ``n x n`` matrix), else from its distance matrix."""
    from posgeom.scores._encoding import encoding_pairs

    return encoding_pairs(encoding, pairs[0], pairs[1])


GRID = 512  # positions of a long context's heatmap grid (and blocks of its heatmap)
PER_BLOCK = 8  # positions drawn in each block of the heatmap: 64 pairs per block mean


def sampled_block_means(
    target: Any, *, size: int | None = None, per_block: int | None = None, seed: int = 0
) -> tuple[np.ndarray, int, int]:
    """Block means of ``D`` without ``(n, n)``: blocks of ``f = ceil(n / size)`` (default
    :data:`GRID`) consecutive
    positions (as :func:`posgeom.reports.figures.block_mean`), each mean from ``k = min(per_block
    (default :data:`PER_BLOCK`), smallest block)`` positions drawn without replacement in each block (``default_rng(seed)``),
    read as one ``(b k, b k)`` block of the target.

    Off the diagonal the ``k x k`` drawn pairs of blocks ``I, J`` give an unbiased estimate of
    ``mean_{i in I, j in J} D_ij``; on it the ``k (k - 1)`` drawn pairs ``i != j`` estimate the
    off-diagonal mean, scaled by ``(f_I - 1) / f_I`` so that it estimates the block's mean with its
    zero diagonal, as the exact block mean counts it. With ``k = f`` every pair is read and the
    result equals the exact block means. Returns ``(means (b, b), f, k)``."""
    size, per_block = size or GRID, per_block or PER_BLOCK
    n = int(target.n_positions)
    f = max(1, int(np.ceil(n / size)))
    starts = np.arange(0, n, f)
    widths = np.diff(np.append(starts, n))
    k = int(min(per_block, widths.min()))
    rng = np.random.default_rng(seed)
    rows = np.concatenate(
        [
            np.sort(s + rng.choice(w, size=k, replace=False))
            for s, w in zip(starts, widths, strict=True)
        ]
    )
    b = len(starts)
    means = np.empty((b, b))
    within = np.zeros(b)
    for lo in range(0, b, 64):  # 64 block rows at a time: (64 k, b k) floats, 16 MiB at k = 8
        hi = min(lo + 64, b)
        sub = np.asarray(target.block(rows[lo * k : hi * k], rows), dtype=np.float64)
        sub = sub.reshape(hi - lo, k, b, k)
        means[lo:hi] = sub.mean(axis=(1, 3))
        for a in range(lo, hi):  # drawn pairs i != j of the block itself
            own = sub[a - lo, :, a, :]
            within[a] = (own.sum() - np.trace(own)) / max(k * (k - 1), 1)
    # the drawn diagonal out, the block's own share of zero pairs back in
    means[np.diag_indices(b)] = within * (widths - 1) / widths
    return means, f, k


def long_context_arrays(
    target: Any, beside: dict[str, Any], pairs: np.ndarray
) -> dict[str, np.ndarray]:
    """What a report draws for a long context, without ``(n, n)``: the target at the Shepard
    ``pairs`` (``shepard_target``; the plug-in beside: ``shepard_plugin``) and at a grid of
    :data:`GRID` evenly spaced positions (``hellinger_grid``, ``hellinger_grid_positions``:
    one ``(GRID, GRID)`` block) and as sampled block means for the heatmap
    (``hellinger_blocks``, ``hellinger_block_width``: :func:`sampled_block_means`)."""
    n = int(target.n_positions)
    grid = np.unique(np.linspace(0, n - 1, GRID).round().astype(np.int64))
    blocks, width, drawn = sampled_block_means(target)
    out = {
        "shepard_target": np.asarray(target.pairs(pairs[0], pairs[1]), dtype=np.float64),
        "hellinger_grid": np.asarray(target.block(grid, grid), dtype=np.float64),
        "hellinger_grid_positions": grid,
        "hellinger_blocks": blocks,
        "hellinger_block_width": np.asarray(width, dtype=np.int64),
        "hellinger_block_pairs": np.asarray(drawn * drawn, dtype=np.int64),
    }
    if "plugin" in beside:
        out["shepard_plugin"] = np.asarray(beside["plugin"].pairs(pairs[0], pairs[1]), float)
    return out


def draw_shepard_pairs(n: int, size: int, seed: int) -> np.ndarray:
    """``(2, m)`` pairs ``i < j``: all of them when there are at most ``size``, else ``size``
    distinct pairs drawn uniformly (``default_rng(seed)``), sorted; no ``O(n^2)`` index arrays
    for long contexts (distinct pairs by rejection of repeats)."""
    rng = np.random.default_rng(seed)
    total = n * (n - 1) // 2
    if total <= max(size, 4 * 10**6):
        i, j = np.triu_indices(n, 1)
        if len(i) > size:
            keep = np.sort(rng.choice(len(i), size, replace=False))
            i, j = i[keep], j[keep]
        return np.vstack([i, j]).astype(np.int64)
    chosen: np.ndarray = np.empty(0, dtype=np.int64)
    while chosen.size < size:
        a = rng.integers(0, n, 2 * size)
        b = rng.integers(0, n, 2 * size)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys = (lo * n + hi)[lo < hi]
        chosen = np.unique(np.concatenate([chosen, keys]))
    chosen = np.sort(rng.choice(chosen, size, replace=False))
    return np.vstack([chosen // n, chosen % n]).astype(np.int64)


def stored_target(arrays: dict[str, np.ndarray], geometry: dict[str, Any], where: str) -> Any:
    """The target of a long-context results folder (no ``hellinger`` array) from what it keeps,
    as a blocks target: the rows of its MDS coordinates, when the MDS holds the whole estimate
    (the Euclidean estimate's ``kept_rank`` at most the MDS rank and every MDS eigenvalue past
    it zero to 1e-9 of the first: ``D_ij = ||x_i - x_j||`` over those columns, exactly).
    ``geometry``: the folder's pipeline summary. Else a one-line :class:`PosgeomError` naming
    what to run instead."""
    from posgeom._errors import PosgeomError
    from posgeom.estimators._blocks import CoordinateBlocks

    kept = ((geometry.get("estimator") or {}).get("projection") or {}).get("kept_rank")
    coords, eig = arrays.get("mds_coordinates"), arrays.get("eigenvalues")
    n = None if coords is None else coords.shape[0]
    if kept is not None and coords is not None and eig is not None and kept <= coords.shape[1]:
        rest = np.abs(np.asarray(eig, dtype=np.float64)[int(kept) :])
        if rest.size == 0 or rest.max() <= 1e-9 * abs(float(eig[0])):
            return CoordinateBlocks(np.asarray(coords[:, : int(kept)], dtype=np.float64))
    estimator = (geometry.get("estimator") or {}).get("estimator", "?")
    raise PosgeomError(
        f"{where} is a long-context folder (n = {n}, {estimator} estimator): it keeps no (n, n) "
        "'hellinger' array and its MDS coordinates do not hold the whole target; score against "
        "it with `posgeom geometry COUNTS -o DIR --encoding NAME=FILE` on the counts it was made "
        "from"
    )
