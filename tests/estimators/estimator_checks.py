"""The checks every registered estimator passes (``test_estimators.py`` runs them over
``posgeom.estimators.available()``; ``test_an_estimator_is_one_file`` runs them on the example of
``tests/estimators/estimator_example.py``)."""

from __future__ import annotations

import numpy as np

from posgeom import hellinger_distances
from posgeom.estimators import estimate_geometry, get
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


def check_estimator(name: str) -> None:
    """Documented, a valid read-only distance matrix, deterministic under a seed, and the truth in
    the infinite-sample limit (exact distributions scaled to 1e8 samples per position)."""
    spec = get(name)
    assert spec.name == name and ("Reference" in spec.doc or "arXiv" in spec.doc), name
    mu = zipf_distributions(5, 30, structure="three_regimes", strength=2.0)
    counts = sample_counts(mu, decaying_totals(5, high=400, low=100), seed=0)
    est = estimate_geometry(counts, estimator=name, seed=3)
    d = est.distances
    assert d.shape == (5, 5) and d.dtype == np.float64 and not d.flags.writeable
    np.testing.assert_array_equal(d, d.T)
    assert np.all(np.diag(d) == 0) and np.all(d >= 0) and est.estimator == name
    np.testing.assert_array_equal(estimate_geometry(counts, estimator=name, seed=3).distances, d)
    huge = np.round(mu * 1e8).astype(np.int64)
    limit = estimate_geometry(huge, estimator=name).distances
    np.testing.assert_allclose(limit, hellinger_distances(mu), atol=1e-3)
