"""The result of scoring extension strategies: ranked rows, verdict, summary, table, folder.

``summary.json`` (``kind: "posgeom_extension"``) holds ``strategies`` (ranked; each with ``name``,
``kind``, ``rope_parameters`` where it has them, ``scores`` with ``<key>_ci`` intervals,
``p_first`` and the phase metrics), ``best``, ``rope_parameters`` (the best's), the lag geometry
(counts, estimate, dependence profile) and ``verdict``; ``rope_parameters.json`` the best's
parameters as transformers 5 reads them; ``table.md`` the ranked table; ``arrays.npz`` the lag
geometry (``hellinger``: the estimated ``(m, m)`` chords across lags, ``lags``, ``totals``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.encodings._extension import Strategy, jsonable_parameters
from posgeom.io.jsonfiles import json_text

__all__ = ["ExtensionResult", "StrategyScore"]


@dataclass(frozen=True, eq=False)
class StrategyScore:
    """One strategy's scores against the lag geometry (``scores``: stress kinds, ``scale``,
    ``violation_rate``, ``separation`` and ``<key>_ci`` intervals), ``p_first`` (share of
    replicates where it ranks first; None without replicates) and ``extras`` (phases, position)."""

    strategy: Strategy
    scores: dict[str, Any]
    p_first: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    config_changes: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.strategy.name

    @classmethod
    def build(
        cls, strategy: Strategy, point: dict, boot: Any, extras: dict, changes: dict
    ) -> StrategyScore:
        from posgeom.scores import available

        scores = {k: point[k] for k in available() if k in point}
        p_first = None
        if boot is not None:
            unc = boot.encodings[strategy.name]
            for name, iv in unc.scores.items():
                scores[f"{name}_ci"] = [iv.low, iv.high]
            p_first = float(unc.p_first)
        return cls(strategy, scores, p_first, dict(extras), dict(changes))

    def row(self, rank: int) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": rank, "name": self.name, **self.scores, **self.extras}
        ci = self.scores.get("scale_optimal_ci")
        out["scale_optimal_interval"] = f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else None
        out["p_first"] = self.p_first
        if self.strategy.rope_parameters is not None:
            out["rope_type"] = self.strategy.rope_parameters.get("rope_type", "default")
        return out

    def summary(self, rank: int) -> dict[str, Any]:
        return {
            **self.strategy.summary(),
            "config_changes": self.config_changes,
            "rank": rank,
            "scores": self.scores,
            "p_first": self.p_first,
            **self.extras,
        }


@dataclass(frozen=True, eq=False)
class ExtensionResult:
    """Ranked strategies (``rows``, best first), the ``model``, ``target_length``, the corpus's
    ``lag_geometry``, ``rank_by``, the ranking's ``stability`` (mean Kendall tau of the replicate
    rankings; None without replicates) and ``measurements`` (``--measure`` losses, or None)."""

    model: Any
    target_length: int
    lag_geometry: Any
    rows: tuple[StrategyScore, ...]
    rank_by: str
    stability: float | None = None
    n_replicates: int = 0
    measurements: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    recommendation: dict[str, Any] | None = None
    predictors: dict[str, dict[str, float]] | None = None
    plane_use: dict[str, Any] | None = None

    report_kind = "extend"

    @classmethod
    def build(
        cls,
        model: Any,
        target: int,
        geo: Any,
        rows: Sequence[StrategyScore],
        *,
        rank_by: str,
        bootstrap: Any,
        notes: tuple[str, ...] = (),
    ) -> ExtensionResult:
        # scores equal to 10 significant digits are ties (e.g. strategies with the same
        # frequencies): they keep the order given, not the order of floating-point noise
        order = sorted(
            range(len(rows)), key=lambda i: (float(f"{rows[i].scores[rank_by]:.10g}"), i)
        )
        return cls(
            model,
            int(target),
            geo,
            tuple(rows[i] for i in order),
            rank_by,
            None if bootstrap is None else float(bootstrap.ranking_stability),
            0 if bootstrap is None else int(bootstrap.n_replicates),
            notes=tuple(notes),
        )

    @property
    def trained_length(self) -> int:
        return int(self.model.trained_length)

    @property
    def best(self) -> StrategyScore:
        return self.rows[0]

    @property
    def by_stress(self) -> StrategyScore:
        """The strategy with the lowest ``rank_by`` stress (the corpus's own pick)."""
        return min(self.rows, key=lambda r: float(f"{r.scores[self.rank_by]:.10g}"))

    @property
    def recommended(self) -> Strategy:
        """The recommended strategy (:mod:`posgeom.extension.recommend`), else the best row."""
        rec = self.recommendation
        return rec["strategy"] if rec else self.best.strategy

    @property
    def rope_parameters(self) -> dict[str, Any] | None:
        """The recommended strategy's ``rope_parameters`` (transformers 5 spelling), or None."""
        params = self.recommended.rope_parameters
        return None if params is None else jsonable_parameters(params)

    def with_recommendation(
        self, recommendation: dict | None, predictors: dict, plane_use: dict | None
    ) -> ExtensionResult:
        """The rows ordered by the recommendation's ``ranked_by`` predictor (best first; rows it
        does not score keep their order after them), with the recommendation attached."""
        import dataclasses

        rows = self.rows
        by = (recommendation or {}).get("ranked_by")
        if by in predictors:
            vals = predictors[by]
            rows = tuple(sorted(rows, key=lambda r: -vals.get(r.name, -np.inf)))
        return dataclasses.replace(
            self,
            rows=rows,
            recommendation=recommendation,
            predictors=predictors,
            plane_use=plane_use,
        )

    def recommendation_summary(self) -> dict[str, Any] | None:
        rec = self.recommendation
        if not rec:
            return None
        out = {k: v for k, v in rec.items() if k != "strategy"}
        return {"strategy": rec["strategy"].name, "rope_parameters": self.rope_parameters, **out}

    def recommendation_lines(self) -> list[str]:
        from posgeom.extension.recommend import recommendation_lines

        return recommendation_lines(self)

    def strategy(self, name: str) -> StrategyScore:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def with_measurements(self, measurements: dict[str, Any]) -> ExtensionResult:
        import dataclasses

        return dataclasses.replace(self, measurements=measurements)

    def verdict(self) -> list[str]:
        """Plain-words lines: the recommendation and its record, the lag geometry's own pick and
        how sure, and where the corpus is silent."""
        best = self.by_stress
        s = best.scores
        ci = s.get(f"{self.rank_by}_ci")
        sure = f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
        lines = [*self.recommendation_lines()]
        lines += [
            f"best by the lag geometry at L = {self.target_length}: {best.name} "
            f"({self.rank_by} stress {s[self.rank_by]:.4g}{sure}"
            + (f", first in {best.p_first:.0%} of replicates" if best.p_first is not None else "")
            + ")"
        ]
        if best.strategy.kind == "fitted":
            lines.append(
                "'fitted' was fitted to this same lag geometry, so its score is in-sample "
                "(optimistic); compare it with the others on --measure or on another corpus"
            )
        runner = sorted(self.rows, key=lambda r: float(f"{r.scores[self.rank_by]:.10g}"))
        if len(self.rows) > 1 and ci:
            second = runner[1].scores.get(f"{self.rank_by}_ci")
            if second and second[0] <= ci[1]:
                lines.append(
                    f"its interval overlaps that of {runner[1].name}: the corpus does not "
                    "separate the two best strategies"
                )
        dep = self.lag_geometry.dependence
        reach, top = dep.longest_signal_lag, int(self.lag_geometry.lags[-1])
        if reach < top:
            lines.append(
                f"the corpus shows token dependence above its noise level only up to lag {reach} "
                f"(of {top}, at {self.lag_geometry.counts.classes.kind} classes): beyond it the "
                "lag geometry is noise, so the score judges what a strategy does to short lags "
                "and to phases never seen in training (column 'unseen phases'), not long-range use"
            )
        if self.stability is not None:
            lines.append(
                f"ranking stability over {self.n_replicates} half-samples: {self.stability:.2f}"
            )
        lines += list(self.notes)
        lines.append(
            "this is a geometric score, not a measured loss: check it with --measure on held-out "
            "text before trusting it"
        )
        return lines

    def reference_mds(self, ranks: tuple[int, ...] = (1, 2, 4, 8)) -> dict[str, Any]:
        """Scale-optimal stress and violation rate of the lag geometry's own rank-``r`` classical
        MDS, per ``r``: how many dimensions the corpus's lag geometry needs, the reference a lag
        kernel is read against. (A full-rank MDS reproduces a Euclidean estimate exactly, so only
        low ranks say something.)"""
        import warnings

        from posgeom.embed.mds import classical_mds
        from posgeom.pipeline.scale import score_encoding

        d = np.asarray(self.lag_geometry.distances)
        out: dict[str, Any] = {}
        for r in (k for k in ranks if k < d.shape[0]):
            with warnings.catch_warnings():  # the estimate's non-Euclidean part is in its spectrum
                warnings.simplefilter("ignore", RuntimeWarning)
                mds = classical_mds(d, r, input_kind="distances")
            scores = score_encoding(mds.coordinates, d)
            out[f"rank_{r}"] = {k: scores[k] for k in ("scale_optimal", "violation_rate")}
        return out

    def verdict_line(self) -> str:
        """One line: the best strategy, how far the corpus's dependence reaches, and the caveat."""
        dep = self.lag_geometry.dependence
        measured = ""
        if self.measurements:
            rows = [r for r in self.measurements["strategies"] if r["beyond_loss"] is not None]
            if rows:
                low = min(rows, key=lambda r: r["beyond_loss"])
                measured = (
                    f"; lowest measured loss beyond L0: {low['name']} ({low['beyond_loss']:.4f})"
                )
        rec = self.recommendation_lines()
        head = rec[0] if rec else self.verdict()[0]
        return (
            f"verdict: {head}; corpus dependence above noise up to lag "
            f"{dep.longest_signal_lag} of {int(self.lag_geometry.lags[-1])}{measured}; a geometric "
            "score, not a loss"
        )

    def table_rows(self) -> list[dict[str, Any]]:
        rows = [r.row(i + 1) for i, r in enumerate(self.rows)]
        values = self.predictors or {}
        by = (self.recommendation or {}).get("ranked_by")
        for row in rows:
            row["predicted"] = values.get(by, {}).get(row["name"])
            row["model_aware"] = values.get("model-aware", {}).get(row["name"])
        return rows

    def markdown(self) -> str:
        """``table.md``: the ranked table, the verdict, the measured losses and the corpus's
        dependence profile (:mod:`posgeom.extension.markdown`)."""
        from posgeom.extension.markdown import result_markdown

        return result_markdown(self)

    def summary(self) -> dict[str, Any]:
        from posgeom import __version__

        return {
            "kind": "posgeom_extension",
            "posgeom_version": __version__,
            "model": self.model.summary(),
            "trained_length": self.trained_length,
            "target_length": self.target_length,
            "rank_by": self.rank_by,
            "estimator": self.lag_geometry.estimate.estimator,
            "n_replicates": self.n_replicates,
            "ranking_stability": self.stability,
            "best": self.recommended.name,
            "best_by_lag_stress": self.by_stress.name,
            "recommendation": self.recommendation_summary(),
            "rope_parameters": self.rope_parameters,
            "reference_mds": self.reference_mds(),
            "config_changes": self.recommended.config_changes(
                self.trained_length, self.target_length
            ),
            "predictors": self.predictors,
            "plane_use": self.plane_use,
            "strategies": [r.summary(i + 1) for i, r in enumerate(self.rows)],
            "scores": {r.name: r.scores for r in self.rows},
            "lag_geometry": self.lag_geometry.summary(),
            "measurements": self.measurements,
            "verdict": self.verdict(),
        }

    def report_arrays(self) -> dict[str, np.ndarray]:
        geo = self.lag_geometry
        return {
            "hellinger": np.asarray(geo.distances),
            "positions": np.asarray(geo.lags),
            "totals": np.asarray(geo.counts.pairs),
        }

    def write(self, directory: str | os.PathLike) -> Path:
        """``summary.json``, ``table.md``, ``arrays.npz`` and (RoPE) ``rope_parameters.json`` into
        an existing folder (each file atomic; use :func:`posgeom.reports.results_folder` for an
        atomic folder)."""
        from posgeom.io.artifacts import atomic_write_text, save_artifact

        out = Path(directory)
        save_artifact(out / "arrays.npz", self.report_arrays(), {}, kind="extension_results")
        text = json_text(self.summary(), indent=2)
        atomic_write_text(out / "summary.json", text)
        atomic_write_text(out / "table.md", self.markdown())
        if self.rope_parameters is not None:
            atomic_write_text(
                out / "rope_parameters.json", json_text(self.rope_parameters, indent=2) + "\n"
            )
        return out
