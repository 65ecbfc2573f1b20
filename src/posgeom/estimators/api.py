"""``estimate_geometry``: counts in, an estimate of the corpus's positional geometry out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import SEED, check_param
from posgeom.corpus.token_names import token_names as names_of
from posgeom.estimators._core import (
    DENSE_MAX_N,
    DENSE_ONLY_MAX_N,
    GeometryEstimate,
    as_count_matrix,
    check_samples,
    finish,
    get,
)
from posgeom.estimators.class_words import describe_classes
from posgeom.estimators.euclidean import (
    EUCLIDEAN_RANK,
    euclidean_form,
    pairs_above,
    spectrum_keys,
)
from posgeom.estimators.resolution import resolution_reference
from posgeom.estimators.smoothing import (
    check_smooth,
    choose_slope,
    position_smoother,
    smoothed_gram,
    smoothed_null_edge,
)
from posgeom.estimators.transforms import (
    coarsen_counts,
    equal_sample_counts,
    pool_counts,
    pool_edges,
)
from posgeom.geometry.divergences import _mirror_upper
from posgeom.geometry.gram import FactoredGram, double_centre_inplace

__all__ = ["estimate_geometry"]


def estimate_geometry(
    counts: Any,
    *,
    estimator: str = "recommended",
    convention: str = "chord",
    seed: int = 0,
    resolution: Any = "auto",
    coarsen: Any = None,
    pool: Any = None,
    equal_samples: Any = None,
    dense: bool | None = None,
    euclidean: bool | str = True,
    euclidean_rank: int = EUCLIDEAN_RANK,
    smooth: Any = None,
    token_names: Any = None,
    **options: Any,
) -> GeometryEstimate:
    """Estimate the Hellinger geometry of the positional distributions behind ``counts``.

    Parameters
    ----------
    counts : PositionCounts, or an ``(n, V)`` scipy sparse / dense matrix of non-negative integers.
    estimator : a name from :func:`posgeom.estimators.available`, or ``"recommended"`` (the
        default measured on the target regime: ``"corrected"``).
    convention : ``"chord"`` (``||sqrt p_i - sqrt p_j||``, ``[0, sqrt 2]``) or ``"normalized"``.
    seed : seed for every random step (splits, resampling); same seed, same result.
    resolution : the token classes (:mod:`posgeom.estimators.resolution`): ``"auto"``
        (default; the plug-in stays on ``"full"``), ``"full"``, ``"top:K"``, ``"top:K+bands:B"``,
        ``"bins:B"``, an int ``K`` or a token -> class map (e.g. another estimate's ``class_map``).
    coarsen : the former name of ``resolution`` (either may be given, not two different ones).
    pool : position pooling (a width, ``"log:B"``, or bucket start positions).
    equal_samples : downsample every position (bucket) to ``m`` samples, or ``"min"``.
    dense : build the ``(m, m)`` distance matrix (default: when ``m <= DENSE_MAX_N`` = 8192);
        without it MDS and scores use the factored Gram (:meth:`GeometryEstimate.blocks`).
        Estimators without a factored form always build it, and are refused above
        ``DENSE_ONLY_MAX_N`` positions.
    euclidean : ``True`` / ``"noise_edge"`` (default): the eigen-directions of the estimate's
        Gram ``B~`` above its noise edge (at most ``euclidean_rank``); ``"psd"``: every positive
        direction; ``False``: the raw squared chords clipped to ``[0, 2]``
        (:mod:`posgeom.estimators.euclidean`).
    euclidean_rank : ``K``, the Euclidean estimate's largest dimension (default 256).
    smooth : None (default), ``"auto"`` or a slope ``a >= 0``: the Euclidean estimate of the
        roots smoothed over positions with a local-linear kernel of bandwidth ``h_i = a i``
        (``"auto"``: ``a`` by split-half cross-validation; :mod:`posgeom.estimators.smoothing`,
        ``diagnostics["smoothing"]``). Up to 512 positions; not with ``pool``, the plug-in or
        ``euclidean=False``.
    token_names : token id -> text (a mapping or a function) for ``.classes``; default: the
        tokenizer a ``PositionCounts`` records (:func:`posgeom.corpus.token_names.token_names`).
    **options : passed to the estimator (e.g. ``n_repeats`` for ``"split_half"``).

    Order: classes (resolution), pool, resample, estimate (:mod:`posgeom.estimators.transforms`).

    Returns
    -------
    GeometryEstimate
        ``.distances`` ``(m, m)`` with ``m = n`` (or the number of buckets); ``.estimator`` the
        name used; ``.resolution`` (its label, e.g. ``"top:300"``) and ``.class_map``;
        ``.positions``; ``.totals``; ``.diagnostics``.
    """
    spec = get(estimator)
    seed = check_param("seed", seed, [SEED])  # seed='1': numpy's SeedSequence TypeError before
    if token_names is None:
        token_names = names_of(getattr(counts, "tokenizer", None))
    c = as_count_matrix(counts)
    rng = np.random.default_rng(seed)
    info: dict[str, Any] = {"seed": int(seed), **options}
    wanted = _resolution_spec(resolution, coarsen)
    if spec.name == "plugin" and isinstance(wanted, str) and wanted == "auto":
        wanted = "full"  # the paper's plug-in: no sampling model, so no rule to coarsen by
    full = c
    c, extra = coarsen_counts(c, wanted)
    if c is not full:  # coarsened: normalised once here, recognised by whoever asks next
        c = as_count_matrix(c)
    class_map, class_counts = extra.pop("class_map"), c
    info.update(extra)
    info["resolution_rule"] = "auto" if isinstance(wanted, str) and wanted == "auto" else "given"
    if info["resolution_rule"] == "auto" and spec.name != "plugin":  # what set the classes
        info.update(resolution_reference(np.asarray(full.sum(axis=1)).ravel()))
    words = describe_classes(class_map, full, label=str(extra["coarsen"]), names=token_names)
    n = c.shape[0]
    positions = np.arange(n, dtype=np.int64)
    if pool is not None:
        positions = pool_edges(pool, n)
        c = pool_counts(c, positions)
        info["pool"] = pool if isinstance(pool, (int, str)) else "edges"
    what = "bucket" if pool is not None else "position"
    if equal_samples is not None:
        check_samples(np.asarray(c.sum(axis=1)).ravel(), 1, what, spec.name)
        c, size = equal_sample_counts(c, equal_samples, rng)
        info["equal_samples"] = size
    totals = np.asarray(c.sum(axis=1)).ravel().astype(np.int64)
    check_samples(totals, spec.min_samples, what, spec.name)
    m = c.shape[0]
    if not spec.factored and m > DENSE_ONLY_MAX_N:
        raise PosgeomError(
            f"estimator {spec.name!r} has no factored form and would need {m}x{m} matrices "
            f"({8 * m * m / 2**30:.0f} GiB each); use estimator='corrected' (factored), or pool "
            "positions (pool=...)"
        )
    if convention not in ("chord", "normalized"):
        raise PosgeomError(f"unknown convention {convention!r}; use 'chord' or 'normalized'")
    result, diagnostics = spec.fn(c, totals.astype(np.float64), rng=rng, **options)
    build = not (dense is False or (dense is None and m > DENSE_MAX_N))
    smoothing = None
    if smooth is not None:
        check_smooth(smooth, n=m, estimator=spec.name, pooled=pool is not None, euclidean=euclidean)
        smoothing = _smoothing(smooth, c, spec, options, convention=convention, seed=seed)
    gram, distances, coords, finishing = _finish_estimate(
        result,
        c,
        convention,
        build=build,
        euclidean=euclidean,
        rank=euclidean_rank,
        seed=seed,
        smooth=smoothing,
    )
    return GeometryEstimate(
        _distances=distances,
        estimator=spec.name,
        positions=positions,
        totals=totals,
        convention=convention,
        pooled=pool is not None,
        vocab_size=int(c.shape[1]),
        resolution=str(extra["coarsen"]),
        classes=words,
        class_map=class_map,
        class_counts=class_counts,
        options=info,
        diagnostics={**diagnostics, **finishing},
        gram=gram,
        coordinates=coords,
    )


def _dense_b(result: Any, scale: float) -> np.ndarray:
    """The estimate's centred Gram ``B~`` as a dense ``(n, n)`` array: ``c J (S S^T - diag(b))
    J`` of a factored result, ``-c/2 J D~^2 J`` of a dense one."""
    if isinstance(result, FactoredGram):
        return replace(result, scale=scale).dense()
    dense_b = np.asarray(result, dtype=np.float64) * (-0.5 * scale)
    _mirror_upper(dense_b)
    np.fill_diagonal(dense_b, 0.0)
    double_centre_inplace(dense_b)
    return dense_b


def _smoothing(
    smooth: Any, c: Any, spec: Any, options: dict[str, Any], *, convention: str, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """``(W, info)``: the smoother of ``smooth`` (a slope, or ``"auto"``: chosen by
    split-half CV on the counts ``c``, :func:`posgeom.estimators.smoothing.choose_slope`)."""
    scale = 1.0 if convention == "chord" else 0.5
    n = c.shape[0]
    if isinstance(smooth, str):

        def gram_of(half: Any) -> np.ndarray:
            totals = np.asarray(half.sum(axis=1), dtype=np.float64).ravel()
            result = spec.fn(half, totals, rng=np.random.default_rng(seed), **options)[0]
            return _dense_b(result, scale)

        slope, info = choose_slope(
            c, gram_of, scale=scale, seed=seed, min_samples=max(spec.min_samples, 1)
        )
    else:
        slope, info = float(smooth), {"chosen_by": "given"}
    w = position_smoother(n, slope)
    return w, {"slope": slope, "bandwidth_at_last": slope * (n - 1), **info}


def _finish_estimate(
    result: Any,
    counts: Any,
    convention: str,
    *,
    build: bool,
    euclidean: bool | str,
    rank: int,
    seed: int,
    smooth: tuple[np.ndarray, dict[str, Any]] | None = None,
) -> tuple[Any, np.ndarray | None, np.ndarray | None, dict[str, Any]]:
    """``(gram, distances, coordinates, diagnostics)`` from an estimator's result: the
    Euclidean estimate (:mod:`posgeom.estimators.euclidean`; of the smoothed Gram ``J W B~ W^T
    J`` with ``smooth = (W, info)``) or, with ``euclidean=False``, the clipped squared chords
    (:func:`posgeom.estimators._core.finish`)."""
    scale = 1.0 if convention == "chord" else 0.5
    gram = replace(result, scale=scale) if isinstance(result, FactoredGram) else None
    if smooth is None and not euclidean:
        if gram is not None and not build:
            return gram, None, None, {"dense": False}
        sq = gram.squared_chords() if gram is not None else np.asarray(result, dtype=np.float64)
        dist, diag = finish(sq, convention)
        return gram, dist, None, diag
    if smooth is None and gram is not None and not np.any(gram.correction):  # Euclidean already
        diag = {"projection": {"rule": "none: exactly Euclidean (b = 0)"}, "dense": build}
        if not build:
            return gram, None, None, diag
        dist, finishing = finish(gram.squared_chords(), convention)
        return gram, dist, None, {**finishing, **diag}
    rule = "noise_edge" if euclidean is True else str(euclidean)
    if smooth is not None:  # the estimate of J W B~ W^T J, its null edge smoothed by the same W
        w, info = smooth
        null = smoothed_null_edge(counts, w, scale, seed) if rule == "noise_edge" else None
        dense_b = smoothed_gram(_dense_b(result, scale), w)
        coords, proj = euclidean_form(dense_b=dense_b, rank=rank, rule=rule, seed=seed, null=null)
        extra = {"smoothing": info}
        clip = f"none: the smoothed Euclidean estimate ({rule}, slope {info['slope']:g})"
    else:
        dense_b = None if gram is not None else _dense_b(result, scale)  # no factored form
        coords, proj = euclidean_form(
            gram, dense_b=dense_b, rank=rank, rule=rule, seed=seed, counts=counts
        )
        extra = {}
        clip = f"none: the Euclidean estimate ({rule}: the top eigenpairs of B~ above tau)"
    coords.setflags(write=False)
    diag: dict[str, Any] = {"projection": proj, "dense": build, **extra, **spectrum_keys(proj)}
    diag["clip_rule"] = clip
    if build:  # the matrix itself is made on first use (GeometryEstimate.distances)
        diag["above_max"] = pairs_above(coords, np.sqrt(2.0 * scale) + 1e-12)
    return gram, None, coords, diag


def _resolution_spec(resolution: Any, coarsen: Any) -> Any:
    """``resolution``, or the older ``coarsen`` when only that one is given."""
    if coarsen is None:
        return resolution
    if isinstance(resolution, str) and resolution == "auto":
        return coarsen
    if resolution is coarsen or (
        isinstance(resolution, (str, int))
        and isinstance(coarsen, (str, int))
        and str(resolution) == str(coarsen)
    ):
        return resolution
    raise PosgeomError(
        f"resolution={resolution!r} and coarsen={coarsen!r} disagree; give only resolution="
    )
