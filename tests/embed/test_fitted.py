"""``fit_mds_family``: the MDS family fitted to one target in one call, checked against the
definitions (a truncation is the leading coordinates; SMACOF lowers the stress it starts from;
the rank curve's explained variance is the eigenvalues' cumulative share)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from posgeom.embed import classical_mds, fit_mds_family
from posgeom.scores.table import ScoreTargets


@pytest.fixture(scope="module")
def target():
    rng = np.random.default_rng(0)
    return squareform(pdist(rng.normal(size=(12, 3)) ** 3))  # not Euclidean in 3-D: SMACOF works


def test_the_family_fitted_in_one_record(target):
    mds = classical_mds(target, 6, model_dim=16)
    fit = fit_mds_family(
        mds, ScoreTargets.for_target(target, 12), refine=True, low_rank=2, max_rank=4
    )
    assert fit.mds is mds
    np.testing.assert_array_equal(fit.low_rank.coordinates, mds.coordinates[:, :2])
    assert fit.refined is not None
    assert fit.refined.final_stress <= fit.refined.initial_stress
    assert [c["rank"] for c in fit.rank_curve] == [1, 2, 3, 4]
    lam = np.clip(mds.eigenvalues, 0, None) / mds.total_variance
    for c in fit.rank_curve:
        assert c["explained_variance"] == pytest.approx(lam[: c["rank"]].sum(), rel=1e-12)
    assert fit.summary["n_components"] == 6 and fit.summary["model_dim"] == 16
    assert fit.summary["eigenvalues"] == pytest.approx(mds.eigenvalues[:12].tolist())
    np.testing.assert_allclose(fit.arrays["mds_embedding"], mds.coordinates @ mds.placement.T)
    np.testing.assert_array_equal(fit.arrays["rank"], [1, 2, 3, 4])
    assert "refined_coordinates" in fit.arrays


def test_no_refinement_unless_asked(target):
    mds = classical_mds(target, 3, model_dim=8)
    fit = fit_mds_family(
        mds, ScoreTargets.for_target(target, 12), refine=False, low_rank=5, max_rank=8
    )
    assert fit.refined is None and "refined_coordinates" not in fit.arrays
    assert fit.low_rank.n_components == 3  # min(low_rank, r)
    assert len(fit.rank_curve) == 3  # min(max_rank, r)
