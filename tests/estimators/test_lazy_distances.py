"""The default MDS step and `geometry` path allocate no (n, n) array; the Euclidean estimate's
matrix is made only when asked for."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

import posgeom.scores.table as score_table
from helpers.pipeline import default_rows
from posgeom import analyze, classical_mds, estimate_geometry
from posgeom.estimators.euclidean import pairs_above
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions

N = 4096  # one (n, n) float64 is 128 MiB: far above everything else these paths hold


@pytest.fixture(scope="module")
def long_counts():
    mu = zipf_distributions(N, 400, exponent=1.1, seed=5)
    return sample_counts(mu, decaying_totals(N, high=900, low=200), seed=6)


def _peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_default_mds_step_allocates_no_square_matrix(long_counts):
    (est, mds), peak = _peak(lambda: (e := estimate_geometry(long_counts), classical_mds(e, 64)))
    assert est.diagnostics["dense"] and est.coordinates is not None  # n <= DENSE_MAX_N
    assert est._distances is None  # not made: MDS reads the coordinates
    assert peak < N * N * 8 / 4, f"peak {peak / 2**20:.0f} MiB"
    k = est.coordinates.shape[1]
    np.testing.assert_allclose(mds.coordinates[:, :k], est.coordinates, atol=1e-12)
    # asked for, the matrix is ||x_i - x_j|| (scipy pdist), read-only, and kept
    d = est.distances
    np.testing.assert_allclose(d, squareform(pdist(est.coordinates)), rtol=0, atol=1e-12)
    assert not d.flags.writeable and est.distances is d and np.asarray(est) is d


def test_the_geometry_path_above_the_sampling_threshold_holds_no_square_matrix(long_counts):
    assert N > score_table.SAMPLED_ABOVE
    res, peak = _peak(lambda: analyze(long_counts, default_rows(model_dim=32)))
    assert res.sampled and res.distances is None and res.estimate._distances is None
    # below one (n, n) float64 (128 MiB) by more than the blocked separation's fixed 1024-row
    # blocks (32 MiB each; with their temporaries the peak is 77-78 MiB under numpy 2.4 / scipy
    # 1.17, the same on the code of the last release: 0.6 n^2 had no margin left)
    assert peak < 0.7 * N * N * 8, f"peak {peak / 2**20:.0f} MiB"


def test_pairs_above_counts_as_the_dense_matrix():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((700, 5))
    d = pdist(x)
    for limit in (0.5, 2.0, np.median(d), 1e3):
        assert pairs_above(x, limit, block=128) == np.count_nonzero(d > limit)
