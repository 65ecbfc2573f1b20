"""Coarsening, pooling, equal-sample resampling; estimates as targets of scores and MDS."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import posgeom
from posgeom import PosgeomError, classical_mds, hellinger_distances, positional_distributions
from posgeom._distance_matrix import euclidean_distances
from posgeom.encodings import alibi, sinusoidal
from posgeom.estimators import (
    coarsen_counts,
    estimate_geometry,
    pool_edges,
    pool_encoding,
)
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(10, 300, structure="drift", strength=2.0, periods=(8.0,))
    return sample_counts(mu, decaying_totals(10, high=2000, low=300), seed=1)


@pytest.mark.parametrize("name", ["plugin", "corrected", "polynomial"])
def test_identity_coarsening_and_width_one_pooling_change_nothing(counts, name):
    plain = estimate_geometry(counts, estimator=name, resolution="full").distances
    ident = estimate_geometry(counts, estimator=name, coarsen=np.arange(300))
    np.testing.assert_array_equal(ident.distances, plain)
    assert ident.vocab_size == 300
    np.testing.assert_array_equal(
        estimate_geometry(counts, estimator=name, coarsen=300).distances, plain
    )
    pooled = estimate_geometry(counts, estimator=name, pool=1, resolution="full")
    np.testing.assert_array_equal(pooled.distances, plain)
    np.testing.assert_array_equal(pooled.positions, np.arange(11))
    assert pooled.pooled


def test_coarsening_sums_classes_and_contracts(counts):
    rng = np.random.default_rng(0)
    classes = rng.integers(0, 7, size=300)
    coarse, info = coarsen_counts(counts.counts, classes)
    dense = counts.counts.toarray()
    ref = np.stack([dense[:, classes == k].sum(axis=1) for k in np.unique(classes)], axis=1)
    np.testing.assert_array_equal(coarse.toarray(), ref)
    assert info["n_classes"] == len(np.unique(classes))
    mu = zipf_distributions(6, 300, structure="blocks", n_blocks=3, strength=2.0)
    exact = np.round(mu * 1e7).astype(np.int64)
    full = estimate_geometry(exact, estimator="plugin").distances
    for spec in ("top:10", "bins:8", 50, classes):
        low = estimate_geometry(exact, estimator="plugin", coarsen=spec).distances
        assert np.all(low <= full + 1e-6)  # Hellinger contracts under coarse-graining
    top = estimate_geometry(exact, estimator="plugin", coarsen="top:10")
    order = np.argsort(-exact.sum(axis=0), kind="stable")
    manual = np.column_stack([exact[:, order[:10]], exact[:, order[10:]].sum(axis=1)])
    np.testing.assert_array_equal(
        top.distances, hellinger_distances(positional_distributions(manual))
    )


def test_class_map_must_cover_the_vocabulary(counts):
    with pytest.raises(PosgeomError, match=r"missing ids 250\.\.299"):
        estimate_geometry(counts, coarsen=np.zeros(250, dtype=int))
    partial = {t: t % 3 for t in range(300) if t not in (5, 17)}
    with pytest.raises(PosgeomError, match=r"2 token ids have no class \(first: \[5, 17\]\)"):
        estimate_geometry(counts, coarsen=partial)
    with pytest.raises(PosgeomError, match="not understood"):
        estimate_geometry(counts, coarsen="top:x")


def test_pool_edges_and_bad_edges():
    np.testing.assert_array_equal(pool_edges(4, 10), [0, 4, 8, 10])
    log = pool_edges("log:8", 64)
    assert log[0] == 0 and log[-1] == 64 and np.all(np.diff(log) > 0)
    np.testing.assert_array_equal(log[:5], [0, 1, 2, 3, 4])  # the first B/2 buckets are exact
    assert np.all(np.diff(np.diff(log[4:])) >= 0)  # then widths grow
    np.testing.assert_array_equal(pool_edges([0, 3, 5], 10), [0, 3, 5, 10])
    with pytest.raises(PosgeomError, match="increase strictly"):
        pool_edges([0, 5, 5], 10)
    with pytest.raises(PosgeomError, match=r"in \[0, 10\)"):
        pool_edges([0, 4, 12], 10)
    with pytest.raises(PosgeomError, match=r"in \[0, 10\)"):
        pool_edges([2, 4], 10)


def test_pooled_counts_are_bucket_sums_and_scores_pool_the_encoding(counts):
    est = estimate_geometry(counts, estimator="plugin", pool=[0, 2, 5, 9])
    dense = counts.counts.toarray()
    buckets = [dense[0:2].sum(0), dense[2:5].sum(0), dense[5:9].sum(0), dense[9:].sum(0)]
    ref = hellinger_distances(positional_distributions(np.stack(buckets)))
    np.testing.assert_array_equal(est.distances, ref)
    np.testing.assert_array_equal(est.totals, [b.sum() for b in buckets])
    enc = sinusoidal(10, d=16)
    delta = enc.distances
    sizes = [2, 3, 4, 1]
    starts = [0, 2, 5, 9]
    manual = np.array(
        [
            [
                0.0
                if a == b
                else delta[
                    starts[a] : starts[a] + sizes[a], starts[b] : starts[b] + sizes[b]
                ].mean()
                for b in range(4)
            ]
            for a in range(4)
        ]
    )
    np.testing.assert_allclose(pool_encoding(enc, est.positions), manual, rtol=1e-12)
    means = np.stack([enc.vectors[s : s + k].mean(0) for s, k in zip(starts, sizes, strict=True)])
    centroid = np.linalg.norm(means[:, None] - means[None], axis=-1)
    np.testing.assert_allclose(
        pool_encoding(enc, est.positions, rule="mean_vector"), centroid, atol=1e-12
    )
    assert posgeom.stress(enc, est) == pytest.approx(
        posgeom.stress(manual, est.distances), rel=1e-12
    )


def test_estimate_is_a_target_for_scores_and_mds(counts):
    est = estimate_geometry(counts)
    enc = alibi(10, head=0)
    assert posgeom.stress(enc, est) == posgeom.stress(enc, np.array(est.distances))
    a = posgeom.monotonicity_violation_rate(enc, est)
    b = posgeom.monotonicity_violation_rate(enc, np.array(est.distances))
    assert float(a) == float(b)
    # the Euclidean estimate: MDS reproduces it at full rank, explained variance sums to 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mds = classical_mds(est)
        as_matrix = classical_mds(np.array(est.distances))
    np.testing.assert_allclose(euclidean_distances(mds.coordinates), est.distances, atol=1e-10)
    assert mds.explained_variance_ratio.sum() == pytest.approx(1.0, abs=1e-12)
    kept = est.coordinates.shape[1]
    np.testing.assert_allclose(mds.eigenvalues[:kept], as_matrix.eigenvalues[:kept], rtol=1e-9)
    # the raw estimate: MDS of its factored Gram, -1/2 J D~^2 J of the unclipped D~^2
    raw = estimate_geometry(counts, euclidean=False)
    with pytest.warns(RuntimeWarning, match="negative eigenvalues.*sampling noise"):
        classical_mds(np.array(raw.distances), 3)
    sq = raw.gram.squared_chords()
    j = np.eye(10) - 1.0 / 10
    with pytest.warns(RuntimeWarning, match="negative eigenvalues"):
        m1 = classical_mds(raw, 3)
    ref = np.linalg.eigvalsh(-0.5 * j @ sq @ j)[::-1]
    np.testing.assert_allclose(m1.eigenvalues, ref, atol=1e-12)
    # the Euclidean estimate keeps the directions of that spectrum above its noise edge, the
    # larger of |lambda_min| and the split-half null's edge
    edge = est.diagnostics["projection"]["threshold"]
    assert edge == pytest.approx(max(-ref.min(), est.diagnostics["projection"]["null_edge"]))
    np.testing.assert_allclose((est.coordinates**2).sum(axis=0), ref[ref > edge], rtol=1e-9)


def test_spectrum_matches_scikit_bio(counts):
    """Negative eigenvalues of B as scikit-bio's pcoa reports them (its warning names the most
    negative and the largest eigenvalue); the count against B = -1/2 J D^2 J built here."""
    skbio = pytest.importorskip("skbio")
    from skbio.stats.ordination import pcoa

    est = estimate_geometry(counts, estimator="corrected", euclidean=False)
    assert est.diagnostics["negative_eigenvalues"] > 0  # clipped corrected chords: not Euclidean
    with pytest.warns(RuntimeWarning, match="negative-most eigenvalue") as record:
        pcoa(skbio.DistanceMatrix(np.array(est.distances)), warn_neg_eigval=True)
    low, top = (float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", str(record[0].message))[-2:])
    np.testing.assert_allclose(est.diagnostics["most_negative_eigenvalue"], low, rtol=1e-6)
    np.testing.assert_allclose(est.diagnostics["largest_eigenvalue"], top, rtol=1e-6)
    n = est.n_positions
    j = np.eye(n) - 1.0 / n
    vals = np.linalg.eigvalsh(-0.5 * j @ (np.array(est.distances) ** 2) @ j)
    assert est.diagnostics["negative_eigenvalues"] == int(np.sum(vals < -1e-8))
    assert est.spectrum() == {k: est.diagnostics[k] for k in est.spectrum()}
    assert estimate_geometry(counts, estimator="plugin").diagnostics["euclidean"]
    # the Euclidean estimate: its spectrum is the raw (unclipped) B~'s; pcoa sees no negatives
    euclid = estimate_geometry(counts)
    raw = np.linalg.eigvalsh(-0.5 * j @ euclid.gram.squared_chords() @ j)
    spectrum = euclid.spectrum()
    assert spectrum["most_negative_eigenvalue"] == pytest.approx(raw[0], rel=1e-9)
    assert spectrum["negative_eigenvalues"] == int(np.sum(raw < -1e-10 * raw[-1]))
    projection = euclid.diagnostics["projection"]
    assert projection["negative_mass"] == pytest.approx(-raw[raw < -1e-10 * raw[-1]].sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pcoa(skbio.DistanceMatrix(np.array(euclid.distances)), warn_neg_eigval=True)


def test_equal_samples(counts):
    est = estimate_geometry(counts, estimator="plugin", equal_samples="min", seed=2)
    assert np.all(est.totals == counts.totals.min()) and est.options["equal_samples"] == 300
    again = estimate_geometry(counts, estimator="plugin", equal_samples="min", seed=2)
    np.testing.assert_array_equal(est.distances, again.distances)
    first = int(np.flatnonzero(counts.totals < 1000)[0])
    with pytest.raises(PosgeomError, match=f"position {first} has only {counts.totals[first]}"):
        estimate_geometry(counts, equal_samples=1000)
    full = estimate_geometry(counts, estimator="plugin", equal_samples=int(counts.totals.min()))
    assert full.distances.shape == (10, 10)
    sub = sp.csr_matrix(np.array([[3, 1], [2, 2]]))
    same = estimate_geometry(sub, estimator="plugin", equal_samples=4)  # nothing to drop
    np.testing.assert_array_equal(
        same.distances, hellinger_distances(positional_distributions(sub))
    )
