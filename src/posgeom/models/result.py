"""The result of :func:`posgeom.models.analysis.analyze_model`: :class:`ModelAnalysis`, with its
JSON form (:meth:`~ModelAnalysis.summary`), ``table.md`` (:meth:`~ModelAnalysis.markdown`), the
per-layer figure (:meth:`~ModelAnalysis.plot`) and the results folder (:meth:`~ModelAnalysis.save`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._version import __version__
from posgeom.io.jsonfiles import json_text
from posgeom.models.layer_signal import LayerwiseSignal, stress_cells
from posgeom.models.mechanisms import PositionalMechanism
from posgeom.text.hints import position0_hint
from posgeom.text.markdown import markdown_table, plugin_lines, score_table
from posgeom.text.schema import score_conventions
from posgeom.text.verdict import verdict_block
from posgeom.text.verdict_inputs import VerdictInputs, target_phrase

__all__ = ["ModelAnalysis"]


def _layer_key(name: str) -> str:
    """A score's key in per-layer rows (the stress kinds: ``stress_<kind>``)."""
    from posgeom.scores import get

    return get(name).key_in_layers


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """What :func:`analyze_model` computed (see :meth:`summary` for the JSON form).

    Attributes:
        model_name: the name or path given (or the class name of a loaded model).
        mechanisms: the model's positional mechanisms (detection order).
        encodings: key -> :class:`posgeom.encodings.PositionEncoding` of the mechanisms (n rows).
        counts: :class:`~posgeom.corpus.counting.PositionCounts` of the corpus at ``n``.
        geometry: :class:`~posgeom.pipeline.result.GeometryResult` on the target (its ``D``,
            its MDS ``mds``, its noise floor on the target's token classes, every encoding scored
            against it, the plug-in scores beside: ``geometry.plugin_scores``).
        signal: :class:`~posgeom.models.layer_signal.LayerwiseSignal` with ``stress`` against the
            target (:attr:`target`).
        options: every option that shaped the numbers.
        timings: seconds per step (tokenize, count, geometry, signal, intervals).
        target_geometry: the :class:`~posgeom.models.targets.AnalysisTarget` (the estimated
            geometry the signal is scored against); ``None`` reads as the plug-in.
        plugin_stress: kind -> ``(L+1,)`` stress of the layers against the plug-in ``D`` (when
            the target is another estimator; else ``signal.stress`` is that).
        layer_intervals: kind -> :class:`~posgeom.uncertainty.bootstrap.VectorIntervals` of the
            layer stress against the target, from bootstrap replicates (or ``None``).
        layer_scores: every registered score (:func:`posgeom.scores.available`) -> ``(L+1,)``
            values of the layers against the target (``layer_violation_rate`` is one of them).
    """

    model_name: str
    corpus_name: str
    mechanisms: tuple[PositionalMechanism, ...]
    encodings: dict[str, Any]
    counts: Any
    geometry: Any
    signal: LayerwiseSignal
    options: dict[str, Any]
    model_info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    layer_scores: dict[str, np.ndarray] | None = None
    target_geometry: Any = None
    plugin_stress: dict[str, np.ndarray] | None = None
    layer_intervals: dict[str, Any] | None = None

    @property
    def layer_violation_rate(self) -> np.ndarray | None:
        """``(L+1,)`` violation rates of the layers against the target (``layer_scores``)."""
        return (self.layer_scores or {}).get("violation_rate")

    @property
    def target_estimator(self) -> str:
        """The estimator of the target (``"plugin"``: the paper's plug-in chord)."""
        return "plugin" if self.target_geometry is None else self.target_geometry.estimator

    @property
    def plugin_scores(self) -> dict[str, dict[str, float]]:
        """Encoding -> scores against the plug-in ``D`` (empty when the target is the plug-in:
        then ``geometry.scores`` are those)."""
        return dict(self.geometry.plugin_scores)

    report_kind = "analyze-model"  # rendered by posgeom.reports (report(), Jupyter)
    report_title = "model analysis"

    def report_arrays(self) -> dict[str, np.ndarray]:
        """The arrays a report draws: the geometry's (``hellinger`` the target, ``plugin_hellinger``
        the plug-in beside it, the MDS of the target, the noise floor and its mask)."""
        return dict(self.geometry.report_arrays())

    def _repr_html_(self) -> str:
        from posgeom.reports import repr_html

        return repr_html(self)

    @property
    def target(self) -> np.ndarray:
        """The ``(n, n)`` target the layers are scored against (chord convention)."""
        return self.geometry.distances

    @property
    def plugin_target(self) -> np.ndarray:
        """The ``(n, n)`` plug-in Hellinger chord matrix of the counts (full vocabulary)."""
        beside = self.geometry.plugin_distances
        return self.geometry.distances if beside is None else beside

    def layer_rows(self) -> list[dict[str, Any]]:
        """One dict per layer: name, variance explained, mean distance, every stress kind."""
        rows = self.signal.layer_rows()  # then the intervals, the plug-in stress, every score
        for layer, row in enumerate(rows):
            row |= stress_cells(None, self.layer_intervals, layer)
            for kind, values in (self.plugin_stress or {}).items():
                row[f"plugin_stress_{kind}"] = float(values[layer])
            for name, values in (self.layer_scores or {}).items():
                row[_layer_key(name)] = float(values[layer])
        return rows

    def peaks(self) -> dict[str, Any]:
        """Layer of the largest and smallest value of every stress kind and of R^2."""
        sig = self.signal
        series = {f"stress_{kind}": (v, False) for kind, v in (sig.stress or {}).items()}
        series["variance_explained"] = (sig.variance_explained, True)  # NaN: no variance
        out: dict[str, Any] = {}
        for key, (values, nan) in series.items():
            arg_max, arg_min = (np.nanargmax, np.nanargmin) if nan else (np.argmax, np.argmin)
            high, low = int(arg_max(values)), int(arg_min(values))
            out[key] = {
                "max_layer": sig.layer_names[high],
                "max": float(values[high]),
                "min_layer": sig.layer_names[low],
                "min": float(values[low]),
            }
        return out

    def summary(self) -> dict[str, Any]:
        counts = self.counts
        totals = np.asarray(counts.totals)
        geometry = self.geometry.summary()
        geometry.pop("verdict", None)  # the plug-in pipeline's; the analysis's own is below
        out = {
            "posgeom_version": __version__,
            "model": {"name": self.model_name, **self.model_info},
            "mechanisms": [m.summary() for m in self.mechanisms],
            "mechanism_layers": [  # the per-layer map: which blocks each acts on ("none": no position)
                {
                    "kind": m.kind,
                    "layers": None if m.layers is None else list(m.layers),
                    "stack": m.stack,
                }
                for m in self.mechanisms
            ],
            "corpus": {
                "name": self.corpus_name,
                "n_sequences": int(counts.n_sequences),
                "n_tokens_counted": int(counts.n_tokens),
                "n_truncated": int(self.signal.n_truncated or self.options.get("n_truncated", 0)),
                "samples_per_position": {
                    "min": int(totals.min()),
                    "median": float(np.median(totals)),
                    "max": int(totals.max()),
                },
                "tokenizer": counts.tokenizer,
                "fingerprint": counts.fingerprint,
            },
            "options": self.options,
            "conventions": {
                "target": f"{self.target_estimator} estimate of the Hellinger chord geometry "
                "D_ij = ||sqrt(mu_i) - sqrt(mu_j)|| of the positional distributions, range "
                "[0, sqrt 2] (plugin: the chord of the observed frequencies)",
                "plugin": "position_encodings_plugin, geometry.plugin_scores and plugin_stress_* "
                "are scored against the plug-in chord of the observed frequencies (full "
                "vocabulary); position_encodings, geometry (its D, mds, noise floor, scores) and "
                "the layers' stress_* against the target",
                "intervals": "stress_<kind>_low/high: bootstrap intervals (half-sample replicates "
                "of the counts, target re-estimated on each; posgeom.uncertainty.bootstrap)",
                "layer_signal": "per-position mean hidden state m_l(i), centred over positions; "
                "Euclidean distances between centred means scored against D",
                **score_conventions(),
                "variance_explained": "R^2_l = sum_i c_i ||m_l(i) - m_l||^2 / "
                "sum_tokens ||h_l(t) - m_l||^2",
                "layers": "layer 'embeddings' is the embedding output (token + position + type, "
                "after LayerNorm); layer k is the output of block k",
            },
            "layers": self.layer_rows(),
            "peaks": self.peaks(),
            "position_encodings": {
                key: self.geometry.scores[key]
                for key in self.encodings
                if key in self.geometry.scores
            },
            "position_encodings_plugin": {
                key: self.plugin_scores[key] for key in self.encodings if key in self.plugin_scores
            },
            "layer_intervals": {k: v.as_dict() for k, v in (self.layer_intervals or {}).items()},
            "geometry": geometry,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }
        hint = position0_hint(self.geometry.distances, counted=self.options["include_special"])
        out["hints"] = [hint] if hint else []  # the terminal, table.md and report read it here
        out["verdict"] = verdict_block(self.report_kind, out)
        return out

    def markdown(self) -> str:
        """``table.md``: the per-layer table and the scores of the position encodings."""
        s = self.summary()
        corpus = s["corpus"]
        lines = [
            f"# {self.model_name} on {self.corpus_name}",
            "",
            f"n = {self.signal.n_positions} positions; {corpus['n_sequences']} sequences; "
            f"samples per position {corpus['samples_per_position']['min']} .. "
            f"{corpus['samples_per_position']['max']}; special tokens "
            + ("counted" if self.options["include_special"] else "excluded (re-indexed)")
            + (f"; {corpus['n_truncated']} sequences truncated" if corpus["n_truncated"] else "")
            + f". {target_phrase(VerdictInputs.from_dict(s['verdict']['inputs']))} (Hellinger "
            "chord distances"
            + ("" if self.target_estimator == "plugin" else "; plug-in scores beside")
            + ").",
            "",
            "Mechanisms: " + "; ".join(s["mechanisms"]),
            "",
            "## Layer-wise positional signal",
            "",
        ]
        lines += self._layer_table(s["layers"])
        lines += ["", f"## Encodings against the target ({self.target_estimator})", ""]
        lines += score_table(self.geometry.scores)
        lines += plugin_lines(self.plugin_scores)
        lines += ["", s["verdict"]["line"], *(f"hint: {h}" for h in s["hints"])]
        return "\n".join(lines) + "\n"

    def _layer_table(self, rows: list[dict[str, Any]]) -> list[str]:
        """Markdown rows of :func:`posgeom.text.schema.layer_table` (the report's too)."""
        from posgeom.text.schema import layer_table

        levels = [iv.level for iv in (self.layer_intervals or {}).values()]
        return markdown_table(*layer_table(rows, levels[0] if levels else None))

    def plot(self, path: str | os.PathLike, *, title: str | None = None) -> Path:
        """PNG: scale-optimal stress, paper stress (log) and R^2 per layer (matplotlib, Agg;
        :func:`posgeom.models.plots.plot_layers`)."""
        from posgeom.models.plots import plot_layers

        return plot_layers(self, path, title=title)

    def save(self, directory: str | os.PathLike, *, plot: bool = True) -> Path:
        """Write ``summary.json``, ``arrays.npz`` (+ sidecar), ``table.md``, ``counts.npz`` and
        ``stress_per_layer.png`` into ``directory`` (wrap in
        :func:`posgeom.io.outputs.results_directory` for an all-or-nothing folder)."""
        from posgeom.io._atomic import atomic_write_text
        from posgeom.io.artifacts import save_artifact

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        sig = self.signal
        arrays: dict[str, Any] = {
            **self.report_arrays(),  # hellinger: the target; plugin_hellinger beside it
            "layer_counts": sig.counts,
            "layer_means": sig.means,
            "layer_distances": sig.distances,
            "variance_explained": sig.variance_explained,
        }
        for kind, values in (sig.stress or {}).items():
            arrays[f"stress_{kind}"] = values
        for name, values in (self.layer_scores or {}).items():  # those not saved as stress_<kind>
            if _layer_key(name) not in arrays:
                arrays[f"layer_{name}"] = values
        for kind, values in (self.plugin_stress or {}).items():
            arrays[f"plugin_stress_{kind}"] = values
        for kind, iv in (self.layer_intervals or {}).items():
            arrays[f"stress_{kind}_low"], arrays[f"stress_{kind}_high"] = iv.low, iv.high
        for key, enc in self.encodings.items():
            arrays[f"encoding_{key}"] = enc.vectors if enc.vectors is not None else enc.distances
        meta = {
            "model": self.model_name,
            "corpus": self.corpus_name,
            "options": self.options,
            "layer_names": list(sig.layer_names),
        }
        save_artifact(out / "arrays.npz", arrays, meta, kind="model_analysis")
        self.counts.save(out / "counts.npz")
        atomic_write_text(
            out / "summary.json",
            json_text(self.summary(), indent=2),
        )
        atomic_write_text(out / "table.md", self.markdown())
        if plot:
            self.plot(out / "stress_per_layer.png")
        return out
