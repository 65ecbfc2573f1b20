"""The layer-wise positional signal of a model over a corpus: :class:`LayerwiseSignal` (what
:func:`posgeom.models.layerwise.layerwise_positional_signal` returns), its per-layer rows and
their stress cells (:func:`stress_cells`, shared with the probes' model rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posgeom.text.markdown import markdown_table
from posgeom.text.schema import layer_columns

__all__ = ["LayerwiseSignal", "stress_cells"]


def stress_cells(stress: Any, intervals: Any, layer: int) -> dict[str, float]:
    """Layer ``layer``'s cells of a per-layer row: ``stress_<kind>`` of every kind of ``stress``
    (kind -> ``(L+1,)``), then ``stress_<kind>_low`` and ``_high`` of every interval."""
    cells = {f"stress_{kind}": float(values[layer]) for kind, values in (stress or {}).items()}
    for kind, iv in (intervals or {}).items():
        cells[f"stress_{kind}_low"] = float(iv.low[layer])
        cells[f"stress_{kind}_high"] = float(iv.high[layer])
    return cells


@dataclass(frozen=True, eq=False)
class LayerwiseSignal:
    """Per-layer positional signal of a model over a corpus (all arrays float64 unless noted).

    Attributes:
        means: per-position mean hidden states, shape ``(L+1, n, d)`` (layer 0 = embeddings).
        counts: tokens counted per position, shape ``(n,)`` int64.
        variance_explained: ``R^2`` per layer, shape ``(L+1,)`` (see :mod:`posgeom.models.layerwise`).
        distances: Euclidean distances between centred means, shape ``(L+1, n, n)``.
        stress: stress kind -> ``(L+1,)`` array against the target, or ``None`` without a target.
        layer_names: ``("embeddings", "1", ..., "L")``.
        include_special: whether special tokens were counted (see :mod:`posgeom.models.layerwise`).
        n_sequences: sequences read; n_truncated: how many were cut to the model's limit.
    """

    means: np.ndarray
    counts: np.ndarray
    variance_explained: np.ndarray
    distances: np.ndarray
    stress: dict[str, np.ndarray] | None
    layer_names: tuple[str, ...]
    include_special: bool
    n_sequences: int
    n_truncated: int = 0
    total_sum_squares: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_layers(self) -> int:
        """Number of rows (embedding output plus blocks), ``L + 1``."""
        return int(self.means.shape[0])

    @property
    def n_positions(self) -> int:
        return int(self.means.shape[1])

    @property
    def centred_means(self) -> np.ndarray:
        """``means`` minus their unweighted mean over positions, shape ``(L+1, n, d)``."""
        return self.means - self.means.mean(axis=1, keepdims=True)

    def layer_rows(self) -> list[dict[str, Any]]:
        """One dict per layer: its name, R^2, the mean distance between centred means over the
        ``n (n - 1)`` ordered pairs, and ``stress_<kind>`` of every stress kind."""
        n = self.n_positions
        pairs = max(n * (n - 1), 1)
        return [
            {
                "layer": name,
                "variance_explained": float(self.variance_explained[layer]),
                "mean_distance": float(self.distances[layer].sum() / pairs),
                **stress_cells(self.stress, None, layer),
            }
            for layer, name in enumerate(self.layer_names)
        ]

    def to_table(self, *, digits: int = 4) -> str:
        """Markdown table: one row per layer with R^2, mean distance and every stress kind."""
        n = self.n_positions
        rows = self.layer_rows()
        columns = [(k, h, f".{digits}g" if f.endswith("g") else f) for k, h, f in layer_columns()]
        lines = markdown_table(rows, columns)
        special = "counted" if self.include_special else "excluded (positions re-indexed)"
        lines.append("")
        lines.append(
            f"{self.n_sequences} sequences, {int(self.counts.sum())} tokens counted over {n} "
            f"positions (min {int(self.counts.min())} per position); special tokens {special}"
            + (f"; {self.n_truncated} sequences truncated" if self.n_truncated else "")
            + "."
        )
        return "\n".join(lines)
