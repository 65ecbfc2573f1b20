"""The result of scoring extension strategies: ranked rows, verdict, summary, table, folder.

``summary.json`` (``kind: "posgeom_extension"``) holds the ranked ``strategies`` (scores with
``<key>_ci`` intervals, ``p_first``, phase metrics), ``best``, its ``rope_parameters``, the lag
geometry and the ``verdict``; ``rope_parameters.json`` the best's parameters (transformers 5
spelling); ``table.md`` the ranked table; ``arrays.npz`` the lag geometry (``hellinger``: the
estimated ``(m, m)`` chords across lags, ``positions``: the lags, ``totals``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
        """The rows in the recommendation's one ranking (``recommendation["ranking"]``): the
        recommended strategy first, then by its ``ranked_by`` predictor (best first; rows it
        does not score keep their order after them), with the recommendation attached."""
        rows = self.rows
        rec = recommendation or {}
        by = rec.get("ranked_by")
        if by in predictors:
            vals = predictors[by]
            rows = tuple(sorted(rows, key=lambda r: -vals.get(r.name, -np.inf)))
        if rec.get("strategy") is not None:
            first = rec["strategy"].name
            rows = tuple(sorted(rows, key=lambda r: r.name != first))  # stable
        return replace(
            self,
            rows=rows,
            recommendation=recommendation,
            predictors=predictors,
            plane_use=plane_use,
        )

    @property
    def ranking(self) -> str:
        """The one rule the table's rows follow (:func:`posgeom.extension.verdict.ranking_name`)."""
        from posgeom.extension.verdict import ranking_name

        return ranking_name(self)

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
        """The result with ``--measure``'s losses; the rows ranked by the measured outcome (loss
        past ``L0``, else in-window loss; lowest first), the unmeasured ones after in their
        order."""
        from posgeom.reports.extend_parts import measured_key

        key = measured_key(measurements)
        rows = self.rows
        if key is not None:
            got = {r["name"]: r[key] for r in measurements["strategies"] if r.get(key) is not None}
            rows = tuple(sorted(rows, key=lambda r: got.get(r.name, np.inf)))
        return replace(self, rows=rows, measurements=measurements)

    def verdict(self) -> list[str]:
        """Plain-words lines: the recommendation, its scope and record, the one ranking, what
        was measured and where the pick landed, whether the corpus mattered, how far its
        dependence reaches (:mod:`posgeom.extension.verdict`)."""
        from posgeom.extension.verdict import corpus_lines, dependence_line, measured_lines

        lines = [*self.recommendation_lines()]
        lines.append(
            f"table ranked by {self.ranking}; the other rules and the lag stress are columns"
        )
        lines += measured_lines(self)
        lines += corpus_lines(self)
        if any(r.strategy.kind == "fitted" for r in self.rows):
            lines.append(
                "'fitted' was fitted to this same lag geometry, so its lag stress is in-sample "
                "(optimistic); compare it with the others on --measure or on another corpus"
            )
        dep = dependence_line(self)
        if dep:
            lines.append(dep)
        if self.stability is not None:
            lines.append(
                f"lag-stress ranking stability over {self.n_replicates} half-samples: "
                f"{self.stability:.2f}"
            )
        lines += list(self.notes)
        if not (self.measurements and self.measurements.get("mode") == "full"):
            lines.append(
                "the lag stress is a geometric score, not a measured loss: check it with "
                "--measure on held-out text before trusting it"
            )
        return lines

    def reference_mds(self, ranks: tuple[int, ...] = (1, 2, 4, 8)) -> dict[str, Any]:
        """Scale-optimal stress and violation rate of the lag geometry's own rank-``r`` classical
        MDS, per ``r``: how many dimensions the corpus's lag geometry needs, the reference a lag
        kernel is read against. (A full-rank MDS reproduces a Euclidean estimate exactly, so only
        low ranks say something.)"""
        import warnings

        from posgeom.embed.mds import classical_mds
        from posgeom.scores.table import score_encoding

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
        """One line: the recommendation, the one ranking, where the pick landed when measured,
        and how far the corpus's dependence reaches."""
        from posgeom.extension.verdict import measured_lines

        dep = self.lag_geometry.dependence
        rec = self.recommendation_lines()
        head = rec[0] if rec else f"lowest lag stress: {self.by_stress.name}"
        measured = measured_lines(self)
        return (
            f"verdict: {head}; table ranked by {self.ranking}"
            + (f"; {measured[0]}" if measured else "")
            + f"; corpus dependence above noise up to lag {dep.longest_signal_lag} of "
            f"{int(self.lag_geometry.lags[-1])}"
            + ("" if measured and "past L0" in measured[0] else "; a geometric score, not a loss")
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
            "rank_by": self.ranking,
            "lag_stress_kind": self.rank_by,
            "estimator": self.lag_geometry.estimate.estimator,
            "n_replicates": self.n_replicates,
            "ranking_stability": self.stability,
            "best": self.recommended.name,
            "lowest_lag_stress": self.by_stress.name,
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
        from posgeom.io._atomic import atomic_write_text
        from posgeom.io.artifacts import save_artifact

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
