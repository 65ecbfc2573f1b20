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

import logging
import os
from collections.abc import Mapping
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.analysis.compare_result import ComparisonResult, StationarityResult, stationarity
from posgeom.analysis.rows import (
    comparable_encodings,
    comparison_rows,
    default_encodings,
    with_baselines,
)
from posgeom.encodings import default_rope_head_dim, family, rope_heads
from posgeom.pipeline.config import GeometryConfig, takes_geometry_config

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


log = logging.getLogger("posgeom")


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
) -> ComparisonResult:
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
    from posgeom.analysis.pipeline import analyze_counts, rank_curve

    c = config
    model_dim, encodings, learned_model, n_heads = (
        c.model_dim,
        c.families,
        c.learned_model,
        c.n_heads,
    )
    rope_head_dim, rope_base, low_rank, max_rank = (
        c.rope_head_dim,
        c.rope_base,
        c.low_rank,
        c.max_rank,
    )
    convention, smoothing, alpha, min_samples = c.convention, c.smoothing, c.alpha, c.min_samples
    below_min, noise, noise_repeats, seed = c.below_min, c.noise, c.noise_repeats, c.seed
    estimator, estimator_options, resolution = c.estimator, c.estimator_options, c.resolution
    from posgeom.geometry.counts import count_matrix
    from posgeom.geometry.distributions import PositionalDistributions

    names = list(default_encodings() if encodings is None else encodings)
    given = {"learned_model": learned_model}
    for name in list(names):
        need = family(name).comparison_needs
        if need is not None and given.get(need) is None:
            if encodings is not None:
                raise PosgeomError(f"the {name!r} encoding needs {need}=<model folder or name>")
            names.remove(name)
    check_int(model_dim, "model_dim", 2)
    data = counts_or_distributions
    if isinstance(data, PositionalDistributions):
        data = data.probabilities()
    cm = count_matrix(data)  # the comparison's one normalisation (the pipeline reuses it)
    integer = cm.integer  # counts, not probabilities (the one rule: is_count_data)
    use_noise = noise if (noise and integer) else None

    log.info("geometry and MDS encoding (d = %d)", model_dim)
    res = analyze_counts(
        cm,
        model_dim=model_dim,
        smoothing=smoothing,
        alpha=alpha,
        min_samples=min_samples,
        below_min=below_min,
        convention=convention,
        refine=any(family(x).pipeline_options.get("refine") for x in names),
        noise=use_noise,
        noise_repeats=noise_repeats,
        max_rank=0,
        seed=seed,
        estimator=estimator,
        estimator_options=estimator_options,
        resolution=resolution,
    )
    n = res.distributions.n_positions
    rope_hd = default_rope_head_dim(model_dim, n_heads) if rope_head_dim is None else rope_head_dim
    table, heads, shepard, built = comparison_rows(
        res,
        names,
        n_heads=n_heads,
        rope_head_dim=rope_hd,
        rope_base=rope_base,
        low_rank=low_rank,
        learned_model=learned_model,
        extra_encodings=extra_encodings,
        seed=seed,
        keep_encodings=not res.sampled,  # for the intervals; a long context's are not held
    )
    from posgeom.analysis.intervals import attach_intervals

    if res.sampled and getattr(data, "n_replicates", None):
        log.warning(
            "bootstrap intervals skipped: each replicate needs an (n, n) matrix at n = %d; the "
            "rows carry their sampling intervals (<score>_ci)",
            n,
        )
    uncertainty = (
        None
        if res.sampled
        else attach_intervals(
            data,
            table,
            built,
            model_dim=int(model_dim),
            low_rank=int(low_rank),
            estimator=res.options["estimator"],  # the name actually used (a fallback included)
            estimator_options={
                **(res.options.get("estimator_options") or {}),
                **({} if res.estimate is None else {"resolution": res.estimate.class_map}),
            },
            seed=seed,
        )
    )
    curve = rank_curve(res.mds, res.scorer, max_rank=max_rank, seed=seed)
    options = {
        "n_positions": n,
        "input": "counts" if integer else "distributions",
        "model_dim": int(model_dim),
        "encodings": names + list(extra_encodings or {}),
        "n_heads": int(n_heads),
        "rope_head_dim": int(rope_hd),
        "rope_base": float(rope_base),
        "low_rank": int(low_rank),
        "max_rank": int(max_rank),
        "learned_model": None
        if learned_model is None
        else (
            os.fspath(learned_model)
            if isinstance(learned_model, (str, os.PathLike))
            else type(learned_model).__name__
        ),
        **{k: v for k, v in res.options.items() if k not in ("model_dim", "max_rank")},
    }
    return ComparisonResult(
        table=table,
        heads=heads,
        rank_curve=curve,
        stationarity=_stationarity(res, seed),
        pipeline=res,
        options=options,
        shepard=shepard,
        uncertainty=uncertainty,
    )


def _stationarity(res: Any, seed: int) -> StationarityResult:
    """Exact on the pipeline's ``(n, n)`` target, else sampled per lag bin from its blocks
    (a long context: no ``(n, n)`` matrix)."""
    if res.distances is not None:
        return stationarity(res.distances)
    from posgeom.analysis.pipeline_scale import blocks_target
    from posgeom.analysis.stationarity import sampled_stationarity

    target = blocks_target(res.distributions, res.estimate, res.options["convention"])
    return sampled_stationarity(target, seed=seed)
