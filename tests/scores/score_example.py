"""The worked example of docs/ARCHITECTURE.md ("Adding a score"): the Shepard correlation.

The Pearson correlation of the encoding's pair distances with the target's over the pairs
``i < j``,

    r = sum (delta_ij - mean delta)(D_ij - mean D) / sqrt(sum (delta_ij - mean delta)^2
        sum (D_ij - mean D)^2),

the straight line through a Shepard plot: higher is better (1: the encoding's distances are an
increasing affine function of ``D``), range ``[-1, 1]``, undefined (0 here) when either side has
every distance equal (NoPE). It estimates the correlation of the population geometry ``D``
with the encoding's distances; the bootstrap gives it an interval. At long contexts it is the
same correlation over the sampled pairs ``(i, j)`` (uniform pairs: a consistent estimate), with
a Fisher-z interval. In the package this file would be ``src/posgeom/scores/shepard.py``;
``tests/scores/test_score_registry.py`` imports it in a fresh process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.scores import register


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    den = np.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / den if den > 0 else 0.0


def _sampled(pairs: Any) -> dict[str, Any]:
    """Over the sampled pairs ``(i, j)``: ``r`` with the Fisher-z interval
    ``tanh(atanh r +- z / sqrt(m - 3))``."""
    r = _pearson(pairs.delta_ij, pairs.sample.target_ij)
    half = pairs.z / np.sqrt(max(pairs.delta_ij.size - 3, 1))
    centre = np.arctanh(np.clip(r, -1 + 1e-15, 1 - 1e-15))
    return {
        "shepard_correlation": r,
        "shepard_correlation_ci": [float(np.tanh(centre - half)), float(np.tanh(centre + half))],
    }


@register(
    "shepard_correlation",
    column=("Shepard r", ".3f"),
    convention="higher is better (1: delta an increasing affine function of D); Pearson "
    "correlation of delta_ij with D_ij over the pairs i < j (0 when either is constant); "
    "range [-1, 1]",
    better="higher",
    bounds=(-1.0, 1.0),
    sampled=_sampled,
    order=50,
)
def shepard_correlation(delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> float:
    """Pearson correlation of ``delta_ij`` and ``D_ij``, ``i < j`` (module docstring)."""
    iu = np.triu_indices(delta.shape[0], 1)
    return _pearson(delta[iu], target[iu])
