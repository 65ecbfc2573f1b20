"""MDS encodings as wrappers: checked against a hand-written classical MDS and known geometry."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.spatial.distance import pdist, squareform

import posgeom.encodings as enc
from posgeom._errors import PosgeomError
from posgeom.synthetic import synthetic_distributions


def _hellinger(mu: np.ndarray) -> np.ndarray:
    return squareform(pdist(np.sqrt(mu)))


def _classical_mds(d: np.ndarray, r: int) -> np.ndarray:
    n = d.shape[0]
    j = np.eye(n) - 1.0 / n
    w, v = np.linalg.eigh(-0.5 * j @ (d**2) @ j)
    order = np.argsort(w)[::-1][:r]
    return v[:, order] * np.sqrt(np.clip(w[order], 0, None))


def test_mds_of_drifting_corpus_is_sinusoidal():
    n, periods = 32, (64.0, 16.0)
    mu = synthetic_distributions(n, 64, kind="drifting", periods=periods, seed=1)
    target = _hellinger(mu)
    e = enc.mds(target, d=128)
    assert e.vectors.shape == (n, 128) and e.name == "mds"
    np.testing.assert_allclose(e.distances, target, atol=1e-9)  # exact Euclidean geometry
    i = np.arange(n)
    waves = np.column_stack([f(2 * np.pi * i / p) for p in periods for f in (np.cos, np.sin)])
    waves -= waves.mean(axis=0)
    coords = e.result.coordinates[:, :4]
    assert np.max(subspace_angles(coords, waves)) < 1e-6
    np.testing.assert_allclose(
        np.linalg.svd(coords, compute_uv=False),
        np.linalg.svd(_classical_mds(target, 4), compute_uv=False),
        rtol=1e-8,
    )
    np.testing.assert_allclose(e.result.eigenvalues[4:], 0.0, atol=1e-10)  # rank 2M = 4
    same = enc.get("mds", n, source=mu, d=128)  # distributions in, same geometry out
    np.testing.assert_allclose(same.distances, target, atol=1e-9)
    with pytest.raises(PosgeomError):
        enc.get("mds", n + 1, source=target)


def test_low_rank_mds_paper_parameter_count():
    mu = synthetic_distributions(32, 64, kind="three_regimes")
    target = _hellinger(mu)
    e = enc.low_rank_mds(target, rank=3, d=128)
    assert e.params["n_parameters"] == 480 and e.params["full_parameters"] == 4096
    assert e.params["parameter_reduction"] == pytest.approx(1 - 480 / 4096)
    assert np.linalg.matrix_rank(e.vectors) == 3
    np.testing.assert_allclose(e.distances, squareform(pdist(_classical_mds(target, 3))), atol=1e-9)
    np.testing.assert_allclose(e.factors.A @ e.factors.B.T, e.vectors)
    via_registry = enc.get("low_rank_mds", 32, source=target, rank=3, d=128)
    np.testing.assert_allclose(via_registry.distances, e.distances, atol=1e-12)


@pytest.mark.parametrize("name", ["mds", "low_rank_mds", "mds+smacof"])
def test_fitted_families_check_their_source_and_read_the_pipeline_fit(name):
    """The three fitted families share one build and one comparison row: ``source=`` is
    required and must have ``n_positions`` positions; the row is the pipeline's fit."""
    from posgeom.encodings._registry import ComparisonContext

    d = _hellinger(synthetic_distributions(6, 16, seed=2))
    with pytest.raises(PosgeomError, match=f"^{re.escape(name)} needs source="):
        enc.get(name, 6)
    with pytest.raises(PosgeomError, match=f"^{re.escape(name)}: the input has 6 positions, not 5"):
        enc.get(name, 5, source=d, d=8)
    assert enc.get(name, 6, source=d, d=8).n_positions == 6
    ctx = ComparisonContext(6, 6, 8, 2, 4, 10000.0, 0)
    if name == "mds+smacof":
        assert enc.family(name).encodings(ctx) == {}  # the pipeline refines only for n <= 2048
    else:
        with pytest.raises(PosgeomError, match="need the pipeline's MDS encoding"):
            enc.family(name).encodings(ctx)
    fit = enc.get(name, 6, source=d, d=8).result  # what the pipeline hands in
    row = enc.family(name).encodings(ComparisonContext(6, 6, 8, 2, 4, 1e4, 0, {name: fit}))
    assert row[name].encoding is fit and row[name].kept
    if name == "mds+smacof":
        assert row[name].parameters == 6 * 8
        return
    r = fit.n_components  # rank min(n - 1, d) = 5 (mds), the default rank 3 (low_rank_mds)
    assert r == {"mds": 5, "low_rank_mds": 3}[name]
    assert row[name].parameters == {"mds": 6 * 8, "low_rank_mds": r * (6 + 8)}[name]
    assert str(r) in row[name].description
