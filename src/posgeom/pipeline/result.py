"""The one result of the main job: :class:`GeometryResult` (``geometry``, ``run``, ``demo``,
``compare``).

Its summary (:meth:`GeometryResult.summary`: one schema for every command, built once per
result) holds ``kind``, ``options``, the geometry, ``scores`` (one row per encoding), ``heads``,
``rank_curve``, ``stationarity``, ``uncertainty`` and the ``verdict``;
:meth:`GeometryResult.markdown` is its text, :meth:`GeometryResult.write` its files. HTML
reports are drawn by :mod:`posgeom.reports` from the same summary and arrays.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._version import __version__
from posgeom.embed import FittedMDS
from posgeom.embed.refine import REFINE_SKIPPED
from posgeom.geometry import KeptPositions, TargetAnalysis
from posgeom.geometry.stationarity import StationarityResult
from posgeom.io.jsonfiles import json_text
from posgeom.io.renderers import renderer
from posgeom.pipeline.config import GeometryConfig
from posgeom.pipeline.rows import MDS_ROW
from posgeom.pipeline.target import PluginEstimate
from posgeom.scores.table import ScoreTable, ScoreTargets
from posgeom.text import TRUSTED_ARRAY, ReportInput, conventions, render_report

__all__ = ["KINDS", "GeometryResult"]

KINDS = ("geometry", "run", "demo", "compare")
_FILES = {  # kind -> (summary JSON, Markdown, arrays sidecar kind)
    "compare": ("comparison.json", "comparison.md", "comparison_results"),
}
_DEFAULT_FILES = ("summary.json", "table.md", "geometry_results")


@dataclass(frozen=True, eq=False)
class GeometryResult:
    """Everything :func:`posgeom.pipeline.analyze` computed (see :meth:`summary`).

    ``target``: the estimate scored against (a :class:`~posgeom.pipeline.target.PluginEstimate`
    for the plug-in); ``targets``: the :class:`~posgeom.scores.table.ScoreTargets` (the target,
    and the plug-in beside a non-plug-in target); ``score_table``: every row's encoding scored
    against each of them; ``rows``: one row per encoding (``encoding``, ``description``,
    ``parameters``, its cells in the files' spelling, ``<score>_ci`` with replicates);
    ``heads``: the per-head rows of head families (ALiBi); ``fit``
    (:class:`~posgeom.embed.fitted.FittedMDS`), ``analysis``
    (:class:`~posgeom.geometry.target_analysis.TargetAnalysis`) and ``positions``
    (:class:`~posgeom.geometry.distributions.KeptPositions`), whose ``mds``, ``refined``,
    ``rank_curve``, ``stationarity``, ``noise`` and ``distributions`` it holds as its own fields.

    Plain data, set when the result is made: ``report_kind`` (``compare`` or ``run``),
    ``report_title``, ``distances`` (the ``(n, n)`` target ``D``; None above ``SAMPLED_ABOVE``
    positions), ``sampled`` (scores from a pair sample), ``plugin_scores`` (against the plug-in
    beside the target, per encoding; empty when the target is the plug-in) and ``report_input``:
    the one :class:`~posgeom.text.report_input.ReportInput` the text and the report read (the
    JSON summary, built once: :meth:`summary` hands out copies; the arrays of ``arrays.npz``).
    """

    kind: str
    config: GeometryConfig
    options: dict[str, Any]
    positions: KeptPositions
    target: Any
    fit: FittedMDS
    targets: ScoreTargets
    score_table: ScoreTable
    rows: tuple[dict[str, Any], ...]
    heads: tuple[dict[str, Any], ...]
    analysis: TargetAnalysis
    uncertainty: dict[str, Any] | None = None
    counts_info: dict[str, Any] = field(default_factory=dict)
    shepard: dict[str, np.ndarray] = field(default_factory=dict)
    shepard_pairs: np.ndarray | None = None
    large_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    distributions: Any = field(init=False, repr=False)
    stationarity: StationarityResult = field(init=False, repr=False)
    noise: Any = field(init=False, repr=False)
    mds: Any = field(init=False, repr=False)
    refined: Any = field(init=False, repr=False)
    rank_curve: tuple[dict[str, Any], ...] = field(init=False, repr=False)
    report_kind: str = field(init=False, repr=False)
    report_title: str = field(init=False, repr=False)
    distances: np.ndarray | None = field(init=False, repr=False)
    sampled: bool = field(init=False, repr=False)
    plugin_scores: dict[str, dict[str, float]] = field(init=False, repr=False)
    report_input: ReportInput = field(init=False, repr=False)

    def __post_init__(self) -> None:
        sampled, table = bool(self.targets.sampled), self.score_table
        compare = self.kind == "compare"
        beside = {}
        if "plugin" in table.targets:  # the table's cells against the plug-in, by encoding
            beside = {e: dict(table.cells.get((e, "plugin"), {})) for e in table.encodings}
        plain = dict(
            distributions=self.positions.distributions,
            stationarity=self.analysis.stationarity,
            noise=self.analysis.noise,
            mds=self.fit.mds,
            refined=self.fit.refined,
            rank_curve=self.fit.rank_curve,
            report_kind="compare" if compare else "run",
            report_title="comparison" if compare else "geometry",
            distances=None if sampled else self.targets.matrix.distances,
            sampled=sampled,
            plugin_scores=beside,
        )
        for name, value in plain.items():
            object.__setattr__(self, name, value)
        # the summary, its verdict and the text rendered once: written, printed, returned
        report = render_report(
            self.report_kind, self.report_title, self._summary(), self._arrays(), self
        )
        object.__setattr__(self, "report_input", report)

    @property
    def typed_distances(self) -> Any:
        """The target as the :class:`~posgeom._distance_matrix.DistanceMatrix` the score targets
        validated (``None`` above ``SAMPLED_ABOVE`` positions): what :func:`as_distances`
        gives for the result without checking it again."""
        return self.targets.matrix

    @property
    def plugin_distances(self) -> np.ndarray | None:
        """The plug-in ``(n, n)`` ``D`` shown beside a non-plug-in target (exact mode), else
        None."""
        beside = self.targets.dense.get("plugin")
        return None if beside is None else beside.distances

    @property
    def estimate(self) -> Any:
        """The estimate scored against, None for the plug-in (:attr:`target` is the estimate
        whichever it is)."""
        return None if isinstance(self.target, PluginEstimate) else self.target

    @property
    def scores(self) -> dict[str, dict[str, Any]]:
        """The rows by encoding name (each row without its ``encoding`` key)."""
        return {r["encoding"]: {k: v for k, v in r.items() if k != "encoding"} for r in self.rows}

    @property
    def table(self) -> list[dict[str, Any]]:
        """The rows as a list of copies."""
        return [dict(r) for r in self.rows]

    def row(self, name: str) -> dict[str, Any]:
        """The row of encoding ``name``."""
        for r in self.rows:
            if r["encoding"] == name:
                return dict(r)
        raise KeyError(
            f"no encoding {name!r} in the table; have {[r['encoding'] for r in self.rows]}"
        )

    def summary(self) -> dict[str, Any]:
        """The JSON form (module docstring): built once per result, a copy returned."""
        return copy.deepcopy(self.report_input.summary)

    def _summary(self) -> dict[str, Any]:
        """The JSON form without its verdict (:func:`~posgeom.text.report_input.render_report`
        adds it), built once when the result is made (:attr:`report_input`)."""
        estimator = dict(self.target.summary())  # and the token classes it identifies
        estimator.setdefault("resolution", getattr(self.target, "resolution", None))
        out: dict[str, Any] = {
            "posgeom_version": __version__,
            "kind": self.kind,
            "conventions": conventions(self.options["convention"]),
            "options": self.options,
            "corpus": self.counts_info,
            "distributions": dict(self.positions.summary),
            "samples_per_position": dict(self.positions.samples),
            MDS_ROW: dict(self.fit.summary),  # the MDS encoding's block, keyed by its row
            "scores": self.scores,
            "heads": list(self.heads),
            "rank_curve": list(self.rank_curve),
            "stationarity": dict(self.analysis.stationarity_summary),
            "estimator": estimator,
        }
        if self.plugin_scores:
            out["plugin_scores"] = {e: dict(s) for e, s in self.plugin_scores.items()}
        # refinement, noise floor, sampling and uncertainty, where there are any
        if self.refined is not None:
            out["refinement"] = {
                "method": "smacof",
                "initial_paper_stress": self.refined.initial_stress,
                "final_paper_stress": self.refined.final_stress,
                "n_iter": self.refined.n_iter,
            }
        elif self.options.get("refine") and self.sampled:
            out["refinement"] = {"method": "smacof", "skipped": REFINE_SKIPPED}
        if self.analysis.noise_summary is not None:
            out["noise_floor"] = dict(self.analysis.noise_summary)
        if self.sampled:
            out["sampling"] = self.targets.sampling_summary()
        if self.uncertainty:
            out["uncertainty"] = self.uncertainty
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`summary` as strict JSON text (an undefined stress-1 is null)."""
        return json_text(self.report_input.summary, indent=indent)

    def markdown(self) -> str:
        """The text of the result (``table.md`` / ``comparison.md``, what the command prints):
        the settings, the score table, the heads, the rank curve, the stationarity line and
        the verdict line."""
        return self.report_input.markdown

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of ``arrays.npz`` (what a report draws; built once when the result is
        made: :attr:`report_input`)."""
        return dict(self.report_input.arrays)

    def _arrays(self) -> dict[str, np.ndarray]:
        d, fit, st = self.distributions, self.fit.arrays, self.stationarity
        arrays = {
            "positions": d.positions,
            "totals": d.totals,
            **{k: fit[k] for k in ("mds_embedding", "mds_coordinates", "eigenvalues")},
            "diagonal_mean": st.diagonal_mean,
            "monotone_fit": st.monotone_fit,
            **{k: fit[k] for k in ("rank", "rank_paper_stress")},
        }
        if self.distances is not None:  # else a long context: its grid and pairs
            arrays["hellinger"] = self.distances
            arrays["toeplitz"] = self.analysis.toeplitz
        if st.sampled:
            arrays["lag_edges"] = st.lag_edges
        if "refined_coordinates" in fit:
            arrays["refined_coordinates"] = fit["refined_coordinates"]
        if self.plugin_distances is not None:
            arrays["plugin_hellinger"] = self.plugin_distances
        if getattr(self.noise, "pair_floor", None) is not None:  # what a report's heatmap shades
            arrays["noise_pair_floor"] = self.noise.pair_floor
            arrays[TRUSTED_ARRAY] = self.noise.trusted_pairs  # the pairs above twice their floor
        arrays.update(self.large_arrays)
        if self.shepard_pairs is not None:
            arrays["shepard_pairs"] = self.shepard_pairs
            arrays.update({f"shepard_{k}": v for k, v in self.shepard.items()})
        return arrays

    @property
    def files(self) -> tuple[str, str, str]:
        """The names of the summary JSON, the Markdown text and ``arrays.npz``."""
        summary, text, _ = _FILES.get(self.kind, _DEFAULT_FILES)
        return summary, text, "arrays.npz"

    def write(self, directory: str | os.PathLike) -> Path:
        """Write the summary JSON, the Markdown text and ``arrays.npz`` (+ JSON sidecar) into an
        existing folder (:attr:`files`; each file atomic, :meth:`save` makes the folder
        atomic)."""
        from posgeom.io._atomic import atomic_write_text
        from posgeom.io.artifacts import save_artifact

        out = Path(directory)
        summary, text, kind = _FILES.get(self.kind, _DEFAULT_FILES)
        save_artifact(
            out / "arrays.npz", self.report_arrays(), {"options": self.options}, kind=kind
        )
        atomic_write_text(out / summary, self.to_json() + "\n")
        atomic_write_text(out / text, self.markdown())
        return out

    def save(
        self, directory: str | os.PathLike, *, overwrite: bool = False, report: bool = False
    ) -> Path:
        """A new results folder with the files of :meth:`write` (complete or absent), and
        ``report.html`` when ``report`` (drawn by :mod:`posgeom.reports`)."""
        from posgeom.io.outputs import results_directory

        draw = renderer("report") if report else None
        if report and draw is None:
            raise PosgeomError(
                "report=True: no report renderer is registered (posgeom.reports registers it); "
                "save without report=True and call posgeom.report(folder)"
            )
        with results_directory(directory, overwrite=overwrite, content=self.report_kind) as tmp:
            self.write(tmp)
            if draw is not None:
                draw(Path(tmp), Path(directory).name)
        return Path(directory)

    def _repr_html_(self) -> str | None:
        """The report as an HTML fragment in Jupyter, drawn by the registered renderer
        (:mod:`posgeom.io.renderers`: :mod:`posgeom.reports`, loaded when first needed)."""
        render = renderer("html")
        return None if render is None else render(self)
