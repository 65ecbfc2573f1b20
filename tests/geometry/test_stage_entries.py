"""The geometry's two entry points of the main job, checked against hand computations:
:func:`posgeom.geometry.kept_positions` (counts -> ``mu_i`` and the kept positions) and
:func:`posgeom.geometry.analyse_target` (stationarity and noise floor of a target)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom.geometry import analyse_target, kept_positions
from posgeom.geometry.counts import count_matrix


def _counts() -> np.ndarray:
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 6, size=(7, 9))
    counts[2] = 0  # no samples: dropped with below_min="drop"
    counts[5, :] = [1, 0, 0, 0, 0, 0, 0, 0, 0]  # 1 sample: below min_samples=2
    return counts


def test_kept_positions_drop_the_rows_below_the_floor():
    counts = _counts()
    got = kept_positions(sp.csr_matrix(counts), min_samples=2, below_min="drop")
    keep = [0, 1, 3, 4, 6]
    assert got.input.n_positions == 7 and got.input.counts.shape == (7, 9)
    np.testing.assert_array_equal(got.distributions.positions, keep)
    np.testing.assert_array_equal(got.counts.counts.toarray(), counts[keep])
    mu = counts[keep] / counts[keep].sum(axis=1, keepdims=True)  # plug-in mu_i by hand
    np.testing.assert_allclose(np.asarray(got.distributions.probabilities()), mu, rtol=1e-12)
    totals = counts[keep].sum(axis=1)
    assert got.samples == {
        "min": float(totals.min()),
        "median": float(np.median(totals)),
        "max": float(totals.max()),
    }
    assert got.summary["n_positions"] == 5


def test_kept_positions_keep_the_recognised_input_when_nothing_is_dropped():
    counts = _counts() + 1
    cm = count_matrix(sp.csr_matrix(counts))
    got = kept_positions(cm)
    assert got.input is cm and got.counts is cm  # recognised once, not copied


def _toeplitz_target(n: int) -> np.ndarray:
    i = np.arange(n)
    return np.sqrt(np.abs(i[:, None] - i[None, :]).astype(float))  # a function of |i - j|


def test_analyse_target_on_an_exact_toeplitz_target():
    d = _toeplitz_target(8)
    got = analyse_target(d, None, np.arange(8), n_repeats=3, seed=0)
    assert got.noise is None and got.noise_summary is None  # not asked for
    assert got.stationarity_summary["toeplitz_r2"] == pytest.approx(1.0)
    np.testing.assert_allclose(got.toeplitz, d, atol=1e-12)  # its own best Toeplitz fit


def test_analyse_target_measures_the_noise_floor_or_says_why_not(caplog):
    rng = np.random.default_rng(1)
    counts = count_matrix(sp.csr_matrix(rng.integers(0, 20, size=(6, 5))))
    d = _toeplitz_target(6)
    got = analyse_target(
        d, None, np.arange(10, 16), noise_counts=counts, noise="split_half", n_repeats=3, seed=0
    )
    assert got.noise is not None and got.noise_summary["method"] == "split_half"
    assert set(got.noise_summary["untrusted_positions"]) <= set(range(10, 16))  # by position
    with caplog.at_level(logging.WARNING, logger="posgeom"):
        skipped = analyse_target(  # no counts to split: the floor is skipped, said in one line
            d,
            None,
            np.arange(6),
            noise_counts=np.eye(6) / 2,
            noise="split_half",
            n_repeats=3,
            seed=0,
        )
    assert skipped.noise is None and "noise floor skipped" in caplog.text
