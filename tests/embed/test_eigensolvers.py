"""The block Krylov eigensolver against LAPACK (scipy.linalg.eigh) on dense matrices."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from helpers.mds import zipf_counts
from posgeom.embed.eigensolvers import block_krylov_eigh, dense_top_eigh, top_eigh
from posgeom.geometry import positional_distributions
from posgeom.geometry.gram import FactoredGram


def matrix_with_spectrum(values, seed):
    """``Q diag(values) Q^T`` with a seeded random orthogonal ``Q``: the known spectrum."""
    n = len(values)
    q = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))[0]
    return (q * values) @ q.T


def lapack_top(a, k):
    vals, vecs = sla.eigh(a)
    return vals[::-1][:k], vecs[:, ::-1][:, :k]


def assert_same_vectors(found, ref, atol):
    """Columns equal up to sign."""
    signs = np.sign(np.sum(found * ref, axis=0))
    np.testing.assert_allclose(found * signs, ref, atol=atol)


def test_random_psd_matrix_with_a_known_spectrum():
    n, k = 600, 40
    spectrum = np.sort(np.random.default_rng(1).gamma(2.0, 1.0, n))[::-1]  # gaps ~ 1e-2
    a = matrix_with_spectrum(spectrum, seed=2)
    found = block_krylov_eigh(lambda y: a @ y, n, k, dense_max_n=0)
    assert found.method == "block_krylov" and found.converged
    np.testing.assert_allclose(found.values, spectrum[:k], rtol=1e-11)
    vals, vecs = lapack_top(a, k)
    np.testing.assert_allclose(found.values, vals, rtol=1e-11)
    assert_same_vectors(found.vectors, vecs, atol=1e-8)
    np.testing.assert_allclose(found.vectors.T @ found.vectors, np.eye(k), atol=1e-12)
    true_residuals = np.linalg.norm(a @ found.vectors - found.vectors * found.values, axis=0)
    assert np.all(true_residuals <= 1e-12 * spectrum[0] * 10)  # the reported bound holds
    np.testing.assert_allclose(found.residuals, true_residuals, atol=1e-12 * spectrum[0] * 10)


def test_clustered_and_repeated_eigenvalues():
    """A 6-fold eigenvalue inside the wanted set, a 4-fold one straddling the cut at k, a
    cluster of nearly equal ones: values exact; the invariant subspace of a whole cluster
    (its projector) exact, as any basis of it is a valid answer."""
    n, k = 500, 30
    rng = np.random.default_rng(3)
    spectrum = np.concatenate(
        [[50.0, 40.0], np.full(6, 20.0), 10.0 + 1e-6 * np.arange(20), np.full(4, 5.0)]
    )
    spectrum = np.sort(np.concatenate([spectrum, rng.uniform(0, 4.0, n - spectrum.size)]))[::-1]
    a = matrix_with_spectrum(spectrum, seed=4)
    found = block_krylov_eigh(lambda y: a @ y, n, k, dense_max_n=0)
    assert found.converged
    np.testing.assert_allclose(found.values, spectrum[:k], rtol=1e-11, atol=1e-11)
    _, vecs = lapack_top(a, 28)  # the first 28: every cluster complete
    u = found.vectors[:, :28]
    np.testing.assert_allclose(u @ u.T, vecs @ vecs.T, atol=1e-9)
    np.testing.assert_allclose(u[:, :2] @ u[:, :2].T, vecs[:, :2] @ vecs[:, :2].T, atol=1e-10)


def test_real_hellinger_gram_of_a_synthetic_corpus():
    """The centred Gram B = J S S^T J of plug-in distributions (a flat spectrum: consecutive
    eigenvalues within 1%), through its sparse operator, against LAPACK on the dense B."""
    d = positional_distributions(zipf_counts(700, 2000, seed=5))
    gram = FactoredGram(d, np.zeros(d.n_positions))
    b = gram.dense()
    k = 48
    vals, vecs = lapack_top(b, k)
    assert np.min(vals[2:-1] / vals[3:]) < 1.01
    op = gram.operator()
    found = block_krylov_eigh(
        op.matmat, d.n_positions, k, dense_max_n=0, start=lambda y: y - y.mean(axis=0)
    )
    assert found.method == "block_krylov" and found.converged
    np.testing.assert_allclose(found.values, vals, rtol=1e-10)
    gaps = np.minimum(np.abs(np.diff(vals, prepend=np.inf)), np.abs(np.diff(vals, append=-1)))
    resolved = gaps > 1e-4 * vals[0]  # eigenvectors are defined to residual / gap
    assert resolved.sum() > k // 2
    assert_same_vectors(found.vectors[:, resolved], vecs[:, resolved], atol=1e-6)


def test_k_close_to_n_is_solved_densely_and_exactly():
    n = 300
    a = matrix_with_spectrum(np.linspace(1.0, 2.0, n), seed=6)
    for k in (n - 1, n // 2):
        found = block_krylov_eigh(lambda y: a @ y, n, k)
        assert found.method == "dense"
        vals, vecs = lapack_top(a, k)
        np.testing.assert_allclose(found.values, vals, rtol=1e-12)
        assert_same_vectors(found.vectors, vecs, atol=1e-9)
    assert dense_top_eigh(lambda y: a @ y, n, 3).residuals.max() < 1e-12


def test_not_converged_is_reported_and_top_eigh_falls_back_to_arpack():
    n, k = 600, 40
    spectrum = np.sort(np.random.default_rng(7).gamma(2.0, 1.0, n))[::-1]
    a = matrix_with_spectrum(spectrum, seed=8)
    stopped = block_krylov_eigh(lambda y: a @ y, n, k, dense_max_n=0, max_products=8)
    assert not stopped.converged and stopped.residuals.max() > 1e-12 * spectrum[0]
    op = spla.aslinearoperator(a)
    fallback = top_eigh(op, k, max_products=8)
    assert fallback.method == "arpack"
    np.testing.assert_allclose(fallback.values, spectrum[:k], rtol=1e-11)


def test_deterministic_for_a_seed():
    n, k = 600, 20
    a = matrix_with_spectrum(np.sort(np.random.default_rng(9).gamma(2.0, 1.0, n))[::-1], seed=10)
    one, two = (block_krylov_eigh(lambda y: a @ y, n, k, dense_max_n=0, seed=3) for _ in "ab")
    np.testing.assert_array_equal(one.vectors, two.vectors)
    np.testing.assert_array_equal(one.values, two.values)


@pytest.mark.parametrize("block", [1, 4, 16])
def test_block_sizes_agree(block):
    n, k = 400, 12
    spectrum = np.concatenate([np.linspace(20, 8, 30), np.linspace(1, 0.01, n - 30)])
    a = matrix_with_spectrum(spectrum, seed=11)
    found = block_krylov_eigh(lambda y: a @ y, n, k, block=block, dense_max_n=0)
    assert found.converged
    np.testing.assert_allclose(found.values, spectrum[:k], rtol=1e-11)
