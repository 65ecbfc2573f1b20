"""The comparison table for one corpus: every encoding against the corpus's Hellinger geometry.

:func:`compare_encodings` runs the pipeline (:func:`posgeom.analysis.pipeline.analyze_counts`: positional
distributions, Hellinger distances ``D``, the MDS encoding, its SMACOF refinement, the noise floor)
and scores every encoding with :func:`posgeom.analysis.pipeline.score_encoding` against ``D``:

* paper stress ``sum_{i<j} (delta_ij - D_ij)^2 / sum_{i<j} D_ij^2`` (no rescaling), Kruskal
  stress-1, scale-optimal stress (the encoding rescaled by ``alpha* = sum delta D / sum delta^2``),
  the monotonicity violation rate over triples and the separation margin ``min_{i != j} delta_ij``;
* the rank experiment: the rank-``r`` MDS encoding for ``r = 1 .. R`` with its scores and its
  parameter count ``r (n + d)`` against ``n d``;
* :func:`stationarity`: how much of ``D`` is a function of ``|i - j|`` alone.

Default encodings (``model_dim = d``, BERT-base: ``d = 768``, ``n_heads = 12``)
--------------------------------------------------------------------------------
``sinusoidal``  Vaswani vectors of width ``d``, base 10000 (norm ``sqrt(d/2)``).
``rope``        RoPE as a BERT-base-shaped model would use it: ``d / head_dim`` heads of
                ``head_dim = d / n_heads`` (64; see :func:`default_rope_head_dim`), each the
                rotation of a unit vector per plane
                (:func:`posgeom.encodings.rope`, ``normalize="plane"``), the heads concatenated to
                width ``d``. The norm is ``sqrt(d/2)``, as for ``sinusoidal``, so the paper stress
                of the two is comparable. RoPE with ``head_dim = d`` would be *identical* to
                ``sinusoidal`` (same frequencies ``base^(-2k/d)``); with ``d / n_heads`` the
                frequencies ``base^(-2k/64)`` repeat in every head, so more planes rotate fast and
                distances are larger. ``rope_head_dim`` overrides the head width.
``alibi``       the ALiBi head with the lowest paper stress among ``n_heads`` reference slopes
                (rank-1 geometry ``m_h |i - j|``); every head is in
                :attr:`ComparisonResult.heads`.
``t5``          T5 bucket-index distance (32 buckets, max distance 128, bidirectional).
``nope``        every position the zero vector (paper stress exactly 1).
``random``      ``numpy.random.default_rng(seed).standard_normal((n, d))``.
``learned``     rows ``0 .. n-1`` of a model's position table; only with ``learned_model=``.
``mds``         Algorithm 1 at rank ``min(n - 1, d)``.
``low_rank_mds``  the rank-``low_rank`` MDS encoding ``P = A B^T`` (``r (n + d)`` parameters).
``mds+smacof``  SMACOF refinement of the MDS encoding (stress-optimal rather than strain-optimal).

Encodings are built for positions ``0 .. max(kept) `` and restricted to the kept positions, so a
sample floor with ``below_min="drop"`` keeps every encoding aligned with ``D``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from posgeom._errors import PosgeomDeprecationWarning
from posgeom._validation import check_int
from posgeom.encodings import default_rope_head_dim, rope_heads
from posgeom.pipeline.config import (
    GeometryConfig,
    comparable_encodings,
    default_encodings,
    takes_geometry_config,
)
from posgeom.pipeline.job import analyze
from posgeom.pipeline.result import GeometryResult
from posgeom.pipeline.rows import comparison_rows, with_baselines
from posgeom.pipeline.stationarity import StationarityResult, stationarity

__all__ = [
    "ComparisonResult",
    "StationarityResult",
    "comparable_encodings",
    "compare_encodings",
    "comparison_rows",
    "default_encodings",
    "default_rope_head_dim",
    "rope_heads",
    "stationarity",
    "with_baselines",
]


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_ENCODINGS":  # the registry read when used, not a snapshot at import
        return default_encodings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ComparisonResult = GeometryResult  # the old name of the one result type


# ----------------------------------------------------------------------------- main entry
@takes_geometry_config(
    exclude=("n_components", "solver", "refine", "smooth_positions"),
    names={"families": "encodings"},
)
def compare_encodings(
    counts_or_distributions: Any,
    *,
    extra_encodings: Mapping[str, Any] | None = None,
    config: GeometryConfig,
) -> GeometryResult:
    """Score every encoding against the Hellinger geometry of a corpus.

    Parameters
    ----------
    counts_or_distributions : :class:`~posgeom.corpus.counting.PositionCounts`, an ``(n, V)``
        count matrix (sparse or dense), exact ``(n, V)`` probabilities (rows summing to 1), or
        :class:`~posgeom.geometry.distributions.PositionalDistributions` (dense copy: small only).
    model_dim : width ``d`` of the fixed encodings and of the MDS encoding (BERT-base: 768).
    encodings : names from :func:`default_encodings` (default: all; ``"learned"`` only when
        ``learned_model`` is given). See the module docstring for each.
    extra_encodings : more encodings ``name -> (n, d) vectors | (n, n) distances | encoding`` of the
        kept positions, scored as they are.
    learned_model : a Hugging Face model folder/name (offline) or a loaded model for ``"learned"``.
    n_heads, rope_head_dim, rope_base : ALiBi heads and the RoPE layout (see the module docstring).
    low_rank : rank of the ``low_rank_mds`` row; max_rank : ``R`` of the rank experiment.
    convention, smoothing, alpha, min_samples, below_min, noise, noise_repeats, seed : as in
        :func:`posgeom.analysis.pipeline.analyze_counts`; ``noise`` is skipped for non-integer input.
    estimator, estimator_options : the target ``D`` (a name or a ready
        :class:`~posgeom.estimators.GeometryEstimate`, see :func:`posgeom.estimate_geometry`; default
        the recommended estimator, the plug-in for exact distributions); every row also has the
        plug-in scores ``plugin_paper`` and ``plugin_scale_optimal``.
    resolution : the token classes of the target (default ``"auto"``: the finest the samples
        per position support; ``"full"``, ``"top:K"``, ``"top:K+bands:B"``, ``"bins:B"``;
        :mod:`posgeom.estimators.resolution`). The intervals' replicates use the same classes.

    Returns
    -------
    ComparisonResult
    """
    warnings.warn(
        "compare_encodings is deprecated and goes in the next release; use posgeom.analyze("
        "counts, GeometryConfig(families=...), encodings=extra_encodings, kind='compare') (the "
        "same numbers)",
        PosgeomDeprecationWarning,
        stacklevel=3,  # the caller's line (this body runs inside takes_geometry_config's wrapper)
    )
    check_int(config.model_dim, "model_dim", 2)
    return analyze(counts_or_distributions, config, encodings=extra_encodings, kind="compare")
