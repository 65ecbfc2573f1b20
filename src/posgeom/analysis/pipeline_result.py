"""The result of :func:`posgeom.analysis.pipeline.analyze_counts`: the geometry, its MDS encoding, the
scores, and how they are summarised and written (JSON, Markdown, a results folder).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._version import __version__
from posgeom.analysis.pipeline_scale import REFINE_SKIPPED
from posgeom.embed.mds import MDSResult
from posgeom.embed.rank import effective_ranks
from posgeom.embed.refine import RefinedEmbedding
from posgeom.geometry.distributions import PositionalDistributions
from posgeom.geometry.noise import NoiseFloor, SampledNoiseFloor
from posgeom.pipeline.markdown import plugin_lines, rank_table, score_table
from posgeom.pipeline.schema import conventions
from posgeom.pipeline.verdict import verdict_block
from posgeom.pipeline.verdict_inputs import TRUSTED_ARRAY, VerdictInputs, target_phrase

__all__ = ["PipelineResult", "sampled_note"]


def _quiet_ranks(mds: MDSResult) -> dict[str, float | None]:
    """Effective ranks; on a partial spectrum the summary says so instead of warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return effective_ranks(mds)


def sampled_note(sample: Any) -> str:
    """The line under a sampled table: how its scores were estimated (a long context)."""
    return (
        f"Sampled: every score above is estimated from {sample.size:,} uniform triples "
        f"(seed {sample.seed}; {100 * sample.confidence:.0f}% intervals in the JSON); "
        "separation is exact for translation-invariant and 1-D encodings, an upper "
        "bound (sampled pairs) where the JSON says so."
    )


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """Everything :func:`analyze_counts` computed (see :meth:`summary` for the JSON form)."""

    distributions: PositionalDistributions
    distances: np.ndarray | None  # the (n, n) target; None above SAMPLED_ABOVE positions
    mds: MDSResult
    refined: RefinedEmbedding | None
    scores: dict[str, dict[str, Any]]
    rank_curve: list[dict[str, float]]
    noise: NoiseFloor | SampledNoiseFloor | None
    options: dict[str, Any]
    counts_info: dict[str, Any] = field(default_factory=dict)
    shepard: dict[str, np.ndarray] = field(default_factory=dict)
    shepard_pairs: np.ndarray | None = None
    heads: list[dict[str, Any]] = field(default_factory=list)
    estimate: Any = None  # the GeometryEstimate scored against (None: the plug-in)
    plugin_distances: np.ndarray | None = None  # the plug-in D, beside a non-plug-in estimate
    plugin_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    scorer: Any = (
        None  # how encodings are scored (posgeom.analysis.pipeline_scale.Scorer); None: dense
    )
    large_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # long contexts' report

    report_kind = "run"
    report_title = "geometry"

    def _repr_html_(self) -> str:
        from posgeom.reports import repr_html

        return repr_html(self)

    @property
    def sampled(self) -> bool:
        """Whether the scores are estimated from a pair sample (no ``(n, n)`` matrix)."""
        return bool(getattr(self.scorer, "sampled", False))

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
            "estimator": self._estimator_summary(),
        }
        if self.heads:
            out["heads"] = self.heads
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
            out["noise_floor"] = self.noise.summary(d.positions)
        if self.sampled:
            s = self.scorer.sample
            out["sampling"] = {
                "scores": "sampled",
                "triples": s.size,
                "seed": s.seed,
                "confidence": s.confidence,
                "rule": "uniform triples (i, j, k); stress kinds from the pairs (i, j) (ratio "
                "estimators, delta-method intervals), violation rate from the triples (Wilson "
                "interval); separation exact or an upper bound (separation_kind)",
            }
            from posgeom.scores import scores

            unsampled = [x.name for x in scores() if x.sampled is None]
            if unsampled:  # registered scores with no sampled form: not in the rows
                out["sampling"]["without_sampled_form"] = unsampled
        if self.refined is None and self.options.get("refine") and self.sampled:
            out["refinement"] = {"method": "smacof", "skipped": REFINE_SKIPPED}
        out["verdict"] = verdict_block(self.report_kind, out)
        return out

    def _estimator_summary(self) -> dict[str, Any]:
        """The target's estimator and its resolution (the token classes it identifies)."""
        if self.estimate is None:
            return {
                "estimator": "plugin",
                "convention": self.options["convention"],
                "resolution": "full",
            }
        out = dict(self.estimate.summary())
        out.setdefault("resolution", getattr(self.estimate, "resolution", None))
        return out

    def markdown_table(self) -> str:
        """``table.md``: the settings line, the score table and the rank curve."""
        verdict = self.summary()["verdict"]
        vi = VerdictInputs.from_dict(verdict["inputs"])
        lines = [
            f"Hellinger convention: {self.options['convention']}; n = "
            f"{self.distributions.n_positions} positions, d = {self.mds.model_dim}. "
            f"{target_phrase(vi)}.",
            "",
            *score_table(self.scores),
        ]
        if self.sampled:
            lines += ["", sampled_note(self.scorer.sample)]
            if self.refined is None and self.options.get("refine"):
                lines += ["", f"mds+smacof: not run. {REFINE_SKIPPED}."]
        lines += plugin_lines(self.plugin_scores)
        if self.rank_curve:
            lines += ["", "Rank experiment (rank-r MDS encoding P = A B^T):", ""]
            lines += rank_table(self.rank_curve)
        lines += ["", verdict["line"]]
        return "\n".join(lines) + "\n"

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of ``arrays.npz`` (what the report draws)."""
        arrays = {
            "positions": self.distributions.positions,
            "totals": self.distributions.totals,
            "mds_embedding": self.mds.embedding,
            "mds_coordinates": self.mds.nonzero_coordinates,
            "eigenvalues": self.mds.eigenvalues,
        }
        if self.distances is not None:
            arrays["hellinger"] = self.distances
        if self.refined is not None:
            arrays["refined_coordinates"] = self.refined.coordinates
        if self.plugin_distances is not None:
            arrays["plugin_hellinger"] = self.plugin_distances
        arrays.update(self.noise_arrays())
        arrays.update(self.large_arrays)
        if self.shepard_pairs is not None:
            arrays["shepard_pairs"] = self.shepard_pairs
            arrays.update({f"shepard_{k}": v for k, v in self.shepard.items()})
        return arrays

    def noise_arrays(self) -> dict[str, np.ndarray]:
        """``noise_pair_floor`` ``(n, n)`` and ``noise_trusted``, the mask of the pairs above
        twice their floor whose share is the summary's ``trusted_pair_share`` (what a report's
        heatmap shades); empty without an ``(n, n)`` floor."""
        if getattr(self.noise, "pair_floor", None) is None:
            return {}
        return {"noise_pair_floor": self.noise.pair_floor, TRUSTED_ARRAY: self.noise.trusted()}

    def write(self, directory: str | os.PathLike) -> Path:
        """Write ``summary.json``, ``arrays.npz`` and ``table.md`` into an existing
        folder (each file atomic; :meth:`save` makes the whole folder atomic)."""
        from posgeom.io.artifacts import atomic_write_text, json_default, save_artifact
        from posgeom.io.jsonfiles import finite_json

        out = Path(directory)
        save_artifact(
            out / "arrays.npz",
            self.report_arrays(),
            {"options": self.options},
            kind="geometry_results",
        )
        summary = finite_json(self.summary())  # strict JSON: an undefined stress-1 is null
        atomic_write_text(
            out / "summary.json",
            json.dumps(summary, indent=2, default=json_default, allow_nan=False),
        )
        atomic_write_text(out / "table.md", self.markdown_table())
        return out

    def save(
        self, directory: str | os.PathLike, *, overwrite: bool = False, report: bool = False
    ) -> Path:
        """A new results folder (:func:`posgeom.reports.results_folder`: complete or absent), with
        ``report.html`` when ``report``."""
        from posgeom.reports import results_folder

        with results_folder(
            directory, overwrite=overwrite, with_report=report, content=self.report_kind
        ) as tmp:
            self.write(tmp)
        return Path(directory)
