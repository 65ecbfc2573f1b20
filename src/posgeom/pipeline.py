"""The whole geometry pipeline for one corpus: counts -> distributions -> D -> MDS -> scores.

:func:`analyze_counts` runs every step on a :class:`~posgeom.corpus.counting.PositionCounts` (or
any ``(n, V)`` count matrix) and returns a :class:`PipelineResult`, which writes a results
directory: ``summary.json`` (every number, every option, the conventions), ``arrays.npz`` (+ JSON
sidecar: distances, MDS embedding, eigenvalues, totals) and ``table.md``.
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
from posgeom.geometry.distributions import PositionalDistributions, positional_distributions
from posgeom.geometry.divergences import hellinger_distances
from posgeom.geometry.noise import NoiseFloor, noise_floor
from posgeom.scores.order import monotonicity_violation_rate, separation_margin
from posgeom.scores.stress import stress_scores

__all__ = ["PipelineResult", "analyze_counts", "score_encoding", "score_table"]

log = logging.getLogger("posgeom")

SCORE_COLUMNS = ("paper", "stress1", "scale_optimal", "scale", "violation_rate", "separation")


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


def score_table(scores: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown rows (header included) of :func:`score_encoding` results, one row per encoding."""
    lines = [
        "| encoding | paper stress | stress-1 | scale-optimal stress | alpha* | violation rate | separation |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in scores.items():
        lines.append(
            f"| {name} | {s['paper']:.4g} | {s['stress1']:.4g} | {s['scale_optimal']:.4g} | "
            f"{s['scale']:.4g} | {s['violation_rate']:.3f} | {s['separation']:.3g} |"
        )
    return lines


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

    def summary(self) -> dict[str, Any]:
        d = self.distributions
        out: dict[str, Any] = {
            "posgeom_version": __version__,
            "conventions": {
                "hellinger": self.options["convention"],
                "stress": "paper = sum_{i<j}(delta-D)^2 / sum_{i<j} D^2 (no rescaling); "
                "stress1 = sqrt(sum(delta-D)^2 / sum delta^2); scale_optimal = paper stress of "
                "alpha* delta with alpha* = sum(delta D)/sum(delta^2)",
                "violation_rate": "fraction of triples (i,j,k) with D_ij != D_ik ordered the other "
                "way by the encoding",
            },
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
        }
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
        lines = [
            f"Hellinger convention: {self.options['convention']}; n = {self.distances.shape[0]} "
            f"positions, d = {self.mds.model_dim}.",
            "",
            *score_table(self.scores),
        ]
        if self.rank_curve:
            lines += [
                "",
                "| rank r | paper stress of rank-r MDS | parameters r(n+d) | n d |",
                "|---:|---:|---:|---:|",
            ]
            for row in self.rank_curve:
                lines.append(
                    f"| {row['rank']} | {row['paper_stress']:.4g} | {row['parameters']} | {row['full_parameters']} |"
                )
        return "\n".join(lines) + "\n"

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``summary.json``, ``arrays.npz`` (+ sidecar) and ``table.md`` atomically."""
        from posgeom.artifacts import atomic_write_text, json_default, save_artifact

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
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
        if self.noise is not None:
            arrays["noise_pair_floor"] = self.noise.pair_floor
        save_artifact(
            out / "arrays.npz", arrays, {"options": self.options}, kind="geometry_results"
        )
        atomic_write_text(
            out / "summary.json", json.dumps(self.summary(), indent=2, default=json_default)
        )
        atomic_write_text(out / "table.md", self.markdown_table())
        return out


def analyze_counts(
    counts: Any,
    *,
    model_dim: int = 128,
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
) -> PipelineResult:
    """Run the geometry pipeline on counts and score the MDS encoding (and any ``encodings``).

    ``encodings`` maps names to encodings (vectors, distance matrices or posgeom encodings) of
    the same positions; the MDS encoding is always scored as ``"mds"`` (and ``"mds+smacof"``
    when ``refine``).
    """
    dist = positional_distributions(
        counts, smoothing=smoothing, alpha=alpha, min_samples=min_samples, below_min=below_min
    )
    n = dist.n_positions
    if n < 3:
        raise PosgeomError(f"the geometry needs at least 3 positions with samples, got {n}")
    log.info("Hellinger distances for %d positions (vocabulary %d)", n, dist.vocab_size)
    target = hellinger_distances(dist, convention=convention)
    r = min(n - 1, model_dim) if n_components is None else n_components
    log.info("classical MDS: rank %d in model width %d", r, model_dim)
    mds = classical_mds(
        dist, r, model_dim=model_dim, convention=convention, solver=solver, seed=seed
    )
    scores = {"mds": score_encoding(mds, target, seed=seed)}
    refined = None
    if refine and n <= 2048:
        log.info("SMACOF refinement from the MDS solution")
        refined = smacof_refine(target, mds, max_iter=200)
        scores["mds+smacof"] = score_encoding(refined, target, seed=seed)
    for name, enc in (encodings or {}).items():
        scores[name] = score_encoding(enc, target, seed=seed)
    curve = []
    for k in range(1, min(max_rank, mds.n_components) + 1):
        low = mds.truncate(k)
        curve.append(
            {
                "rank": k,
                "paper_stress": stress_scores(low, target).paper,
                "parameters": k * (n + model_dim),
                "full_parameters": n * model_dim,
            }
        )
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
    )
