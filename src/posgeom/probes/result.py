"""The result of :func:`posgeom.probe`: what it measured, as JSON, Markdown and a results folder.

A :class:`ProbeResult` holds the table probes (:class:`~posgeom.probes.table.TableProbes`, when
the source has a position table) and, with a corpus, one row per layer merging the layer probes
(:mod:`posgeom.probes.layers`), the geometry (stress against the corpus, R²), the positional
part (:mod:`posgeom.probes.positional`) and the monotone channels
(:mod:`posgeom.probes.monotone`), plus the agreement (:mod:`posgeom.probes.agreement`).

Folder (:meth:`ProbeResult.save`): ``summary.json`` (``kind: "posgeom_probe"``; every estimate with
its interval, protocol and seeds; strict JSON, an undefined value ``null``), ``table.md`` and
``probe_layers.png`` (with layers, :func:`layer_figure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import printable
from posgeom._version import __version__
from posgeom.io.jsonfiles import json_text
from posgeom.probes.table import TableProbes
from posgeom.text.layer_verdict import layer_sentence

__all__ = ["ProbeResult", "layer_figure"]

SUMMARY_KIND = "posgeom_probe"


def _fmt(iv: dict[str, Any] | None, digits: int = 2, unit: str = "") -> str:
    if not iv:
        return ""
    return f"{iv['estimate']:.{digits}f}{unit} [{iv['low']:.{digits}f}, {iv['high']:.{digits}f}]"


#: Columns (key, header, format) of the table-probe row and of the per-layer rows, for
#: :func:`posgeom.text.markdown.markdown_table` and :func:`posgeom.reports.html.html_table`.
TABLE_COLUMNS = (
    ("table", "table, positions", "s"),
    ("absolute", "absolute MAE (positions) [95%]", "s"),
    ("order", "order error (%) [95%]", "s"),
    ("shuffled", "rows shuffled (%) [95%]", "s"),
    ("pairs", "pairs", "d"),
    ("runs", "seeds x folds", "s"),
)
LAYER_COLUMNS = (
    ("layer", "layer", "d"),
    ("linear", "linear probe MAE [95%]", "s"),
    ("mlp", "MLP probe MAE [95%]", "s"),
    ("stress_scale_optimal", "stress (scale-opt.)", ".3g"),
    ("stress_interval", "stress interval", "s"),
    ("share", "R² (position)", ".3g"),
    ("rank_energy99", "rank (99%)", ".3g"),
    ("top2_share", "top-2 share", ".3g"),
    ("monotone", "monotone channels", "d"),
)


def _noise_words(share: Any) -> str:
    if share is None:
        return ""
    return (
        f"; {100 * share:.0f}% of its position pairs are above twice their noise floor "
        "(the rest cannot be told from sampling noise)"
    )


def table_row(s: dict[str, Any]) -> dict[str, Any]:
    """The display row of table probes (their summary; intervals as text)."""
    p = s["protocol"]
    return {
        "table": f"{p['source']}, {p['positions'][0]}-{p['positions'][1] - 1}",
        "absolute": _fmt(s["absolute_mae"]),
        "order": _fmt(s["order_error_percent"]),
        "shuffled": _fmt(s.get("shuffled_order_error_percent")),
        "pairs": p["pairs"],
        "runs": f"{len(p['seeds'])} x {p['folds']}",
    }


def layer_row(r: dict[str, Any]) -> dict[str, Any]:
    """The display row of one layer (intervals as text; the stress interval as analyze-model's
    tables show it, 4 significant digits)."""
    low, high = r.get("stress_scale_optimal_low"), r.get("stress_scale_optimal_high")
    shown = "" if low is None or high is None else f"[{low:.4g}, {high:.4g}]"
    return {
        **r,
        "linear": _fmt(r.get("linear_mae")),
        "mlp": _fmt(r.get("mlp_mae")),
        "stress_interval": shown,
    }


def _series(rows: Sequence[dict[str, Any]], key: str) -> tuple[np.ndarray, ...] | None:
    if not rows or key not in rows[0]:
        return None
    est = np.array([r[key]["estimate"] for r in rows])
    low = np.array([r[key]["low"] for r in rows])
    high = np.array([r[key]["high"] for r in rows])
    return est, low, high


def layer_figure(summary: dict[str, Any]) -> Any:
    """The per-layer figure of one summary (matplotlib ``Figure``, no pyplot; extra ``plot``):
    the linear and MLP probe errors with their intervals (chance dashed) and, beside them, the
    scale-optimal stress against the corpus (left axis, its interval shaded when the rows have
    one) and the R² of position (right axis): two quantities, two axes."""
    from posgeom.reports.canvas import figure

    rows = summary["layers"]
    layers = np.array([r["layer"] for r in rows])
    fig = figure(7.5, 3.4)
    ax = fig.add_subplot(1, 2, 1)
    for key, label in (("linear_mae", "linear probe"), ("mlp_mae", "MLP probe")):
        s = _series(rows, key)
        if s is not None:
            ax.errorbar(
                layers,
                s[0],
                yerr=[s[0] - s[1], s[2] - s[0]],
                marker="o",
                ms=3,
                capsize=2,
                label=label,
            )
    chance = summary.get("options", {}).get("chance_mae")
    if chance is not None:
        ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    ax.set(xlabel="layer (0 = embeddings)", ylabel="MAE (positions)", title="position probes")
    ax.legend(fontsize=8)
    bx = fig.add_subplot(1, 2, 2)  # stress and R² on their own axes (different quantities)
    if "stress_scale_optimal" in rows[0]:
        stress = [r["stress_scale_optimal"] for r in rows]
        bx.plot(layers, stress, "o-", ms=3, color="C0", label="stress vs corpus")
        low = [r.get("stress_scale_optimal_low") for r in rows]
        if all(v is not None for v in low):
            high = [r["stress_scale_optimal_high"] for r in rows]
            bx.fill_between(layers, low, high, color="C0", alpha=0.2, lw=0)
        bx.set_ylabel("scale-optimal stress (vs corpus)", color="C0")
        rx = bx.twinx()
    else:
        rx = bx
    rx.plot(layers, [r["share"] for r in rows], "s-", ms=3, color="C1", label="R² of position")
    rx.set_ylabel("R² of position", color="C1")
    bx.set(xlabel="layer (0 = embeddings)", title="geometry")
    return fig


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """Everything one probe run measured (module docstring); build it with
    :func:`posgeom.probe`."""

    source: str
    table: TableProbes | None = None
    layers: tuple[dict[str, Any], ...] = ()
    agreement: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The JSON summary (module docstring)."""
        return {
            "kind": SUMMARY_KIND,
            "posgeom_version": __version__,
            "source": self.source,
            "table_probes": None if self.table is None else self.table.summary(),
            "layers": list(self.layers),
            "agreement": self.agreement,
            "options": self.options,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
            "verdict": self.verdict(),
        }

    def verdict(self) -> list[str]:
        """Plain words: what the table probes and the agreement say."""
        words = []
        t = self.table
        if t is not None:
            n, chance = t.n_positions, t.protocol["chance_mae"]
            a, o = t.absolute, t.order
            cut = 0.1 * chance  # the rule, said in the sentence: upper bound under 10% of chance
            readable = "linearly readable" if a.high < cut else "not linearly readable"
            words.append(
                f"Over {n} positions the table's positions are {readable} (absolute error "
                f"{a.estimate:.2f} positions, {a.level:.0%} interval [{a.low:.2f}, {a.high:.2f}]; "
                f"chance {chance:.1f}; readable means the interval ends under 10% of chance, "
                f"{cut:.2f}); its order is misread for {o.estimate:.1f}% of pairs "
                f"[{o.low:.1f}, {o.high:.1f}]"
                + (
                    ""
                    if t.shuffled_order is None
                    else f", against {t.shuffled_order.estimate:.1f}% for its rows shuffled"
                )
                + "."
            )
        if self.layers and "linear_mae" in self.layers[0]:
            words.append(self._best_layer_words())
        target = self.options.get("target")
        stored = self.layers and self.layers[0].get("stress_scale_optimal_low") is not None
        said = layer_sentence(self.layers, self.options.get("level") if stored else None)
        if said is not None:  # analyze-model's sentence: one layer only when separated
            words.append(f"By its stress against the corpus geometry, {said}.")
        if isinstance(target, dict):
            words.append(
                f"The layers' stress is against the {target.get('estimator')} estimate of the "
                f"corpus geometry ({target.get('classes') or 'resolution not recorded'})"
                + (
                    "; no direction of it rises above its sampling noise (not resolved)"
                    if target.get("resolved") is False
                    else ""
                )
                + _noise_words(target.get("noise_share"))
                + "."
            )
        if self.agreement:
            words += list(self.agreement["words"])
        return words

    def _best_layer_words(self) -> str:
        """The layer where a linear probe reads position best, or the layers that tie with it
        (their intervals reach below its upper bound): one layer only when separated."""
        best = min(self.layers, key=lambda r: r["linear_mae"]["estimate"])
        iv = best["linear_mae"]
        ties = [
            r["layer"]
            for r in self.layers
            if r is not best and r["linear_mae"]["low"] <= iv["high"]
        ]
        shown = f"{iv['estimate']:.2f} positions [{iv['low']:.2f}, {iv['high']:.2f}]"
        c = self.options.get("chance_mae")
        chance = "" if c is None or (isinstance(c, float) and not np.isfinite(c)) else f"{c:.3g}"
        if ties:
            named = ", ".join(str(x) for x in [best["layer"], *ties])
            return (
                f"Position is read best at layers {named} (tied: their intervals overlap that of "
                f"the lowest linear probe error, layer {best['layer']}, {shown} on held-out "
                f"sequences; chance {chance})."
            )
        return (
            f"Position is read best at layer {best['layer']} (linear probe error {shown} on "
            f"held-out sequences, separated from every other layer; chance {chance})."
        )

    def markdown(self) -> str:
        """``table.md``: the table probes, the per-layer table and the verdict."""
        from posgeom.text.markdown import markdown_table

        out = [f"# Position probes: {self.source}", ""]
        if self.table is not None:
            out += [*markdown_table([table_row(self.table.summary())], TABLE_COLUMNS), ""]
        if self.layers:
            out += [*markdown_table([layer_row(r) for r in self.layers], LAYER_COLUMNS), ""]
        if self.options.get("chance_mae") is not None:
            out.append(
                f"Chance MAE of the layer probes: {self.options['chance_mae']:.2f} positions."
            )
        out += ["", *self.verdict(), ""]
        return "\n".join(printable(line) for line in out)  # a source's name stays on its line

    def save(self, folder: str | Path, *, plot: bool = True) -> list[Path]:
        """Write ``summary.json``, ``table.md`` and (``plot`` and layers) ``probe_layers.png``
        into ``folder`` (inside :func:`posgeom.reports.results_folder`). Returns the paths."""
        folder = Path(folder)
        paths = [folder / "summary.json", folder / "table.md"]
        text = json_text(self.summary(), indent=1)
        paths[0].write_text(text + "\n", encoding="utf-8")
        paths[1].write_text(self.markdown(), encoding="utf-8")
        if plot and self.layers:
            path = folder / "probe_layers.png"
            layer_figure(self.summary()).savefig(path, dpi=110)
            paths.append(path)
        return paths
