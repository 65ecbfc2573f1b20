"""The noise edge over several split-half null draws (parallel analysis at its top quantile).

References are computed by hand with numpy from ``null_roots`` (the thinned halves) and the
estimate's own counts, never from the edge code itself; the stationary corpora are signal-free
by construction (every position drawn from one distribution)."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom import count_positions, estimate_geometry
from posgeom.estimators.euclidean import NULL_DRAWS, null_roots
from posgeom.estimators.smoothing import position_smoother
from posgeom.synthetic import decaying_totals, sample_counts, sample_sequences, zipf_distributions


def _centred(g: np.ndarray) -> np.ndarray:
    n = g.shape[0]
    j = np.eye(n) - 1.0 / n
    return j @ g @ j


def _null_top(counts, seed: int, scale: float, w: np.ndarray | None = None) -> float:
    """``λ_1(c J W (D D^T - diag ||d_i||^2) W^T J)`` of one null draw, dense numpy."""
    d = null_roots(counts, seed).toarray()
    g = d @ d.T - np.diag(np.sum(d * d, axis=1))
    if w is not None:
        g = w @ g @ w.T
    return max(float(np.linalg.eigvalsh(scale * _centred(g))[-1]), 0.0)


def _stationary_decaying(seed: int):
    mu = zipf_distributions(40, 3000, structure="stationary")
    seqs = sample_sequences(mu, decaying_totals(40, high=1000, low=100), seed=seed)
    return count_positions(seqs, max_positions=40, vocab_size=3000)


def test_the_edge_is_the_largest_of_the_null_draws():
    c = sample_counts(zipf_distributions(30, 800, seed=2), np.full(30, 150), seed=3)
    est = estimate_geometry(c, seed=7)
    proj = est.diagnostics["projection"]
    counts, scale = est.class_counts, est.gram.scale
    tops = [_null_top(counts, 7 + j, scale) for j in range(NULL_DRAWS)]
    assert proj["null_draws"] == NULL_DRAWS == 19
    np.testing.assert_allclose(proj["null_edge"], max(tops), rtol=1e-9)
    np.testing.assert_allclose(proj["null_median"], np.median(tops), rtol=1e-9)
    np.testing.assert_allclose(proj["null_min"], min(tops), rtol=1e-9)
    spectrum = np.linalg.eigvalsh(est.gram.dense())
    tau = max(max(tops), -spectrum[0])
    np.testing.assert_allclose(proj["threshold"], tau, rtol=1e-9)
    assert proj["kept_rank"] == max(int(np.sum(spectrum > tau)), 1)


def test_a_stationary_corpus_with_decaying_samples_keeps_no_noise_direction():
    """Seed 0: the earlier rule (one null draw) kept 2 noise directions; the new edge keeps
    none (unresolved: only the leading direction, with a warning)."""
    c = _stationary_decaying(0)
    est = estimate_geometry(c)
    proj = est.diagnostics["projection"]
    spectrum = np.linalg.eigvalsh(est.gram.dense())[::-1]
    one_draw = max(_null_top(est.class_counts, 0, est.gram.scale), -spectrum[-1])
    assert int(np.sum(spectrum > one_draw)) == 2  # the earlier rule's kept rank
    assert not proj["resolved"] and proj["kept_rank"] == 1
    assert spectrum[0] < proj["threshold"]


def test_signal_free_top_directions_pass_about_one_time_in_twenty():
    """Equal samples, 20 stationary corpora: the top eigenvalue of B~ is one more exchangeable
    draw of the null's, so it clears the max of 19 draws about 1 time in 20 (measured 1 of 20;
    the single-draw rule: 12 of 20)."""
    mu = zipf_distributions(40, 3000, structure="stationary")
    resolved = 0
    for seed in range(20):
        seqs = sample_sequences(mu, np.full(40, 300), seed=seed)
        est = estimate_geometry(count_positions(seqs, max_positions=40, vocab_size=3000))
        resolved += est.diagnostics["projection"]["resolved"]
    assert resolved <= 3  # binomial(20, 0.05): P(> 3) = 0.016


def test_the_smoothed_estimate_uses_the_same_rule():
    c = sample_counts(zipf_distributions(30, 800, seed=2), np.full(30, 150), seed=3)
    est = estimate_geometry(c, smooth=0.2, seed=4)
    proj = est.diagnostics["projection"]
    scale = estimate_geometry(c, seed=4).gram.scale
    w = position_smoother(30, 0.2)
    tops = [_null_top(est.class_counts, 4 + j, scale, w) for j in range(NULL_DRAWS)]
    assert proj["null_draws"] == NULL_DRAWS
    np.testing.assert_allclose(proj["null_edge"], max(tops), rtol=1e-8)


@pytest.mark.parametrize("smooth", [None, 0.2])
def test_the_edge_is_seeded(smooth):
    c = sample_counts(zipf_distributions(30, 800, seed=2), np.full(30, 150), seed=3)
    opts = {} if smooth is None else {"smooth": smooth}
    a, b, other = (estimate_geometry(c, seed=s, **opts) for s in (1, 1, 1 + NULL_DRAWS))
    assert a.diagnostics["projection"] == b.diagnostics["projection"]
    np.testing.assert_array_equal(np.asarray(a.distances), np.asarray(b.distances))
    assert other.diagnostics["projection"]["null_edge"] != a.diagnostics["projection"]["null_edge"]
