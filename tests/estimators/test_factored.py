"""The factored form of an estimate: B = c J (S S^T - diag(b)) J, the implicit solver on it, and
its blocks; checked against dense references built here with numpy/scipy and scikit-bio."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from scipy.stats import spearmanr

from posgeom import PosgeomError, classical_mds
from posgeom.estimators import _core as core
from posgeom.estimators import available, estimate_geometry, squared_mean_root
from posgeom.estimators.euclidean import euclidean_form
from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions


@pytest.fixture(scope="module")
def counts():
    mu = zipf_distributions(40, 300, exponent=1.1, seed=3)
    totals = np.linspace(400, 60, 40).astype(np.int64)
    return sample_counts(mu, totals, seed=4).counts


def _reference_gram(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``-1/2 J D^2 J`` with ``D^2_ij = ||s_i - s_j||^2 - b_i - b_j`` (zero diagonal), dense."""
    s = np.sqrt(c / c.sum(axis=1, keepdims=True))
    sq = ((s[:, None, :] - s[None, :, :]) ** 2).sum(-1) - b[:, None] - b[None, :]
    np.fill_diagonal(sq, 0.0)
    n = len(c)
    j = np.eye(n) - 1.0 / n
    return -0.5 * j @ sq @ j


def _corrected_bias(c: np.ndarray) -> np.ndarray:
    return 1.0 - squared_mean_root(c).sum(axis=1) / c.sum(axis=1)


def _top_class_counts(c: np.ndarray, k: int) -> np.ndarray:
    """Coarsening to the ``k`` most frequent tokens (ties by id) plus "other", by hand."""
    order = sorted(range(c.shape[1]), key=lambda t: (-c[:, t].sum(), t))
    out = np.zeros((c.shape[0], k + 1), dtype=np.int64)
    for rank, t in enumerate(order):
        out[:, min(rank, k)] += c[:, t]
    return out


@pytest.mark.parametrize(
    "estimator, transform",
    [
        ("plugin", {}),
        ("corrected", {"resolution": "full"}),
        ("corrected", {"coarsen": "top:20"}),
        ("corrected", {"pool": 2, "resolution": "full"}),
    ],
)
def test_exact_gram_is_the_dense_reference(counts, estimator, transform):
    c = counts.toarray()
    if "coarsen" in transform:
        c = _top_class_counts(c, 20)
    if "pool" in transform:
        c = c.reshape(20, 2, -1).sum(axis=1)
    b = np.zeros(len(c)) if estimator == "plugin" else _corrected_bias(c)
    ref = sla.eigh(_reference_gram(c, b), eigvals_only=True)[::-1]
    raw = estimate_geometry(counts, estimator=estimator, euclidean=False, **transform)
    with pytest.warns(RuntimeWarning) if estimator != "plugin" else _no_warning():
        exact = classical_mds(raw, 5, solver="exact")
    np.testing.assert_allclose(exact.eigenvalues, ref, rtol=0, atol=1e-12 * ref[0])
    assert exact.total_variance == pytest.approx(ref.sum(), rel=1e-12)
    # the Euclidean estimate: the directions of that spectrum above its noise edge
    est = estimate_geometry(counts, estimator=estimator, **transform)
    edge = est.diagnostics["projection"].get("threshold", 1e-12 * ref[0])
    assert edge >= -ref.min() * (
        1 - 1e-9
    )  # at least |λ_min| (plug-in: exactly Euclidean, nothing removed)
    kept = ref[ref > edge]
    for solver in ("auto", "exact", "implicit"):
        mds = classical_mds(est, 5, solver=solver)
        top = min(len(kept), len(mds.eigenvalues))
        np.testing.assert_allclose(mds.eigenvalues[:top], kept[:top], rtol=1e-9)
        assert np.all(mds.eigenvalues[len(kept) :] < 1e-12 * ref[0])
        assert mds.total_variance == pytest.approx(kept.sum(), rel=1e-9)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", available())
@pytest.mark.parametrize("convention", ["chord", "normalized"])
def test_implicit_equals_exact_for_every_estimator(counts, name, convention):
    est = estimate_geometry(
        counts, estimator=name, convention=convention, seed=1, euclidean=False, resolution="full"
    )
    assert est.gram is not None  # every registered estimator has a factored form
    implicit = classical_mds(est, 6, solver="implicit")
    with pytest.warns(RuntimeWarning) if name != "plugin" else _no_warning():
        exact = classical_mds(est, 6, solver="exact")
    np.testing.assert_allclose(implicit.eigenvalues[:6], exact.eigenvalues[:6], rtol=1e-9)
    assert implicit.total_variance == pytest.approx(exact.total_variance, rel=1e-12)
    np.testing.assert_allclose(
        np.abs(implicit.coordinates), np.abs(exact.coordinates), rtol=0, atol=1e-7
    )


def test_plugin_estimate_matches_scikit_bio_pcoa(counts):
    """The plug-in estimate is Euclidean: its implicit MDS is scikit-bio's PCoA of its distances."""
    skbio = pytest.importorskip("skbio")
    from skbio.stats.ordination import pcoa

    est = estimate_geometry(counts, estimator="plugin")
    ours = classical_mds(est, 5, solver="implicit").eigenvalues[:5]
    dm = skbio.DistanceMatrix(np.array(est.distances))
    theirs = pcoa(dm, method="eigh", number_of_dimensions=5).eigvals.to_numpy()[:5]
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize("convention", ["chord", "normalized"])
@pytest.mark.parametrize("euclidean", [True, False])
def test_blocks_equal_the_dense_distances(counts, convention, euclidean):
    dense = estimate_geometry(counts, convention=convention, euclidean=euclidean)
    factored = estimate_geometry(counts, convention=convention, dense=False, euclidean=euclidean)
    assert factored.distances is None
    target = factored.blocks()
    n = target.n_positions
    rows, cols = np.arange(0, n, 3), np.arange(n)
    np.testing.assert_allclose(
        target.block(rows, cols), dense.distances[np.ix_(rows, cols)], rtol=0, atol=1e-12
    )
    i, j = np.array([0, 5, 7, 39, 3]), np.array([1, 5, 30, 0, 20])
    np.testing.assert_allclose(target.pairs(i, j), dense.distances[i, j], rtol=0, atol=1e-12)
    dense_target = dense.blocks()
    np.testing.assert_array_equal(
        dense_target.block(rows, cols), dense.distances[np.ix_(rows, cols)]
    )


def test_no_dense_matrix_says_what_to_use(counts):
    est = estimate_geometry(counts, dense=False)
    with pytest.raises(PosgeomError, match="blocks"):
        np.asarray(est)


def test_estimator_without_a_factored_form_is_refused_when_large(monkeypatch):
    calls = []

    def dense_only(counts, totals, *, rng):
        calls.append(1)
        return np.zeros((counts.shape[0],) * 2), {}

    monkeypatch.setitem(
        core._REGISTRY, "dense_only", core.Estimator("dense_only", dense_only, 1, "")
    )
    n = core.DENSE_ONLY_MAX_N + 1
    c = sp.csr_matrix((np.ones(n, dtype=np.int64), (np.arange(n), np.arange(n) % 7)), shape=(n, 7))
    with pytest.raises(PosgeomError, match=r"no factored form.*corrected"):
        estimate_geometry(c, estimator="dense_only")
    assert not calls  # refused before allocating anything


def test_long_context_estimate_allocates_no_square_matrix():
    """n = 16,384 positions: estimate, implicit MDS and a block, all below half of one (n, n)
    array of single bytes (128 MiB; one (n, n) float64 is 2 GiB), so no square array of any
    dtype is made; tracemalloc sees every numpy allocation. (A run at n = 131,072 checked the
    same bound, 8 times larger, in 12.5 s: the bound in n^2 makes it the same test.)"""
    n = 16_384
    vocab = 64
    rng = np.random.default_rng(0)
    per = 4
    rows = np.repeat(np.arange(n), per)
    cols = (rng.zipf(1.3, n * per) + (rows * 7) // n) % vocab
    c = sp.csr_matrix((np.ones(n * per, dtype=np.int64), (rows, cols)), shape=(n, vocab))
    tracemalloc.start()
    try:
        est = estimate_geometry(c, resolution="full")  # n > DENSE_MAX_N: factored only
        mds = classical_mds(est, 2)
        block = est.blocks().block(np.arange(50), np.arange(n - 50, n))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert est.distances is None and mds.solver == "implicit"
    assert est.diagnostics["projection"]["solver"] == "implicit"
    assert mds.coordinates.shape == (n, 2) and block.shape == (50, 50)
    assert peak < n * n // 2, f"peak {peak / 2**20:.0f} MiB"  # 24 MiB measured (2026-12-03)
    # the raw blocks are those of the dense estimate of the same positions (per-row b and s_i)
    raw = (
        estimate_geometry(c, euclidean=False, resolution="full")
        .blocks()
        .block(np.arange(50), np.arange(50))
    )
    head = estimate_geometry(c[:50], dense=True, euclidean=False, resolution="full")
    np.testing.assert_allclose(raw, head.distances, rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", ["noise_edge", "psd"])
def test_euclidean_estimate_is_the_same_from_lapack_and_lanczos(counts, rule):
    """The small-n (dense) and large-n (Lanczos) paths give the same distances."""
    est = estimate_geometry(counts, resolution="full")
    a, info_a = euclidean_form(est.gram, rule=rule, rank=12, solver="exact")
    b, info_b = euclidean_form(est.gram, rule=rule, rank=12, solver="implicit")
    assert info_a["kept_rank"] == info_b["kept_rank"] >= 2
    np.testing.assert_allclose(pdist(a), pdist(b), rtol=0, atol=1e-9)
    if rule == "psd":  # every positive direction up to the rank: the largest
        assert info_a["kept_rank"] == 12 and info_a["rank_capped"]


def test_the_euclidean_estimate_is_closer_to_the_truth():
    """Known truth (drift, V = 30,000, 300-3,050 samples): the noise-edge Euclidean estimate ranks
    the true distances better than the clipped raw estimate and is at least as accurate."""
    mu = zipf_distributions(48, 30_000, exponent=1.05, seed=1)
    truth = pdist_of(mu)
    c = sample_counts(mu, decaying_totals(48), seed=0).counts
    iu = np.triu_indices(48, 1)
    raw = estimate_geometry(c, euclidean=False, resolution="full").distances[iu]
    euclid = estimate_geometry(c, resolution="full").distances[iu]
    assert spearmanr(euclid, truth).statistic > spearmanr(raw, truth).statistic + 0.02
    assert np.sqrt(np.mean((euclid - truth) ** 2)) < np.sqrt(np.mean((raw - truth) ** 2))


def pdist_of(mu: np.ndarray) -> np.ndarray:
    """True Hellinger chords over pairs i < j, from scipy (independent of posgeom)."""
    return pdist(np.sqrt(mu))
