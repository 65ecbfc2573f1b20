"""Geometry estimators against independent references (limits, enumeration, hand-computed values)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from estimator_checks import check_estimator
from scipy.stats import binom, poisson

import posgeom
from posgeom import PosgeomError, hellinger_distances, positional_distributions
from posgeom.estimators import (
    available,
    estimate_geometry,
    get,
    squared_mean_root,
)
from posgeom.estimators.polynomial import _falling_ratio, best_sqrt_polynomial
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


def _counts(n=6, vocab=40, seed=0, high=400, low=100, structure="drift"):
    mu = zipf_distributions(n, vocab, structure=structure, strength=2.0, seed=seed)
    return mu, sample_counts(mu, decaying_totals(n, high=high, low=low), seed=seed)


def test_registry_and_recommended():
    assert {"plugin", "corrected", "split_half", "polynomial"} <= set(available())
    _, c = _counts()
    assert estimate_geometry(c).estimator == "corrected"
    for name in available():
        assert "Reference" in get(name).doc or "arXiv" in get(name).doc
    with pytest.raises(PosgeomError, match=r"available: recommended.*plugin"):
        estimate_geometry(c, estimator="nope")
    assert posgeom.estimate_geometry is estimate_geometry


@pytest.mark.parametrize("convention", ["chord", "normalized"])
def test_plugin_is_exactly_todays_hellinger(convention):
    _, c = _counts()
    est = estimate_geometry(c, estimator="plugin", convention=convention)
    ref = hellinger_distances(positional_distributions(c), convention=convention)
    np.testing.assert_array_equal(est.distances, ref)
    np.testing.assert_array_equal(
        estimate_geometry(c.counts.toarray(), estimator="plugin").distances,
        hellinger_distances(positional_distributions(c)),
    )
    assert not est.distances.flags.writeable
    np.testing.assert_array_equal(est.totals, c.totals)
    np.testing.assert_array_equal(est.positions, np.arange(6))


@pytest.mark.parametrize("name", available())
def test_every_registered_estimator_passes_the_common_checks(name):
    check_estimator(name)


def test_an_estimator_is_one_file():
    """The ARCHITECTURE.md example (tests/estimators/estimator_example.py), imported in a fresh process: it
    is listed, passes the common checks, equals a hand computation and is offered by the CLI."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = """
import numpy as np, scipy.sparse as sp
import posgeom.estimators as E
from posgeom.cli.main import build_parser
import estimator_example
from estimator_checks import check_estimator
assert "kt_smoothed" in E.available()
check_estimator("kt_smoothed")
x = np.array([[3, 0, 1], [0, 2, 2]])
p = (x + 0.5) / (x.sum(1, keepdims=True) + 1.5)
want = np.sqrt(((np.sqrt(p[0]) - np.sqrt(p[1])) ** 2).sum())
got = E.estimate_geometry(
    sp.csr_matrix(x), estimator="kt_smoothed", resolution="full"
).distances[0, 1]
np.testing.assert_allclose(got, want, rtol=1e-12)
sub = build_parser()._subparsers._group_actions[0].choices["run"]
assert "kt_smoothed" in sub.format_help()
print("ok")
"""
    here = Path(__file__).parent
    paths = [str(here), str(here.parent), *sys.path]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(("name", "share"), [("corrected", 0.1), ("split_half", 0.25)])
def test_corrected_goes_to_zero_for_one_distribution(name, share):
    """Two samples of one distribution: the plug-in squared chord is b_1 + b_2 > 0; the corrected
    one is centred on 0 (unclipped mean well below the plug-in's) and the distance vanishes."""
    mu = zipf_distributions(1, 200, structure="stationary", exponent=1.1)
    two = np.vstack([mu, mu])
    for total in (1000, 10000, 100000):
        raw, plug, dist = [], [], []
        for seed in range(8):
            c = sample_counts(two, np.array([total, total]), seed=seed)
            rng = np.random.default_rng(seed)
            raw.append(get(name).squared(c.counts, c.totals.astype(float), rng=rng)[0, 1])
            plug.append(estimate_geometry(c, estimator="plugin").distances[0, 1] ** 2)
            dist.append(estimate_geometry(c, estimator=name, seed=seed).distances[0, 1])
        assert abs(np.mean(raw)) < share * np.mean(plug)  # split-half under-corrects at small T
    assert np.mean(dist) < 0.02 and np.mean(dist) < 0.3 * np.sqrt(np.mean(plug))


def test_squared_mean_root_hand_values_and_poisson_identity():
    h = squared_mean_root(np.arange(4))
    np.testing.assert_allclose(h, [0.0, 0.0, 2.0, 6 * np.sqrt(2) - 6], rtol=1e-13, atol=1e-14)
    k = np.arange(400)
    for lam in (0.05, 0.7, 3.0, 25.0, 120.0):
        pmf = poisson.pmf(k, lam)
        lhs = np.sum(pmf * squared_mean_root(k))
        rhs = np.sum(pmf * np.sqrt(k)) ** 2
        np.testing.assert_allclose(lhs, rhs, rtol=1e-9 if lam < 100 else 1e-4, atol=1e-12)


def _multinomial_outcomes(total, vocab):
    for cut in itertools.combinations(range(total + vocab - 1), vocab - 1):
        edges = (-1, *cut, total + vocab - 1)
        yield np.array([edges[t + 1] - edges[t] - 1 for t in range(vocab)])


def test_expectations_by_enumerating_every_multinomial_outcome():
    """E D̂²_ij = 2 - 2 <m_i, m_j> and E D̃²_ij = sum_t E h(X_it)/T_i + E h(X_jt)/T_j - 2 m_it m_jt,
    with m and E h from the binomial marginals (scipy), for V = 3, T = (4, 5)."""
    p = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    totals = (4, 5)
    outcomes = [list(_multinomial_outcomes(t, 3)) for t in totals]
    probs = [
        [float(np.prod([binom.pmf(0, 1, 0) or 1]) * _multinomial_pmf(x, t, p[i])) for x in outs]
        for i, (outs, t) in enumerate(zip(outcomes, totals, strict=True))
    ]
    exp_plug = exp_corr = 0.0
    for (xa, pa), (xb, pb) in itertools.product(
        zip(outcomes[0], probs[0], strict=True), zip(outcomes[1], probs[1], strict=True)
    ):
        c = sp.csr_matrix(np.vstack([xa, xb]))
        tot = np.array(totals, dtype=float)
        exp_plug += pa * pb * get("plugin").squared(c, tot, rng=None)[0, 1]
        exp_corr += pa * pb * get("corrected").squared(c, tot, rng=None)[0, 1]
    k = [np.arange(t + 1) for t in totals]
    m = np.array(
        [
            [np.sum(binom.pmf(k[i], totals[i], q) * np.sqrt(k[i] / totals[i])) for q in p[i]]
            for i in range(2)
        ]
    )
    eh = np.array(
        [
            [
                np.sum(binom.pmf(k[i], totals[i], q) * squared_mean_root(k[i])) / totals[i]
                for q in p[i]
            ]
            for i in range(2)
        ]
    )
    np.testing.assert_allclose(exp_plug, 2 - 2 * m[0] @ m[1], rtol=1e-12)
    np.testing.assert_allclose(exp_corr, eh.sum() - 2 * m[0] @ m[1], rtol=1e-12)


def _multinomial_pmf(x, total, p):
    from scipy.stats import multinomial

    return multinomial.pmf(x, total, p)


def test_falling_factorials_are_unbiased_for_monomials():
    total, p = 9, 0.23
    k = np.arange(total + 1)
    pmf = binom.pmf(k, total, p)
    for order in range(5):
        est = _falling_ratio(k.astype(float), np.full(k.size, float(total)), order)
        np.testing.assert_allclose(np.sum(pmf * est), p**order, rtol=1e-12)


@pytest.mark.parametrize("degree", [2, 4, 6, 8])
def test_remez_is_the_best_uniform_approximation(degree):
    x = np.linspace(0, 1, 100001) ** 2
    best = np.abs(np.polyval(best_sqrt_polynomial(degree)[::-1], x) - np.sqrt(x)).max()
    cheb = np.polynomial.Chebyshev.interpolate(np.sqrt, degree, domain=[0, 1])
    interp = np.abs(cheb(x) - np.sqrt(x)).max()
    assert best <= interp * (1 + 1e-9)
    assert best >= interp / (2 + 2 / np.pi * np.log(degree + 1))  # Chebyshev is near-best
    err = np.polyval(best_sqrt_polynomial(degree)[::-1], x) - np.sqrt(x)
    sign_changes = np.count_nonzero(np.diff(np.sign(err[np.abs(err) > 0.5 * best])))
    assert sign_changes >= degree + 1  # equioscillation at degree + 2 points


def test_estimates_are_seeded():
    _, c = _counts()
    for name in ("split_half", "polynomial"):
        a = estimate_geometry(c, estimator=name, seed=3).distances
        np.testing.assert_array_equal(a, estimate_geometry(c, estimator=name, seed=3).distances)
        assert not np.array_equal(a, estimate_geometry(c, estimator=name, seed=4).distances)


def test_too_few_samples_names_the_position():
    c = np.array([[5, 3, 0], [1, 0, 0], [2, 2, 2]])
    with pytest.raises(
        PosgeomError, match=r"position 1 has 1 .*coarsen the vocabulary.*pool positions"
    ):
        estimate_geometry(c, estimator="split_half")
    with pytest.raises(PosgeomError, match=r"needs at least 8 samples per bucket.*bucket 1 has 6"):
        estimate_geometry(c, estimator="polynomial", pool=[0, 2])
    with pytest.raises(PosgeomError, match="non-negative integers"):
        estimate_geometry(np.array([[0.5, 0.5], [0.2, 0.8]]))
    np.testing.assert_array_equal(  # the plug-in needs one sample
        estimate_geometry(c, estimator="plugin").distances,
        hellinger_distances(positional_distributions(c)),
    )
