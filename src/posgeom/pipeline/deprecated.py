"""The deprecated entries of the main job (one release): :func:`analyze_counts` and
:func:`compare_encodings`, thin wrappers of :func:`posgeom.pipeline.job.analyze` that warn at each
call (a :class:`~posgeom._errors.PosgeomDeprecationWarning` pointing at the caller's line), and
the old names ``PipelineResult`` and ``ComparisonResult`` of
:class:`~posgeom.pipeline.result.GeometryResult`. ``posgeom.analyze_counts``,
``posgeom.compare_encodings`` and the deprecated modules ``posgeom.analysis.pipeline`` and
``posgeom.analysis.compare`` give these (the modules warn when imported).

:func:`analyze_counts` is ``analyze(counts, config)`` scoring the MDS encoding (``"mds"``, and
``"mds+smacof"`` when ``refine``) and the given ``encodings``, with a rank curve of
``max_rank = 8`` and no bootstrap intervals.

:func:`compare_encodings` is ``analyze(counts, config, kind="compare")``: every encoding against
the corpus's Hellinger geometry (positional distributions, Hellinger distances ``D``, the MDS
encoding, its SMACOF refinement, the noise floor), each scored against ``D`` by
:func:`posgeom.pipeline.scale.score_encoding`:

* paper stress ``sum_{i<j} (delta_ij - D_ij)^2 / sum_{i<j} D_ij^2`` (no rescaling), Kruskal
  stress-1, scale-optimal stress (the encoding rescaled by ``alpha* = sum delta D / sum delta^2``),
  the monotonicity violation rate over triples and the separation margin ``min_{i != j} delta_ij``;
* the rank experiment: the rank-``r`` MDS encoding for ``r = 1 .. R`` with its scores and its
  parameter count ``r (n + d)`` against ``n d``;
* :func:`~posgeom.pipeline.stationarity.stationarity`: how much of ``D`` is a function of ``|i - j|`` alone.

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
from posgeom.pipeline.config import (
    BASELINES,
    GeometryConfig,
    config_fields,
    takes_geometry_config,
)
from posgeom.pipeline.job import analyze
from posgeom.pipeline.result import GeometryResult
from posgeom.pipeline.rows import MDS_ROWS

__all__ = ["ComparisonResult", "PipelineResult", "analyze_counts", "compare_encodings"]

PipelineResult = GeometryResult  # the old name of the one result type (analyze_counts')
ComparisonResult = GeometryResult  # the old name of the one result type (compare_encodings')
BASELINE_FIELDS = tuple(f.name for f in config_fields(BASELINES))


@takes_geometry_config(exclude=BASELINE_FIELDS, defaults={"max_rank": 8, "intervals": False})
def analyze_counts(
    counts: Any,
    *,
    encodings: Mapping[str, Any] | None = None,
    config: GeometryConfig,
) -> GeometryResult:
    """Deprecated: ``posgeom.analyze(counts, config, encodings=encodings)`` with the MDS rows
    only (``families=("mds", "mds+smacof")``), ``max_rank`` 8 and no bootstrap intervals
    (module docstring).

    The keyword options are the fields of :class:`~posgeom.pipeline.config.GeometryConfig`
    (every group but ``baselines``). ``encodings`` maps names to encodings (vectors, distance
    matrices or posgeom encodings) of the kept positions.
    """
    warnings.warn(
        "analyze_counts is deprecated and goes in the next release; use posgeom.analyze(counts, "
        "GeometryConfig(...)) (the same numbers, with the baselines' rows)",
        PosgeomDeprecationWarning,
        stacklevel=3,  # the caller's line (this body runs inside takes_geometry_config's wrapper)
    )
    return analyze(counts, config.replace(families=MDS_ROWS), encodings=encodings, kind="run")


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
    encodings : names from :func:`~posgeom.pipeline.config.default_encodings` (default: all; ``"learned"`` only when
        ``learned_model`` is given). See the module docstring for each.
    extra_encodings : more encodings ``name -> (n, d) vectors | (n, n) distances | encoding`` of the
        kept positions, scored as they are.
    learned_model : a Hugging Face model folder/name (offline) or a loaded model for ``"learned"``.
    n_heads, rope_head_dim, rope_base : ALiBi heads and the RoPE layout (see the module docstring).
    low_rank : rank of the ``low_rank_mds`` row; max_rank : ``R`` of the rank experiment.
    convention, smoothing, alpha, min_samples, below_min, noise, noise_repeats, seed : as in
        :func:`analyze_counts`; ``noise`` is skipped for non-integer input.
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
