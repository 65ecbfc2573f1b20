"""Lag geometry: corpus -> lag counts -> estimate -> geometry across lags.

Relative encodings (RoPE, ALiBi, T5) act on lags, and context-extension strategies differ in what
they do to lags never seen in training, so posgeom measures the statistics of token pairs at each
lag ``k``: distributions of ``(class of s_i, class of s_{i+k})`` over token classes the corpus
pins down (:mod:`~posgeom.lags.classes`), counted in one pass (:mod:`~posgeom.lags.counting`),
their estimated Hellinger geometry across lags and how far each is from independence
(:mod:`~posgeom.lags.geometry`), and the lag kernel of an encoding (:mod:`~posgeom.lags.kernels`)
to compare with it by the same stress machinery::

    classes = posgeom.lags.top_classes(np.bincount(ids), 30)
    counts = posgeom.lags.count_lags([ids], classes, lags=posgeom.lags.default_lags(8191))
    geo = posgeom.lag_geometry(counts)
    geo.distance(1, 2), geo.dependence.longest_signal_lag
"""

from __future__ import annotations

from posgeom.lags.classes import TokenClasses, embedding_classes, parse_classes, top_classes
from posgeom.lags.counting import LagCounts, count_lags, default_lags
from posgeom.lags.geometry import DependenceProfile, LagGeometry, dependence_profile, lag_geometry

__all__ = [
    "DependenceProfile",
    "LagCounts",
    "LagGeometry",
    "TokenClasses",
    "count_lags",
    "default_lags",
    "dependence_profile",
    "embedding_classes",
    "lag_geometry",
    "parse_classes",
    "top_classes",
]
