"""The whole geometry pipeline for one corpus: counts -> distributions -> D -> MDS -> scores.

:func:`analyze_counts` runs every step on a :class:`~posgeom.corpus.counting.PositionCounts` (or
any ``(n, V)`` count matrix) and returns a :class:`PipelineResult`, which writes a results
directory: ``summary.json`` (every number, every option, the conventions), ``arrays.npz`` (+ JSON
sidecar: distances, MDS embedding, eigenvalues, totals, Shepard pairs) and ``table.md``, through
:func:`posgeom.reports.results_folder` (atomic; optionally with ``report.html``). Score rows and
rank-curve rows follow :mod:`posgeom.reports.schema`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._version import __version__
from posgeom.embed.mds import MDSResult, classical_mds
from posgeom.embed.rank import effective_ranks
from posgeom.embed.refine import RefinedEmbedding, smacof_refine
from posgeom.estimators._pipeline import (
    PLUGIN_COLUMNS,
    estimate_mds,
    pipeline_estimate,
    plugin_scores,
)
from posgeom.geometry.distributions import PositionalDistributions, positional_distributions
from posgeom.geometry.divergences import hellinger_distances
from posgeom.geometry.noise import NoiseFloor, noise_floor
from posgeom.reports.markdown import markdown_table, rank_table, score_table
from posgeom.reports.schema import conventions
from posgeom.scores.order import monotonicity_violation_rate, separation_margin
from posgeom.scores.stress import stress_scores

__all__ = [
    "PipelineResult",
    "analyze_counts",
    "pair_distances",
    "rank_curve",
    "score_encoding",
    "score_table",
    "shepard_pairs",
]

log = logging.getLogger("posgeom")
DEFAULT_MODEL_DIM = 768  # BERT-base; the one default width d of every command and entry point
SHEPARD_PAIRS = 1500  # pairs kept per encoding for the Shepard plots of a report


def score_encoding(encoding: Any, target: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Every score of one encoding against the target distances, as a JSON-able dict."""
    s = stress_scores(encoding, target)
    v = monotonicity_violation_rate(encoding, target, seed=seed)
    return {
        **s.as_dict(),
        "violation_rate": v.rate,
        "violation_ci": [float(v.ci_low), float(v.ci_high)],
        "violation_exact": v.exact,
        "separation": separation_margin(encoding),
    }


def rank_curve(
    mds: MDSResult, target: np.ndarray, *, max_rank: int, seed: int = 0
) -> list[dict[str, Any]]:
    """The rank experiment: per ``r = 1 .. min(max_rank, r_MDS)`` the scores of the rank-``r``
    MDS encoding ``P = A B^T`` (rows of :data:`posgeom.reports.schema.RANK_COLUMNS`)."""
    n, d = target.shape[0], mds.model_dim
    curve = []
    for r in range(1, min(max_rank, mds.n_components) + 1):
        s = score_encoding(mds.truncate(r), target, seed=seed)
        curve.append(
            {
                "rank": r,
                "paper": s["paper"],
                "stress1": s["stress1"],
                "scale_optimal": s["scale_optimal"],
                "violation_rate": s["violation_rate"],
                "explained_variance": float(np.sum(mds.explained_variance_ratio[:r])),
                "parameters": r * (n + d),
                "full_parameters": n * d,
                "parameter_reduction": 1.0 - r * (n + d) / (n * d),
            }
        )
    return curve


def shepard_pairs(n: int, *, size: int = SHEPARD_PAIRS, seed: int = 0) -> np.ndarray:
    """``(2, m)`` pairs ``i < j`` for Shepard plots: all of them when there are at most ``size``,
    else ``size`` drawn without replacement (``default_rng(seed)``), sorted."""
    i, j = np.triu_indices(n, 1)
    if len(i) > size:
        keep = np.sort(np.random.default_rng(seed).choice(len(i), size, replace=False))
        i, j = i[keep], j[keep]
    return np.vstack([i, j]).astype(np.int64)


def pair_distances(encoding: Any, pairs: np.ndarray) -> np.ndarray:
    """``delta_ij`` of ``encoding`` at ``pairs`` (``(2, m)``): from its vectors when it has them
    (no ``n x n`` matrix), else from its distance matrix."""
    from posgeom.scores._encoding import encoding_distances

    i, j = pairs
    vectors = getattr(encoding, "vectors", None)
    if vectors is None:  # MDSResult, RefinedEmbedding: distances are those of the coordinates
        vectors = getattr(encoding, "coordinates", None)
    if vectors is not None and getattr(encoding, "distance_matrix", None) is None:
        v = np.asarray(vectors, dtype=np.float64)
        return np.sqrt(np.sum((v[i] - v[j]) ** 2, axis=1))
    return encoding_distances(encoding)[i, j]


def _empty_positions_hint(counts: Any) -> tuple[str | None, int | None]:
    """(warning, suggested n) when ``n`` leaves positions with fewer than 2 samples."""
    from posgeom.reports.lengths import empty_positions_hint, suggest_n

    totals, n_sequences = getattr(counts, "totals", None), getattr(counts, "n_sequences", None)
    if totals is None or not n_sequences:
        return None, None
    hint = empty_positions_hint(totals, n_sequences)
    return hint, (None if hint is None else suggest_n(totals, n_sequences))


def _quiet_ranks(mds: MDSResult) -> dict[str, float | None]:
    """Effective ranks; on a partial spectrum the summary says so instead of warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return effective_ranks(mds)


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """Everything :func:`analyze_counts` computed (see :meth:`summary` for the JSON form)."""

    distributions: PositionalDistributions
    distances: np.ndarray
    mds: MDSResult
    refined: RefinedEmbedding | None
    scores: dict[str, dict[str, Any]]
    rank_curve: list[dict[str, float]]
    noise: NoiseFloor | None
    options: dict[str, Any]
    counts_info: dict[str, Any] = field(default_factory=dict)
    shepard: dict[str, np.ndarray] = field(default_factory=dict)
    shepard_pairs: np.ndarray | None = None
    alibi_heads: list[dict[str, Any]] = field(default_factory=list)
    estimate: Any = None  # the GeometryEstimate scored against (None: the plug-in)
    plugin_distances: np.ndarray | None = None  # the plug-in D, beside a non-plug-in estimate
    plugin_scores: dict[str, dict[str, float]] = field(default_factory=dict)

    report_kind = "run"
    report_title = "geometry"

    def _repr_html_(self) -> str:
        from posgeom.reports import repr_html

        return repr_html(self)

    def summary(self) -> dict[str, Any]:
        d = self.distributions
        out: dict[str, Any] = {
            "posgeom_version": __version__,
            "conventions": conventions(self.options["convention"]),
            "options": self.options,
            "corpus": self.counts_info,
            "distributions": d.summary(),
            "samples_per_position": {
                "min": float(d.totals.min()),
                "median": float(np.median(d.totals)),
                "max": float(d.totals.max()),
            },
            "mds": {
                "n_components": self.mds.n_components,
                "model_dim": self.mds.model_dim,
                "solver": self.mds.solver,
                "eigenvalues": self.mds.eigenvalues[: min(64, len(self.mds.eigenvalues))].tolist(),
                "explained_variance_ratio": self.mds.explained_variance_ratio[:16].tolist(),
                "tie_groups": [list(g) for g in self.mds.tie_groups],
                "effective_rank": _quiet_ranks(self.mds),
                "spectrum_complete": bool(
                    np.clip(self.mds.eigenvalues, 0, None).sum()
                    >= (1 - 1e-9) * self.mds.total_variance
                ),
            },
            "scores": self.scores,
            "rank_curve": self.rank_curve,
            "estimator": self.estimate.summary()
            if self.estimate is not None
            else {"estimator": "plugin", "convention": self.options["convention"]},
        }
        if self.alibi_heads:
            out["alibi_heads"] = self.alibi_heads
        if self.plugin_scores:
            out["plugin_scores"] = self.plugin_scores
        if self.refined is not None:
            out["refinement"] = {
                "method": "smacof",
                "initial_paper_stress": self.refined.initial_stress,
                "final_paper_stress": self.refined.final_stress,
                "n_iter": self.refined.n_iter,
            }
        if self.noise is not None:
            nf = self.noise
            out["noise_floor"] = {
                "method": nf.method,
                "n_repeats": nf.n_repeats,
                "median_pair_floor": float(
                    np.median(nf.pair_floor[np.triu_indices_from(nf.pair_floor, 1)])
                ),
                "trusted_pair_share": float(
                    nf.trusted().sum() / max(1, nf.trusted().size - len(nf.totals))
                ),
                "untrusted_positions": d.positions[nf.untrusted_positions()].tolist(),
            }
        return out

    def markdown_table(self) -> str:
        """``table.md``: the settings line, the score table and the rank curve."""
        lines = [
            f"Hellinger convention: {self.options['convention']}; n = {self.distances.shape[0]} "
            f"positions, d = {self.mds.model_dim}; estimator: {self.options['estimator']}.",
            "",
            *score_table(self.scores),
        ]
        if self.plugin_scores:
            lines += ["", "Against the plug-in geometry (the paper's estimator):", ""]
            lines += markdown_table(
                [{"encoding": k, **v} for k, v in self.plugin_scores.items()], PLUGIN_COLUMNS
            )
        if self.rank_curve:
            lines += ["", "Rank experiment (rank-r MDS encoding P = A B^T):", ""]
            lines += rank_table(self.rank_curve)
        return "\n".join(lines) + "\n"

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of ``arrays.npz`` (what the report draws)."""
        arrays = {
            "positions": self.distributions.positions,
            "totals": self.distributions.totals,
            "hellinger": self.distances,
            "mds_embedding": self.mds.embedding,
            "mds_coordinates": self.mds.coordinates,
            "eigenvalues": self.mds.eigenvalues,
        }
        if self.refined is not None:
            arrays["refined_coordinates"] = self.refined.coordinates
        if self.plugin_distances is not None:
            arrays["plugin_hellinger"] = self.plugin_distances
        if self.noise is not None:
            arrays["noise_pair_floor"] = self.noise.pair_floor
        if self.shepard_pairs is not None:
            arrays["shepard_pairs"] = self.shepard_pairs
            arrays.update({f"shepard_{k}": v for k, v in self.shepard.items()})
        return arrays

    def write(self, directory: str | os.PathLike) -> Path:
        """Write ``summary.json``, ``arrays.npz`` (+ sidecar) and ``table.md`` into an existing
        folder (each file atomic; :meth:`save` makes the whole folder atomic)."""
        from posgeom.artifacts import atomic_write_text, json_default, save_artifact

        out = Path(directory)
        save_artifact(
            out / "arrays.npz",
            self.report_arrays(),
            {"options": self.options},
            kind="geometry_results",
        )
        atomic_write_text(
            out / "summary.json", json.dumps(self.summary(), indent=2, default=json_default)
        )
        atomic_write_text(out / "table.md", self.markdown_table())
        return out

    def save(
        self, directory: str | os.PathLike, *, overwrite: bool = False, report: bool = False
    ) -> Path:
        """A new results folder (:func:`posgeom.reports.results_folder`: complete or absent), with
        ``report.html`` when ``report``."""
        from posgeom.reports import results_folder

        with results_folder(directory, overwrite=overwrite, with_report=report) as tmp:
            self.write(tmp)
        return Path(directory)


def analyze_counts(
    counts: Any,
    *,
    model_dim: int = DEFAULT_MODEL_DIM,
    n_components: int | None = None,
    smoothing: str = "none",
    alpha: float = 1.0,
    min_samples: int = 1,
    below_min: str = "flag",
    convention: str = "chord",
    solver: str = "auto",
    encodings: Mapping[str, Any] | None = None,
    refine: bool = True,
    noise: str | None = "split_half",
    noise_repeats: int = 5,
    max_rank: int = 8,
    seed: int = 0,
    estimator: Any = "recommended",
    estimator_options: Mapping[str, Any] | None = None,
) -> PipelineResult:
    """Run the geometry pipeline on counts and score the MDS encoding (and any ``encodings``).

    ``encodings`` maps names to encodings (vectors, distance matrices or posgeom encodings) of
    the same positions; the MDS encoding is always scored as ``"mds"`` (and ``"mds+smacof"``
    when ``refine``). ``estimator`` (a name from :func:`posgeom.estimators.available`, or a
    :class:`~posgeom.estimators.GeometryEstimate` of the kept positions) makes the target
    ``D`` (and the MDS encoding) those of :func:`posgeom.estimate_geometry`; the plug-in
    distances and scores are kept beside it (``plugin_distances``, ``plugin_scores``).
    ``estimator_options`` go to ``estimate_geometry`` (e.g. ``{"coarsen": "top:1000"}``).
    """
    hint, suggested = _empty_positions_hint(counts)
    try:
        dist = positional_distributions(
            counts, smoothing=smoothing, alpha=alpha, min_samples=min_samples, below_min=below_min
        )
    except PosgeomError as exc:
        if suggested is None or "no samples" not in str(exc):
            raise
        raise PosgeomError(
            f"{exc}; n = {suggested} is reached by 95% of the sequences (`posgeom lengths "
            "CORPUS` shows the length profile)"
        ) from exc
    if hint:
        log.warning(hint)
    n = dist.n_positions
    if n < 3:
        raise PosgeomError(f"the geometry needs at least 3 positions with samples, got {n}")
    log.info("Hellinger distances for %d positions (vocabulary %d)", n, dist.vocab_size)
    target = hellinger_distances(dist, convention=convention)
    estimate = pipeline_estimate(
        counts,
        dist.positions,
        estimator=estimator,
        smoothing=smoothing,
        convention=convention,
        seed=seed,
        options=dict(estimator_options or {}),
    )
    plugin_target = None
    if estimate is not None:  # score against the estimate; the plug-in stays beside it
        plugin_target, target = target, np.array(estimate.distances)
    r = min(n - 1, model_dim) if n_components is None else n_components
    log.info("classical MDS: rank %d in model width %d", r, model_dim)
    mds_args = {"model_dim": model_dim, "convention": convention, "solver": solver, "seed": seed}
    mds = (
        classical_mds(dist, r, **mds_args)
        if estimate is None
        else estimate_mds(target, r, **mds_args)
    )
    scores = {"mds": score_encoding(mds, target, seed=seed)}
    refined = None
    if refine and n <= 2048:
        log.info("SMACOF refinement from the MDS solution")
        refined = smacof_refine(target, mds, max_iter=200)
        scores["mds+smacof"] = score_encoding(refined, target, seed=seed)
    for name, enc in (encodings or {}).items():
        scores[name] = score_encoding(enc, target, seed=seed)
    curve = rank_curve(mds, target, max_rank=max_rank, seed=seed)
    pairs = shepard_pairs(n, seed=seed)
    shepard = {"mds": pair_distances(mds, pairs)}
    if refined is not None:
        shepard["mds+smacof"] = pair_distances(refined, pairs)
    for name, enc in (encodings or {}).items():
        shepard[name] = pair_distances(enc, pairs)
    nf = None
    if noise:
        raw = getattr(counts, "counts", counts)
        try:
            import scipy.sparse as sp

            rows = sp.csr_matrix(raw)[dist.positions]
            nf = noise_floor(rows, method=noise, n_repeats=noise_repeats, seed=seed)
        except PosgeomError as exc:
            log.warning("noise floor skipped: %s", exc)
    options = {
        "model_dim": model_dim,
        "n_components": r,
        "smoothing": smoothing,
        "alpha": alpha if smoothing != "none" else 0.0,
        "min_samples": min_samples,
        "below_min": below_min,
        "convention": convention,
        "solver": mds.solver,
        "refine": refine,
        "noise": noise,
        "seed": seed,
        "estimator": "plugin" if estimate is None else estimate.estimator,
        "estimator_options": dict(estimator_options or {}),
    }
    info: dict[str, Any] = {}
    for attr in ("n_sequences", "n_tokens", "fingerprint", "tokenizer", "options"):
        if hasattr(counts, attr):
            info[attr] = getattr(counts, attr)
    return PipelineResult(
        distributions=dist,
        distances=target,
        mds=mds,
        refined=refined,
        scores=scores,
        rank_curve=curve,
        noise=nf,
        options=options,
        counts_info=info,
        shepard=shepard,
        shepard_pairs=pairs,
        estimate=estimate,
        plugin_distances=plugin_target,
        plugin_scores={}
        if plugin_target is None
        else plugin_scores(
            {"mds": mds, **({"mds+smacof": refined} if refined else {}), **(encodings or {})},
            plugin_target,
        ),
    )
