"""The result of :func:`posgeom.analysis.compare.compare_encodings` and the stationarity diagnostic.

:class:`ComparisonResult` holds the table, the ALiBi heads, the rank curve, the stationarity
diagnostic and the pipeline; it renders through :mod:`posgeom.reports` (Markdown, JSON, the HTML
report) and writes its results folder through :func:`posgeom.reports.results_folder`.
:func:`stationarity` (re-exported from :mod:`posgeom.analysis.stationarity`) measures how much
of a distance matrix is a function of ``|i - j|``. Above ``SAMPLED_ABOVE`` positions the
pipeline holds no ``(n, n)`` matrix: the text, the arrays and the report read its pair sample,
its sampled noise floor and its grid of the target instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._version import __version__
from posgeom.analysis.pipeline_result import sampled_note
from posgeom.analysis.stationarity import StationarityResult, stationarity
from posgeom.io.artifacts import json_default
from posgeom.io.jsonfiles import finite_json
from posgeom.pipeline.markdown import markdown_table, plugin_lines, rank_table, score_table
from posgeom.pipeline.schema import HEAD_COLUMNS, heads_by_family
from posgeom.pipeline.verdict import verdict_block
from posgeom.pipeline.verdict_inputs import VerdictInputs, target_phrase

__all__ = ["ComparisonResult", "StationarityResult", "stationarity"]


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
    heads : the same scores for every head of a per-head family (ALiBi), with its ``family``,
        ``head`` (and ``slope`` for ALiBi).
    rank_curve : per rank ``r = 1 .. R``: ``rank``, ``paper``, ``stress1``, ``scale_optimal``,
        ``violation_rate``, ``parameters = r (n + d)``, ``full_parameters = n d``,
        ``parameter_reduction = 1 - r (n + d) / (n d)``, ``explained_variance``.
    stationarity : :class:`StationarityResult` of the Hellinger distances.
    pipeline : the :class:`~posgeom.analysis.pipeline.PipelineResult` (distributions, ``D``, MDS, noise).
    options : every option.
    """

    table: list[dict[str, Any]]
    heads: list[dict[str, Any]]
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
        for key in ("scores", "rank_curve", "verdict"):  # the table's, below
            geom.pop(key, None)
        out = {
            "posgeom_version": __version__,
            "kind": "posgeom_comparison",
            "options": self.options,
            "geometry": geom,
            "table": self.table,
            "heads": self.heads,
            "rank_curve": self.rank_curve,
            "stationarity": self.stationarity.summary(),
            **({"uncertainty": self.uncertainty} if self.uncertainty else {}),
        }
        out["verdict"] = verdict_block(self.report_kind, out)
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`summary` as JSON text."""
        return json.dumps(
            finite_json(self.summary()), indent=indent, default=json_default, allow_nan=False
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
        verdict = self.summary()["verdict"]
        vi = VerdictInputs.from_dict(verdict["inputs"])
        lines = [
            f"n = {o['n_positions']} positions, d = {o['model_dim']}, Hellinger convention: "
            f"{o['convention']} (paper stress = sum (delta - D)^2 / sum D^2 over i < j, no "
            "rescaling; scale-optimal stress after the best rescaling alpha*).",
            f"{target_phrase(vi)} (posgeom.estimate_geometry)"
            + ("; the plug-in (the paper's) is shown beside it." if self._beside() else "."),
        ]
        u = self.uncertainty
        if u:
            lines.append(
                f"Intervals: {100 * u['level']:.0f}% {u['method']} over {u['n_replicates']} "
                "bootstrap replicates of the counts, the target re-estimated on each."
            )
        if np.all(np.isfinite(d.totals)) and self.options.get("input") == "counts":
            lines.append(
                f"Samples per position: min {np.min(d.totals):.6g}, median "
                f"{np.median(d.totals):.6g}."
            )
        else:
            lines.append("Input: distributions (no sampling noise).")
        lines += self._noise_line()
        lines += ["", *score_table(self.table)]
        if self.pipeline.sampled:
            lines += ["", sampled_note(self.pipeline.scorer.sample)]
        lines += plugin_lines(self._beside())
        for fam, rows in heads_by_family(self.heads).items():
            lines += ["", f"{fam}, every head:", ""]
            lines += markdown_table(rows, HEAD_COLUMNS)
        if self.rank_curve:
            lines += ["", "Rank experiment (rank-r MDS encoding P = A B^T):", ""]
            lines += rank_table(self.rank_curve)
        lines += ["", self.stationarity.line(), "", verdict["line"]]
        return "\n".join(lines) + "\n"

    def _noise_line(self) -> list[str]:
        """The noise floor's line: from the ``(n, n)`` floor, or a long context's sampled one."""
        nf = self.pipeline.noise
        if nf is None:
            return []
        if getattr(nf, "pair_floor", None) is None:  # sampled (SampledNoiseFloor)
            median_d = float(np.median(self.pipeline.scorer.sample.target_ij))
            lo, hi = nf.trusted_ci
            return [
                f"Noise floor ({nf.method}, {nf.n_pairs:,} sampled pairs): median pair floor "
                f"{nf.median_pair_floor:.3g} vs median D {median_d:.3g}; "
                f"{100 * nf.trusted_share:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] of pairs above "
                "twice their floor."
            ]
        iu = np.triu_indices_from(nf.pair_floor, 1)
        return [
            f"Noise floor ({nf.method}): median pair floor {np.median(nf.pair_floor[iu]):.3g} "
            f"vs median D {np.median(self.distances[iu]):.3g}; "
            f"{100 * nf.trusted()[iu].mean():.1f}% of pairs above twice their floor."
        ]

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of ``arrays.npz`` (what the report draws)."""
        p, st = self.pipeline, self.stationarity
        arrays = {
            "positions": p.distributions.positions,
            "totals": p.distributions.totals,
            "mds_coordinates": p.mds.nonzero_coordinates,
            "eigenvalues": p.mds.eigenvalues,
            "diagonal_mean": st.diagonal_mean,
            "monotone_fit": st.monotone_fit,
            "rank": np.array([c["rank"] for c in self.rank_curve], dtype=np.int64),
            "rank_paper_stress": np.array([c["paper"] for c in self.rank_curve]),
        }
        if p.distances is not None:  # else a long context: its grid and pairs (large_arrays)
            arrays["hellinger"] = p.distances
            arrays["toeplitz"] = st.toeplitz()
        if st.sampled:
            arrays["lag_edges"] = st.lag_edges
        arrays.update(getattr(p, "large_arrays", None) or {})
        arrays.update(p.noise_arrays())
        if getattr(p, "plugin_distances", None) is not None:  # the plug-in D beside the estimate
            arrays["plugin_hellinger"] = p.plugin_distances
        if self.shepard and p.shepard_pairs is not None:
            arrays["shepard_pairs"] = p.shepard_pairs
            arrays.update({f"shepard_{k}": v for k, v in self.shepard.items()})
        return arrays

    def write(self, directory: str | os.PathLike) -> Path:
        """Write ``comparison.json``, ``comparison.md`` and ``arrays.npz`` (+ JSON sidecar) into
        an existing folder (each file atomic; :meth:`save` makes the whole folder atomic)."""
        from posgeom.io.artifacts import atomic_write_text, save_artifact

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

        with results_folder(
            directory, overwrite=overwrite, with_report=report, content=self.report_kind
        ) as tmp:
            self.write(tmp)
        return Path(directory)
