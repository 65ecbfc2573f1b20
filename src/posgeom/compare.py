"""The comparison table for one corpus: every encoding against the corpus's Hellinger geometry.

:func:`compare_encodings` runs the pipeline (:func:`posgeom.pipeline.analyze_counts`: positional
distributions, Hellinger distances ``D``, the MDS encoding, its SMACOF refinement, the noise floor)
and scores every encoding with :func:`posgeom.pipeline.score_encoding` against ``D``:

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
                :attr:`ComparisonResult.alibi_heads`.
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

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom._version import __version__
from posgeom.artifacts import json_default
from posgeom.embed._inputs import check_distance_matrix
from posgeom.encodings import default_rope_head_dim, families, family, rope_heads
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._registry import ComparisonContext, Family
from posgeom.estimators._pipeline import PLUGIN_COLUMNS, plugin_scores
from posgeom.pipeline import DEFAULT_MODEL_DIM
from posgeom.reports.markdown import markdown_table, rank_table, score_table
from posgeom.reports.schema import ALIBI_HEAD_COLUMNS

__all__ = [
    "DEFAULT_ENCODINGS",
    "ComparisonResult",
    "StationarityResult",
    "comparable_encodings",
    "compare_encodings",
    "comparison_rows",
    "default_rope_head_dim",
    "rope_heads",
    "stationarity",
    "with_baselines",
]

log = logging.getLogger("posgeom")

#: The default comparison: every registered family with ``in_comparison``, in registry order.
DEFAULT_ENCODINGS: tuple[str, ...] = tuple(
    name for name, fam in families().items() if fam.in_comparison
)


# ----------------------------------------------------------------------------- stationarity
@dataclass(frozen=True, eq=False)
class StationarityResult:
    """How much of a distance matrix is explained by a function of ``|i - j|`` alone.

    Over pairs ``i < j`` (each pair weighted equally), with ``k = |i - j|``:

    * ``diagonal_mean[k-1] = mean_{|i-j|=k} D_ij`` (``k = 1 .. n-1``): the best Toeplitz
      approximation ``T_ij = diagonal_mean[|i-j| - 1]`` in the least-squares sense;
    * ``toeplitz_r2 = 1 - sum (D - T)^2 / sum (D - mean D)^2``;
    * ``monotone_fit``: the best *non-decreasing* function of ``k`` (weighted isotonic regression of
      ``diagonal_mean`` with weights ``n - k``, equal to isotonic regression over all pairs), and
      ``monotone_r2`` its R^2 (``<= toeplitz_r2``). ALiBi (``m |i-j|``) and RoPE/sinusoidal
      geometries are functions of ``|i - j|``, so these bound how well they can fit.
    * ``diagonal_std[k-1]``: spread of ``D`` along diagonal ``k`` (0 for an exact Toeplitz matrix).

    When every ``D_ij`` (``i < j``) is equal the denominator is zero; both R^2 are then 1.
    """

    toeplitz_r2: float
    monotone_r2: float
    diagonal_mean: np.ndarray
    diagonal_std: np.ndarray
    monotone_fit: np.ndarray
    n_positions: int

    def toeplitz(self) -> np.ndarray:
        """The best Toeplitz approximation ``T`` (``(n, n)``, zero diagonal)."""
        idx = np.arange(self.n_positions)
        gap = np.abs(idx[:, None] - idx[None, :])
        return np.concatenate([[0.0], self.diagonal_mean])[gap]

    def summary(self) -> dict[str, Any]:
        return {
            "toeplitz_r2": self.toeplitz_r2,
            "monotone_r2": self.monotone_r2,
            "n_positions": self.n_positions,
            "definition": "R^2 over pairs i<j of D_ij against the mean of D on its diagonal "
            "|i-j| (best Toeplitz approximation) and against the best non-decreasing function of "
            "|i-j| (weighted isotonic regression)",
            "diagonal_mean": self.diagonal_mean.tolist(),
            "diagonal_std": self.diagonal_std.tolist(),
            "monotone_fit": self.monotone_fit.tolist(),
        }


def _r2(residual: float, total: float) -> float:
    if total <= 0:
        return 1.0 if residual <= 1e-30 else 0.0
    return float(1.0 - residual / total)


def stationarity(distances: Any) -> StationarityResult:
    """Stationarity diagnostic of an ``(n, n)`` distance matrix (see :class:`StationarityResult`).

    ``distances``: a symmetric non-negative matrix with a zero diagonal, or any object with a
    ``.distances()`` method. Needs ``n >= 3``.
    """
    from scipy.optimize import isotonic_regression

    if hasattr(distances, "distances") and callable(distances.distances):
        distances = distances.distances()
    d = check_distance_matrix(distances, "distances")
    n = d.shape[0]
    if n < 3:
        raise PosgeomError(f"stationarity needs at least 3 positions, got {n}")
    i, j = np.triu_indices(n, 1)
    vals = d[i, j]
    k = j - i
    weights = np.bincount(k, minlength=n)[1:].astype(np.float64)  # n - k pairs on diagonal k
    sums = np.bincount(k, weights=vals, minlength=n)[1:]
    sq = np.bincount(k, weights=vals**2, minlength=n)[1:]
    mean = sums / weights
    std = np.sqrt(np.clip(sq / weights - mean**2, 0.0, None))
    total = float(np.sum((vals - vals.mean()) ** 2))
    res_t = float(np.sum((vals - mean[k - 1]) ** 2))
    mono = isotonic_regression(mean, weights=weights, increasing=True).x
    res_m = float(np.sum((vals - mono[k - 1]) ** 2))
    return StationarityResult(
        toeplitz_r2=_r2(res_t, total),
        monotone_r2=_r2(res_m, total),
        diagonal_mean=mean,
        diagonal_std=std,
        monotone_fit=np.asarray(mono, dtype=np.float64),
        n_positions=n,
    )


# ----------------------------------------------------------------------------- encodings
def comparable_encodings() -> tuple[str, ...]:
    """Names :func:`compare_encodings` accepts: every family with a comparison row."""
    return tuple(
        name
        for name, fam in families().items()
        if type(fam).comparison is not Family.comparison
        or type(fam).default_encoding is not Family.default_encoding
    )


def _restrict(enc: Any, positions: np.ndarray) -> PositionEncoding:
    """``enc`` (built for positions ``0 .. N-1``) restricted to ``positions``."""
    if getattr(enc, "vectors", None) is not None and getattr(enc, "distance_matrix", None) is None:
        return PositionEncoding(enc.name, enc.vectors[positions], enc.params)
    dist = enc.distances()[np.ix_(positions, positions)]
    vec = None if enc.vectors is None else enc.vectors[positions]
    return PositionEncoding(enc.name, vec, enc.params, dist)


def _is_integer_counts(data: Any) -> bool:
    import scipy.sparse as sp

    matrix = getattr(data, "counts", data)
    values = matrix.data if sp.issparse(matrix) else np.asarray(matrix)
    if values.dtype.kind in "iu":
        return True
    return bool(values.size and np.all(values == np.round(values)) and values.max() > 1)


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """Everything :func:`compare_encodings` computed.

    Attributes
    ----------
    table : one dict per encoding: ``encoding``, ``description``, ``paper``, ``stress1``,
        ``scale_optimal``, ``scale`` (``alpha*``), ``raw``, ``violation_rate``, ``violation_ci``,
        ``violation_exact``, ``separation``, ``parameters`` (stored parameters: ``n d`` for a
        table, ``r (n + d)`` for low rank, 0 for fixed formulas).
    alibi_heads : the same scores for every ALiBi head, with its ``head`` and ``slope``.
    rank_curve : per rank ``r = 1 .. R``: ``rank``, ``paper``, ``stress1``, ``scale_optimal``,
        ``violation_rate``, ``parameters = r (n + d)``, ``full_parameters = n d``,
        ``parameter_reduction = 1 - r (n + d) / (n d)``, ``explained_variance``.
    stationarity : :class:`StationarityResult` of the Hellinger distances.
    pipeline : the :class:`~posgeom.pipeline.PipelineResult` (distributions, ``D``, MDS, noise).
    options : every option.
    """

    table: list[dict[str, Any]]
    alibi_heads: list[dict[str, Any]]
    rank_curve: list[dict[str, Any]]
    stationarity: StationarityResult
    pipeline: Any
    options: dict[str, Any] = field(default_factory=dict)
    shepard: dict[str, np.ndarray] = field(default_factory=dict)
    uncertainty: dict[str, Any] | None = None

    report_kind = "compare"
    report_title = "comparison"

    def _repr_html_(self) -> str:
        from posgeom.reports import repr_html

        return repr_html(self)

    @property
    def distances(self) -> np.ndarray:
        """The target Hellinger distances ``(n, n)``."""
        return self.pipeline.distances

    def row(self, name: str) -> dict[str, Any]:
        """The table row of encoding ``name``."""
        for r in self.table:
            if r["encoding"] == name:
                return r
        have = [r["encoding"] for r in self.table]
        raise KeyError(f"no encoding {name!r} in the table; have {have}")

    def summary(self) -> dict[str, Any]:
        """The JSON form: conventions, options, geometry summary, table, heads, rank curve."""
        geom = self.pipeline.summary()
        geom.pop("scores", None)
        geom.pop("rank_curve", None)
        return {
            "posgeom_version": __version__,
            "kind": "posgeom_comparison",
            "options": self.options,
            "geometry": geom,
            "table": self.table,
            "alibi_heads": self.alibi_heads,
            "rank_curve": self.rank_curve,
            "stationarity": self.stationarity.summary(),
            **({"uncertainty": self.uncertainty} if self.uncertainty else {}),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`summary` as JSON text."""
        return json.dumps(
            _finite(self.summary()), indent=indent, default=json_default, allow_nan=False
        )

    def _beside(self) -> list[dict[str, Any]]:
        """Rows of the plug-in scores (``plugin_paper``, ``plugin_scale_optimal``), if any."""
        beside = getattr(self.pipeline, "plugin_scores", {})
        rows = []
        for r in self.table:
            if "plugin_paper" in r:
                rows.append(
                    {
                        "encoding": r["encoding"],
                        "paper": r["plugin_paper"],
                        "scale_optimal": r["plugin_scale_optimal"],
                    }
                )
            elif r["encoding"] in beside:  # rows taken from the pipeline (mds, mds+smacof)
                rows.append({"encoding": r["encoding"], **beside[r["encoding"]]})
        return rows

    def to_markdown(self) -> str:
        """The table, the ALiBi heads, the rank experiment and the stationarity diagnostic."""
        o = self.options
        d = self.pipeline.distributions
        lines = [
            f"n = {o['n_positions']} positions, d = {o['model_dim']}, Hellinger convention: "
            f"{o['convention']} (paper stress = sum (delta - D)^2 / sum D^2 over i < j, no "
            "rescaling; scale-optimal stress after the best rescaling alpha*).",
            f"Target D: estimator {o.get('estimator', 'plugin')} (posgeom.estimate_geometry)"
            + ("; the plug-in (the paper's) is shown beside it." if self._beside() else "."),
        ]
        if np.all(np.isfinite(d.totals)) and self.options.get("input") == "counts":
            lines.append(
                f"Samples per position: min {np.min(d.totals):.6g}, median "
                f"{np.median(d.totals):.6g}."
            )
        else:
            lines.append("Input: distributions (no sampling noise).")
        nf = self.pipeline.noise
        if nf is not None:
            iu = np.triu_indices_from(nf.pair_floor, 1)
            lines.append(
                f"Noise floor ({nf.method}): median pair floor {np.median(nf.pair_floor[iu]):.3g} "
                f"vs median D {np.median(self.distances[iu]):.3g}; "
                f"{100 * nf.trusted()[iu].mean():.1f}% of pairs above twice their floor."
            )
        lines += ["", *score_table(self.table)]
        if self._beside():
            lines += ["", "Against the plug-in geometry (the paper's estimator):", ""]
            lines += markdown_table(self._beside(), PLUGIN_COLUMNS)
        if self.alibi_heads:
            lines += ["", "ALiBi, every head (rank-1 geometry m |i - j|):", ""]
            lines += markdown_table(self.alibi_heads, ALIBI_HEAD_COLUMNS)
        if self.rank_curve:
            lines += ["", "Rank experiment (rank-r MDS encoding P = A B^T):", ""]
            lines += rank_table(self.rank_curve)
        s = self.stationarity
        lines += [
            "",
            f"Stationarity: R^2 of D against the best function of |i - j| (Toeplitz) = "
            f"{s.toeplitz_r2:.4f}; against the best non-decreasing function of |i - j| = "
            f"{s.monotone_r2:.4f}.",
        ]
        return "\n".join(lines) + "\n"

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of ``arrays.npz`` (what the report draws)."""
        p = self.pipeline
        arrays = {
            "positions": p.distributions.positions,
            "totals": p.distributions.totals,
            "hellinger": p.distances,
            "mds_coordinates": p.mds.coordinates,
            "eigenvalues": p.mds.eigenvalues,
            "toeplitz": self.stationarity.toeplitz(),
            "diagonal_mean": self.stationarity.diagonal_mean,
            "monotone_fit": self.stationarity.monotone_fit,
            "rank": np.array([c["rank"] for c in self.rank_curve], dtype=np.int64),
            "rank_paper_stress": np.array([c["paper"] for c in self.rank_curve]),
        }
        if p.noise is not None:
            arrays["noise_pair_floor"] = p.noise.pair_floor
        if getattr(p, "plugin_distances", None) is not None:  # the plug-in D beside the estimate
            arrays["plugin_hellinger"] = p.plugin_distances
        if self.shepard and p.shepard_pairs is not None:
            arrays["shepard_pairs"] = p.shepard_pairs
            arrays.update({f"shepard_{k}": v for k, v in self.shepard.items()})
        return arrays

    def write(self, directory: str | os.PathLike) -> Path:
        """Write ``comparison.json``, ``comparison.md`` and ``arrays.npz`` (+ JSON sidecar) into
        an existing folder (each file atomic; :meth:`save` makes the whole folder atomic)."""
        from posgeom.artifacts import atomic_write_text, save_artifact

        out = Path(directory)
        atomic_write_text(out / "comparison.json", self.to_json() + "\n")
        atomic_write_text(out / "comparison.md", self.to_markdown())
        save_artifact(
            out / "arrays.npz",
            self.report_arrays(),
            {"options": self.options},
            kind="comparison_results",
        )
        return out

    def save(
        self, directory: str | os.PathLike, *, overwrite: bool = False, report: bool = False
    ) -> Path:
        """A new results folder with the files of :meth:`write` (and ``report.html`` when
        ``report``), atomically (:func:`posgeom.reports.results_folder`)."""
        from posgeom.reports import results_folder

        with results_folder(directory, overwrite=overwrite, with_report=report) as tmp:
            self.write(tmp)
        return Path(directory)


def _finite(obj: Any) -> Any:
    """Replace non-finite floats (stress-1 of NoPE is inf) by None, recursively: strict JSON."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)) and not np.isfinite(obj):
        return None
    if isinstance(obj, np.ndarray):
        return _finite(obj.tolist())
    return obj


def _scored_as(
    scores: dict[str, Any], seen: list[tuple[dict[str, Any], np.ndarray, Any]]
) -> tuple[np.ndarray, Any] | None:
    """(Shepard distances, encoding) of the encoding whose scores a family reported (for ALiBi:
    its best head among those scored); None for rows scored elsewhere (the pipeline's MDS)."""
    for s, delta, enc in seen:
        if s.get("paper") == scores.get("paper") and s.get("stress1") == scores.get("stress1"):
            return delta, enc
    return None


def _scores(enc: Any, target: np.ndarray, seed: int) -> dict[str, Any]:
    from posgeom.pipeline import score_encoding

    return score_encoding(enc, target, seed=seed)


# ----------------------------------------------------------------------------- main entry
def compare_encodings(
    counts_or_distributions: Any,
    *,
    model_dim: int = DEFAULT_MODEL_DIM,
    encodings: Sequence[str] | None = None,
    extra_encodings: Mapping[str, Any] | None = None,
    learned_model: Any = None,
    n_heads: int = 12,
    rope_head_dim: int | None = None,
    rope_base: float = 10000.0,
    low_rank: int = 3,
    max_rank: int = 16,
    convention: str = "chord",
    smoothing: str = "none",
    alpha: float = 1.0,
    min_samples: int = 1,
    below_min: str = "flag",
    noise: str | None = "split_half",
    noise_repeats: int = 5,
    seed: int = 0,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
) -> ComparisonResult:
    """Score every encoding against the Hellinger geometry of a corpus.

    Parameters
    ----------
    counts_or_distributions : :class:`~posgeom.corpus.counting.PositionCounts`, an ``(n, V)``
        count matrix (sparse or dense), exact ``(n, V)`` probabilities (rows summing to 1), or
        :class:`~posgeom.geometry.distributions.PositionalDistributions` (dense copy: small only).
    model_dim : width ``d`` of the fixed encodings and of the MDS encoding (BERT-base: 768).
    encodings : names from :data:`DEFAULT_ENCODINGS` (default: all; ``"learned"`` only when
        ``learned_model`` is given). See the module docstring for each.
    extra_encodings : more encodings ``name -> (n, d) vectors | (n, n) distances | encoding`` of the
        kept positions, scored as they are.
    learned_model : a Hugging Face model folder/name (offline) or a loaded model for ``"learned"``.
    n_heads, rope_head_dim, rope_base : ALiBi heads and the RoPE layout (see the module docstring).
    low_rank : rank of the ``low_rank_mds`` row; max_rank : ``R`` of the rank experiment.
    convention, smoothing, alpha, min_samples, below_min, noise, noise_repeats, seed : as in
        :func:`posgeom.pipeline.analyze_counts`; ``noise`` is skipped for non-integer input.
    estimator, estimator_options : the target ``D`` (a name or a ready
        :class:`~posgeom.estimators.GeometryEstimate`, see :func:`posgeom.estimate_geometry`; default
        the recommended estimator, the plug-in for exact distributions); every row also has the
        plug-in scores ``plugin_paper`` and ``plugin_scale_optimal``.

    Returns
    -------
    ComparisonResult
    """
    from posgeom.geometry.distributions import PositionalDistributions
    from posgeom.pipeline import analyze_counts, rank_curve

    names = list(DEFAULT_ENCODINGS if encodings is None else encodings)
    unknown = [x for x in names if x not in comparable_encodings()]
    if unknown:
        raise PosgeomError(
            f"unknown encodings {unknown}; choose from {', '.join(comparable_encodings())}"
        )
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
    use_noise = noise if (noise and _is_integer_counts(data)) else None

    log.info("geometry and MDS encoding (d = %d)", model_dim)
    res = analyze_counts(
        data,
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
    )
    target = res.distances
    n = target.shape[0]
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
    )
    from posgeom.compare_intervals import attach_intervals

    uncertainty = attach_intervals(
        data, table, built, model_dim=int(model_dim), low_rank=int(low_rank), seed=seed
    )
    curve = rank_curve(res.mds, target, max_rank=max_rank, seed=seed)
    options = {
        "n_positions": n,
        "input": "counts" if _is_integer_counts(data) else "distributions",
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
        **{k: v for k, v in res.options.items() if k not in ("model_dim",)},
    }
    return ComparisonResult(
        table=table,
        alibi_heads=heads,
        rank_curve=curve,
        stationarity=stationarity(target),
        pipeline=res,
        options=options,
        shepard=shepard,
        uncertainty=uncertainty,
    )


def comparison_rows(
    res: Any,
    names: Sequence[str],
    *,
    n_heads: int = 12,
    rope_head_dim: int | None = None,
    rope_base: float = 10000.0,
    low_rank: int = 3,
    learned_model: Any = None,
    extra_encodings: Mapping[str, Any] | None = None,
    seed: int = 0,
    skip_unbuildable: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, np.ndarray], dict[str, Any]]:
    """The comparison rows of ``names`` (registry families) and of ``extra_encodings`` against the
    geometry of a :class:`~posgeom.pipeline.PipelineResult` ``res``.

    Returns ``(table, heads, shepard)``: one score row per encoding (with ``description`` and
    ``parameters``), the per-head rows of head families (ALiBi), and each encoding's distances at
    ``res.shepard_pairs``; the fourth element maps names to the encodings built. Encodings are built for positions ``0 .. max(kept)`` and restricted to
    the kept positions. With ``skip_unbuildable`` a family that cannot be built with these
    settings (e.g. sinusoidal at an odd width) is left out with a warning instead of raising.
    """
    from posgeom.pipeline import pair_distances

    model_dim = res.mds.model_dim
    rope_hd = default_rope_head_dim(model_dim, n_heads) if rope_head_dim is None else rope_head_dim
    target = res.distances
    positions = np.asarray(res.distributions.positions, dtype=np.int64)
    n = target.shape[0]
    seen: list[tuple[dict[str, Any], np.ndarray, Any]] = []  # (scores, Shepard deltas, encoding)

    def scored(enc: Any) -> dict[str, Any]:
        s = _scores(enc, target, seed)
        if getattr(res, "plugin_distances", None) is not None:  # the paper's target, beside
            p = plugin_scores({"": enc}, res.plugin_distances)[""]
            s |= {"plugin_paper": p["paper"], "plugin_scale_optimal": p["scale_optimal"]}
        seen.append((s, pair_distances(enc, res.shepard_pairs), enc))
        return s

    ctx = ComparisonContext(
        n_positions=int(positions.max()) + 1,
        n_kept=n,
        model_dim=int(model_dim),
        n_heads=int(n_heads),
        rope_head_dim=int(rope_hd),
        rope_base=float(rope_base),
        seed=seed,
        score=lambda enc: scored(_restrict(enc, positions)),
        score_kept=scored,
        pipeline=res,
        learned_model=learned_model,
        low_rank=int(low_rank),
    )

    table: list[dict[str, Any]] = []
    heads: list[dict[str, Any]] = []
    shepard: dict[str, np.ndarray] = {}
    built: dict[str, Any] = {}
    for name in names:
        log.info("scoring %s", name)
        seen.clear()
        try:
            entry = family(name).comparison(ctx)
        except PosgeomError as exc:
            if not skip_unbuildable:
                raise
            log.warning("%s skipped: %s", name, str(exc).splitlines()[0])
            continue
        if entry is None:
            log.warning("%s skipped: %s", name, family(name).skip_reason)
            continue
        match = _scored_as(entry.scores, seen)
        if match is not None:
            shepard[name], built[name] = match
        elif name in res.shepard:
            shepard[name] = res.shepard[name]
        table.append(
            {
                "encoding": name,
                "description": entry.description,
                "parameters": int(entry.parameters),
                **entry.scores,
            }
        )
        heads.extend(entry.heads)
    for name, enc in (extra_encodings or {}).items():
        table.append(
            {"encoding": str(name), "description": "user encoding", "parameters": 0} | scored(enc)
        )
        shepard[str(name)], built[str(name)] = seen[-1][1:]

    return table, heads, shepard, built


def with_baselines(
    result: Any,
    *,
    encodings: Sequence[str] | None = None,
    n_heads: int = 12,
    rope_head_dim: int | None = None,
    low_rank: int = 3,
    learned_model: Any = None,
) -> Any:
    """``result`` (a :class:`~posgeom.pipeline.PipelineResult`) scoring the comparison's
    encodings too: the rows of :data:`DEFAULT_ENCODINGS` (sinusoidal, per-head RoPE, ALiBi, T5,
    NoPE, random, MDS, low-rank MDS, MDS + SMACOF when refined; ``learned`` with
    ``learned_model``) in the comparison's order, then the encodings ``result`` already scored.
    This is what ``posgeom run``, ``geometry`` and ``demo`` report."""
    import dataclasses

    names = [
        x
        for x in (DEFAULT_ENCODINGS if encodings is None else encodings)
        if (family(x).comparison_needs is None or learned_model is not None)
        and (x != "mds+smacof" or result.refined is not None)
    ]
    table, heads, shepard, _ = comparison_rows(
        result,
        names,
        n_heads=n_heads,
        rope_head_dim=rope_head_dim,
        low_rank=low_rank,
        learned_model=learned_model,
        seed=int(result.options.get("seed", 0)),
        skip_unbuildable=True,
    )
    scores = {row["encoding"]: {k: v for k, v in row.items() if k != "encoding"} for row in table}
    scores.update({k: v for k, v in result.scores.items() if k not in scores})
    beside = {  # the plug-in scores of the rows, shown beside a non-plug-in estimate
        r["encoding"]: {"paper": r["plugin_paper"], "scale_optimal": r["plugin_scale_optimal"]}
        for r in table
        if "plugin_paper" in r
    }
    return dataclasses.replace(
        result,
        scores=scores,
        alibi_heads=heads,
        shepard={**result.shepard, **shepard},
        plugin_scores={**beside, **result.plugin_scores},
    )
