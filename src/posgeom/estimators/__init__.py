"""Estimators of the positional Hellinger geometry of a corpus (not of one finite sample).

The plug-in matrix ``||sqrt(X_i / T_i) - sqrt(X_j / T_j)||`` is biased upwards by the sampling
noise of each position; this package estimates the geometry of the distributions themselves::

    est = posgeom.estimate_geometry(counts)                  # the recommended estimator
    est = posgeom.estimate_geometry(counts, estimator="plugin", coarsen="top:1000", pool=4)
    est.distances, est.estimator, est.diagnostics
    posgeom.stress(encoding, est)                             # scores, MDS accept an estimate
    posgeom.estimators.available()
    posgeom.classical_mds(est, 64)      # the factored Gram: implicit block Krylov above 1024 positions
    est.blocks()                        # distances block by block (long contexts, no (n, n))

Every estimator returns its estimate in factored form (``est.gram``,
``B = c J (S S^T - diag(b)) J``); the estimate is Euclidean (:mod:`posgeom.estimators.euclidean`;
``euclidean=False``: the raw squared chords clipped to ``[0, 2]``).

Estimators (each one's docstring has its formula, assumptions and reference):

=============  ==============================================================================
plugin         the paper's plug-in chord
corrected      squared chord minus the analytic (Poisson-unbiased) sampling contribution
               ``b_i + b_j`` (the recommended default)
split_half     squared chord minus the split-half noise floor
polynomial     Jiao–Venkat–Han–Weissman: best polynomial approximation of ``sqrt`` on the small
               probabilities (unbiased via falling factorials), bias-corrected plug-in elsewhere
=============  ==============================================================================

Every estimate states its token classes (``est.resolution``, ``est.class_map``,
``est.classes``; :mod:`posgeom.estimators.resolution`). Transforms:
:mod:`posgeom.estimators.transforms`; smoothing over positions: :mod:`posgeom.estimators.smoothing`.
"""

from __future__ import annotations

from posgeom._discovery import import_public_modules
from posgeom.estimators._core import (
    RECOMMENDED,
    Estimator,
    GeometryEstimate,
    available,
    choose_estimator,
    get,
    register,
)
from posgeom.estimators.api import estimate_geometry
from posgeom.estimators.corrected import squared_mean_root
from posgeom.estimators.resolution import auto_resolution, describe_resolution, resolve
from posgeom.estimators.transforms import (
    coarsen_counts,
    equal_sample_counts,
    pool_counts,
    pool_edges,
    pool_encoding,
)

import_public_modules(__name__, __path__)  # a new module is found: one file, no list

__all__ = [
    "RECOMMENDED",
    "Estimator",
    "GeometryEstimate",
    "auto_resolution",
    "available",
    "choose_estimator",
    "coarsen_counts",
    "describe_resolution",
    "equal_sample_counts",
    "estimate_geometry",
    "get",
    "pool_counts",
    "pool_edges",
    "pool_encoding",
    "register",
    "resolve",
    "squared_mean_root",
]
