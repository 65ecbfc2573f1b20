"""Smoothing over positions (``estimate_geometry(smooth=)``): the kernel, the smoothed estimate
against a numpy reference, known truths, a stationary corpus and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import spearmanr

from posgeom import estimate_geometry
from posgeom._errors import PosgeomError
from posgeom.estimators.smoothing import SLOPES, position_smoother
from posgeom.estimators.transforms import apply_classes
from posgeom.synthetic import sample_counts, zipf_distributions


def _local_linear_reference(n: int, slope: float, i: int) -> np.ndarray:
    """Row ``i`` of the smoother by weighted least squares (numpy's polyfit): the intercept at
    ``i`` of the line fitted to ``y`` with Gaussian weights is ``w @ y``; recover ``w`` by
    fitting the unit vectors."""
    k = np.arange(n, dtype=np.float64)
    g = np.exp(-0.5 * ((k - i) / (slope * i)) ** 2)
    return np.array([np.polyfit(k - i, e, 1, w=np.sqrt(g))[1] for e in np.eye(n)])


def test_the_smoother_is_local_linear_least_squares():
    n, slope = 30, 0.2
    w = position_smoother(n, slope)
    np.testing.assert_array_equal(w[:2], np.eye(n)[:2])  # h_0 = 0, h_1 = 0.2 < 0.3: identity
    for i in (5, 17, 29):
        np.testing.assert_allclose(w[i], _local_linear_reference(n, slope, i), atol=1e-10)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
    line = 0.3 + 0.07 * np.arange(n)  # local-linear: a linear trajectory is left unchanged
    np.testing.assert_allclose(w @ line, line, atol=1e-10)
    np.testing.assert_array_equal(position_smoother(n, 0.0), np.eye(n))


def _truth(mu: np.ndarray, class_map: np.ndarray) -> np.ndarray:
    p = apply_classes(sp.csr_matrix(mu), class_map).toarray()
    r = np.sqrt(p)
    g = r @ r.T
    q = np.diag(g)
    return np.sqrt(np.clip(q[:, None] + q[None, :] - 2.0 * g, 0.0, 2.0))


def test_the_smoothed_estimate_matches_a_numpy_reference():
    mu = zipf_distributions(24, 800, structure="three_regimes", seed=2)
    c = sample_counts(mu, np.full(24, 300), seed=0)
    slope = 0.2
    got = estimate_geometry(c, smooth=slope, euclidean="psd")
    raw = estimate_geometry(c, euclidean=False).gram.squared_chords()  # unclipped D~^2
    n = raw.shape[0]
    j = np.eye(n) - 1.0 / n
    w = np.eye(n)
    for i in range(n):
        if slope * i >= 0.3:
            w[i] = _local_linear_reference(n, slope, i)
    b = j @ w @ (-0.5 * j @ raw @ j) @ w.T @ j
    vals, vecs = np.linalg.eigh(0.5 * (b + b.T))
    x = vecs[:, vals > 1e-12] * np.sqrt(vals[vals > 1e-12])
    ref = np.sqrt(np.maximum(np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=2), 0.0))
    np.testing.assert_allclose(np.asarray(got.distances), ref, atol=1e-9)
    assert got.diagnostics["smoothing"] == {
        "slope": slope,
        "bandwidth_at_last": slope * 23,
        "chosen_by": "given",
    }


@pytest.mark.parametrize("structure", ["drift", "three_regimes"])
def test_auto_smoothing_recovers_a_smooth_truth_better(structure):
    # V 5,000, 300 samples per position: the noisy regime; the truth drifts smoothly
    mu = zipf_distributions(48, 5000, structure=structure, seed=1)
    iu = np.triu_indices(48, 1)
    gain = []
    for seed in range(3):
        c = sample_counts(mu, np.full(48, 300), seed=seed)
        plain, smooth = estimate_geometry(c), estimate_geometry(c, smooth="auto")
        truth = _truth(mu, plain.class_map)[iu]
        assert smooth.resolution == plain.resolution
        assert smooth.diagnostics["smoothing"]["slope"] > 0
        rho = [spearmanr(np.asarray(e.distances)[iu], truth).statistic for e in (plain, smooth)]
        gain.append(rho[1] - rho[0])
    assert min(gain) > 0 and np.mean(gain) > 0.02  # measured: +0.03 to +0.07


def test_a_stationary_corpus_stays_unresolved_and_shrinks():
    mu = zipf_distributions(40, 3000, structure="stationary")
    c = sample_counts(mu, np.full(40, 400), seed=4)
    plain, smooth = estimate_geometry(c), estimate_geometry(c, smooth="auto")
    assert smooth.diagnostics["smoothing"]["slope"] == SLOPES[-1]  # no structure: smooth most
    assert not smooth.diagnostics["projection"]["resolved"]
    iu = np.triu_indices(40, 1)
    assert np.median(np.asarray(smooth.distances)[iu]) < np.median(np.asarray(plain.distances)[iu])


def test_smooth_zero_is_the_default_and_auto_is_seeded():
    mu = zipf_distributions(20, 600, seed=3)
    c = sample_counts(mu, np.full(20, 200), seed=1)
    np.testing.assert_allclose(
        np.asarray(estimate_geometry(c, smooth=0).distances),
        np.asarray(estimate_geometry(c).distances),
        atol=1e-10,
    )
    a, b = (estimate_geometry(c, smooth="auto", seed=5) for _ in range(2))
    np.testing.assert_array_equal(np.asarray(a.distances), np.asarray(b.distances))
    assert len(a.diagnostics["smoothing"]["cv_error"]) == len(SLOPES)
    named = a.summary()["smoothing"]  # the JSON summary names the smoothing and its slope
    assert named["slope"] == a.diagnostics["smoothing"]["slope"] and "chosen_by" in named
    assert "smoothing" not in estimate_geometry(c).summary()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"estimator": "plugin"}, "noise model"),
        ({"pool": 2}, "do not combine"),
        ({"euclidean": False}, "Euclidean estimate"),
        ({"smooth": "lots"}, "'auto' or a slope"),
        ({"smooth": -0.1}, "'auto' or a slope"),
    ],
)
def test_refusals_name_the_problem(kwargs, message):
    c = sample_counts(zipf_distributions(10, 200), np.full(10, 100), seed=0)
    with pytest.raises(PosgeomError, match=message):
        estimate_geometry(c, **{"smooth": "auto", **kwargs})


def test_too_many_positions_or_too_few_samples_are_refused():
    wide = sp.csr_matrix(np.full((600, 4), 5, dtype=np.int64))
    with pytest.raises(PosgeomError, match="up to 512 positions"):
        estimate_geometry(wide, smooth=0.1)
    thin = np.full((12, 50), 0, dtype=np.int64)
    thin[:, :5] = 3
    thin[7] = 0
    thin[7, 0] = 1  # one sample at position 7: a half is empty there
    with pytest.raises(PosgeomError, match="give a slope"):
        estimate_geometry(sp.csr_matrix(thin), smooth="auto")
