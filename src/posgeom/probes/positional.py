"""The positional part of hidden states and its rank (Song & Zhong 2023, "Uncovering hidden
geometry in Transformers via disentangling position and context", arXiv 2310.04861).

A hidden state splits into ``h(t) = m(i) + c(t)``: ``m(i)``, the mean hidden state of position
``i`` over the corpus (the positional part, :class:`posgeom.models.accumulate.LayerMoments`
``means``), and the residual ``c(t)`` (the contextual part). Per layer:

* **share**: the variance explained by position, ``R² = Σ_i c_i ||m(i) - m̄||² / Σ_t ||h(t) -
  m̄||²`` (``LayerMoments.variance_explained``);
* **rank**: effective ranks of the centred positional part ``M - 1 m̄ᵀ`` ``(n, d)`` from its
  squared singular values (:func:`posgeom.embed.rank.effective_ranks`: energy 0.99, entropy,
  participation ratio); Song & Zhong find it low (a curve of a few dimensions);
* **top-2 share**: the share of the positional part's variance in its first two directions
  (their "low-dimensional spiral").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.embed.rank import effective_rank

__all__ = ["positional_part"]


def positional_part(means: np.ndarray, variance_explained: np.ndarray) -> list[dict[str, Any]]:
    """One row per layer: ``share``, ``rank_energy99``, ``rank_entropy``,
    ``rank_participation``, ``top2_share``; ``means`` ``(L+1, n, d)``."""
    rows = []
    for layer, m in enumerate(np.asarray(means, dtype=np.float64)):
        centred = m - m.mean(axis=0, keepdims=True)
        sv2 = np.linalg.svd(centred, compute_uv=False) ** 2
        total = float(sv2.sum())
        rows.append(
            {
                "layer": layer,
                "share": float(variance_explained[layer]),
                "rank_energy99": effective_rank(sv2, method="energy", energy=0.99),
                "rank_entropy": effective_rank(sv2, method="entropy"),
                "rank_participation": effective_rank(sv2, method="participation"),
                "top2_share": float(sv2[:2].sum() / total) if total > 0 else float("nan"),
            }
        )
    return rows
