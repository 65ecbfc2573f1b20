"""Algorithm 1 against scikit-learn, scikit-bio and hand-computed cases."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist, squareform

from helpers.mds import zipf_counts
from posgeom import PosgeomError
from posgeom.embed import classical_mds, smacof_refine
from posgeom.embed._canonical import canonical_basis
from posgeom.geometry import hellinger_distances, positional_distributions
from posgeom.scores import stress


def align_signs(a, b):
    """Flip columns of a to match b (MDS coordinates are defined up to sign)."""
    return a * np.sign(np.sum(a * b, axis=0))


def test_matches_sklearn_classical_mds_and_skbio_pcoa():
    from skbio import DistanceMatrix
    from skbio.stats.ordination import pcoa
    from sklearn.manifold import ClassicalMDS

    c = zipf_counts(40, 500, seed=0)
    dist = hellinger_distances(positional_distributions(c))
    ours = classical_mds(dist, 5)
    ref = ClassicalMDS(n_components=5, metric="precomputed").fit_transform(dist)
    np.testing.assert_allclose(align_signs(ours.coordinates, ref), ref, atol=1e-9)
    res = pcoa(DistanceMatrix(dist), dimensions=5)
    np.testing.assert_allclose(ours.eigenvalues[:5], res.eigvals.to_numpy()[:5], rtol=1e-10)
    sk = res.samples.to_numpy()[:, :5]
    np.testing.assert_allclose(align_signs(ours.coordinates, sk), sk, atol=1e-9)
    np.testing.assert_allclose(
        ours.explained_variance_ratio[:5], res.proportion_explained.to_numpy()[:5], atol=1e-10
    )


@pytest.mark.parametrize("solver", ["exact", "implicit"])
def test_normalized_convention_equals_mds_of_the_normalized_distances(solver):
    """Regression: ``classical_mds(mu, convention="normalized")`` is MDS of ``D / sqrt 2``
    (scikit-bio's PCoA of that matrix), not the chord solution scored against it."""
    from skbio import DistanceMatrix
    from skbio.stats.ordination import pcoa

    c = zipf_counts(40, 500, seed=3, flat=False)
    mu = positional_distributions(c)
    target = hellinger_distances(mu, convention="normalized")
    ours = classical_mds(mu, 3, convention="normalized", solver=solver)
    ref = pcoa(DistanceMatrix(target), dimensions=3)
    np.testing.assert_allclose(ours.eigenvalues[:3], ref.eigvals.to_numpy()[:3], rtol=1e-8)
    sk = ref.samples.to_numpy()[:, :3]
    np.testing.assert_allclose(align_signs(ours.coordinates, sk), sk, atol=1e-8)
    trace_b = (target**2).sum() / (2 * target.shape[0])  # trace(-1/2 J D^2 J)
    np.testing.assert_allclose(ours.total_variance, trace_b, rtol=1e-8)
    direct = classical_mds(target, 3)
    assert stress(ours, target) == pytest.approx(stress(direct, target), rel=1e-8)
    full = classical_mds(mu, convention="normalized", solver="exact")  # rank n - 1: exact
    assert stress(full, target) < 1e-20
    chord = classical_mds(mu, solver="exact")  # the old behaviour: sqrt 2 too large
    assert stress(chord, target) == pytest.approx((np.sqrt(2) - 1) ** 2, rel=1e-9)


def test_distributions_and_distance_inputs_give_the_same_answer():
    c = zipf_counts(30, 300, seed=1)
    d = positional_distributions(c)
    a = classical_mds(d, 4)
    b = classical_mds(hellinger_distances(d), 4)
    np.testing.assert_allclose(a.coordinates, b.coordinates, atol=1e-10)


@pytest.mark.parametrize("smoothing", ["none", "add-alpha"])
def test_implicit_solver_matches_exact_on_a_flat_spectrum(smoothing):
    c = zipf_counts(300, 3000, seed=2)
    d = positional_distributions(c, smoothing=smoothing, alpha=0.01)
    exact = classical_mds(d, 24, solver="exact")
    lam = exact.eigenvalues[1:25]
    assert np.min(lam[:-1] / lam[1:]) < 1.01  # the spectrum is flat: consecutive within 1%
    implicit = classical_mds(d, 24, solver="implicit")
    np.testing.assert_allclose(implicit.eigenvalues[:24], exact.eigenvalues[:24], rtol=1e-9)
    assert implicit.total_variance == pytest.approx(exact.total_variance, rel=1e-12)
    err = np.abs(implicit.distances - exact.distances).max()
    assert err < 1e-6


def test_block_krylov_mds_equals_the_exact_solver():
    """classical_mds's implicit solver (the block Krylov method, n above its dense limit) on a
    flat spectrum against LAPACK on the dense B: eigenvalues, coordinates up to sign where the
    eigenvector is resolved (gap > 1e-4 λ_1), distances and stress of the encodings."""
    d = positional_distributions(zipf_counts(640, 2500, seed=12))
    exact = classical_mds(d, 40, solver="exact")
    implicit = classical_mds(d, 40, solver="implicit")
    assert implicit.solver == "implicit"
    lam = exact.eigenvalues[:41]
    np.testing.assert_allclose(implicit.eigenvalues[:40], lam[:40], rtol=1e-10)
    gaps = np.minimum(-np.diff(lam)[:40], np.r_[np.inf, -np.diff(lam)[:39]])
    resolved = gaps > 1e-4 * lam[0]
    assert resolved.sum() >= 20
    a, b = implicit.coordinates[:, resolved], exact.coordinates[:, resolved]
    np.testing.assert_allclose(a * np.sign(np.sum(a * b, axis=0)), b, atol=1e-7)
    np.testing.assert_allclose(implicit.distances, exact.distances, atol=1e-8)
    target = hellinger_distances(d)
    assert stress(implicit.embedding, target) == pytest.approx(
        stress(exact.embedding, target), rel=1e-10
    )


@settings(max_examples=25, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(4, 12), st.integers(1, 3)), elements=st.floats(-10, 10)
    ),
)
def test_recovers_a_euclidean_configuration_with_zero_stress(points):
    centred = points - points.mean(0)
    sv = np.linalg.svd(centred, compute_uv=False)
    # a direction whose eigenvalue is within the tie tolerance (1e-9 of the largest, i.e. a
    # singular value below ~3e-5 of the largest) is numerically null by the documented rule
    if sv[-1] < 1e-4 * sv[0] or np.ptp(points) < 1e-3:
        return
    dist = squareform(pdist(points))
    res = classical_mds(dist, points.shape[1])
    assert stress(res, dist) < 1e-12
    np.testing.assert_allclose(res.distances, dist, atol=1e-7 * max(1.0, dist.max()))


def test_three_one_hot_distributions_give_the_paper_numbers():
    onehot = np.eye(3)
    target = hellinger_distances(onehot)
    res = classical_mds(onehot, 1)
    np.testing.assert_allclose(
        res.coordinates.ravel(), [-1 / np.sqrt(2), 0, 1 / np.sqrt(2)], atol=1e-12
    )
    assert res.tie_groups == ((0, 1),)
    assert stress(res, target) == pytest.approx(1 / 6, abs=1e-12)
    refined = smacof_refine(target, res)
    assert refined.final_stress == pytest.approx(1 / 9, abs=1e-9)
    np.testing.assert_allclose(
        refined.coordinates.ravel(), [-2 * np.sqrt(2) / 3, 0, 2 * np.sqrt(2) / 3], atol=1e-7
    )


def test_tie_rule_does_not_depend_on_the_solver_basis():
    rng = np.random.default_rng(5)
    n = 9
    basis = np.linalg.qr(rng.standard_normal((n, 3)) - 0)[0]
    basis -= basis.mean(0)
    basis = np.linalg.qr(basis)[0]
    rotation = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    a = canonical_basis(basis)
    b = canonical_basis(basis @ rotation)
    np.testing.assert_allclose(a, b, atol=1e-12)
    # the first canonical direction is the projection of the position order
    x = np.linspace(-1, 1, n)
    proj = basis @ (basis.T @ x)
    np.testing.assert_allclose(np.abs(a[:, 0]), np.abs(proj / np.linalg.norm(proj)), atol=1e-12)


def test_signs_follow_position_order_and_placement_is_orthonormal():
    c = zipf_counts(25, 200, seed=3, flat=False)
    d = positional_distributions(c)
    res = classical_mds(d, 3, model_dim=16, placement="orthonormal", seed=4)
    centred = np.arange(25) - 12
    assert np.all(centred @ res.coordinates >= 0)
    q = res.placement
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-12)
    assert res.embedding.shape == (25, 16)
    np.testing.assert_allclose(squareform(pdist(res.embedding)), res.distances, atol=1e-12)
    padded = classical_mds(d, 3, model_dim=16)
    assert np.all(padded.embedding[:, 3:] == 0)
    np.testing.assert_allclose(padded.embedding[:, :3], res.coordinates, atol=1e-12)
    again = classical_mds(d, 3, model_dim=16, placement="orthonormal", seed=4)
    assert np.array_equal(again.embedding, res.embedding)


def test_explained_variance_sums_to_one_and_rank_cap():
    c = zipf_counts(20, 100, seed=6)
    res = classical_mds(positional_distributions(c))
    assert res.explained_variance_ratio.sum() == pytest.approx(1.0, abs=1e-10)
    assert res.n_components == 19
    capped = classical_mds(positional_distributions(c), model_dim=4)  # the default rank: d
    assert capped.n_components == 4 and capped.model_dim == 4
    with pytest.raises(PosgeomError, match="n_components=10 exceeds model_dim=4"):
        classical_mds(positional_distributions(c), 10, model_dim=4)  # refused, not lowered


def test_negative_eigenvalues_warn_for_non_euclidean_input():
    dist = np.array([[0, 1, 1, 3], [1, 0, 1, 1], [1, 1, 0, 1], [3, 1, 1, 0]], dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        classical_mds(dist, 2)
    assert any("negative eigenvalues" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 5}, "exceeds n - 1"),
        ({"model_dim": 0}, "model_dim"),
        ({"solver": "implicit"}, "implicit solver needs distributions"),
        ({"solver": "magic"}, "solver must be one of"),
        ({"n_components": 2.0}, "n_components must be an integer"),
        ({"model_dim": True}, "model_dim must be an integer"),
        ({"convention": "normalized"}, "applies to distributions"),
        ({"convention": "halved"}, "convention must be one of"),
    ],
)
def test_bad_arguments(kwargs, message):
    dist = squareform(pdist(np.random.default_rng(0).standard_normal((5, 2))))
    with pytest.raises(PosgeomError, match=message):
        classical_mds(dist, **kwargs)


def test_too_few_positions_and_bad_matrices():
    with pytest.raises(PosgeomError, match="at least 3"):
        classical_mds(np.array([[0.0, 1.0], [1.0, 0.0]]))
    bad = np.array([[0, 1, np.nan], [1, 0, 1], [np.nan, 1, 0]])
    with pytest.raises(PosgeomError, match="NaN"):
        classical_mds(bad, 1, input_kind="distances")


def test_smacof_never_ends_above_mds():
    c = zipf_counts(30, 400, seed=7, flat=False)
    target = hellinger_distances(positional_distributions(c))
    for r in (1, 2, 3):
        start = classical_mds(target, r)
        refined = smacof_refine(target, start)
        assert refined.initial_stress == pytest.approx(stress(start, target), rel=1e-12)
        assert refined.final_stress <= refined.initial_stress + 1e-15
        assert stress(refined, target) == pytest.approx(refined.final_stress, rel=1e-10)


def test_smacof_matches_scikit_learn_from_the_same_start():
    """Both run Guttman transforms from the MDS start to convergence; same local optimum."""
    sklearn_manifold = pytest.importorskip("sklearn.manifold")
    c = zipf_counts(40, 500, seed=3, flat=False)
    target = hellinger_distances(positional_distributions(c))
    start = classical_mds(target, 2)
    ours = smacof_refine(target, start, max_iter=3000, tol=1e-12)
    x, raw = sklearn_manifold.smacof(
        target,
        n_components=2,
        init=start.coordinates,
        max_iter=3000,
        eps=1e-12,
        normalized_stress=False,
    )
    # scikit-learn's stress is the sum over all ordered pairs / 2 = sum over i < j
    assert ours.final_stress * 0.5 * np.sum(target**2) == pytest.approx(raw, rel=1e-6)
    assert stress(x, target) == pytest.approx(ours.final_stress, rel=1e-6)
    assert ours.final_stress < ours.initial_stress


def test_smacof_stops_at_once_when_the_start_is_exact():
    # a Euclidean configuration (scipy's pdist is the reference): full-rank MDS reproduces it, so
    # the paper stress starts at round-off and no Guttman step can lower it meaningfully
    pts = np.random.default_rng(3).standard_normal((60, 5))
    target = squareform(pdist(pts))
    start = classical_mds(target, 5)
    refined = smacof_refine(target, start)
    assert refined.converged and refined.n_iter == 0
    assert refined.final_stress < 1e-20
    np.testing.assert_allclose(refined.coordinates, start.coordinates)


def test_smacof_stops_on_convergence():
    c = zipf_counts(30, 400, seed=7, flat=False)
    target = hellinger_distances(positional_distributions(c))
    loose = smacof_refine(target, classical_mds(target, 3), tol=1e-3)
    tight = smacof_refine(target, classical_mds(target, 3), tol=1e-10, max_iter=5000)
    assert loose.converged and loose.n_iter < tight.n_iter
    assert tight.final_stress <= loose.final_stress <= loose.initial_stress
    capped = smacof_refine(target, classical_mds(target, 3), tol=0.0, max_iter=4)
    assert capped.n_iter == 4 and not capped.converged


def test_nonzero_coordinates_drop_the_null_columns_of_a_low_rank_geometry():
    # 40 points on a plane, asked for 6 components: columns 3..6 hold only round-off
    rng = np.random.default_rng(3)
    plane = rng.standard_normal((40, 2)) @ np.array([[1.0, 0.3, 0.0], [0.0, 0.5, 2.0]])
    d = squareform(pdist(plane))
    mds = classical_mds(d, 6)
    kept = mds.nonzero_coordinates
    assert mds.coordinates.shape == (40, 6) and kept.shape == (40, 2)
    np.testing.assert_allclose(squareform(pdist(kept)), d, atol=1e-9)
    np.testing.assert_allclose(np.sum(kept**2, axis=0), mds.eigenvalues[:2], rtol=1e-9)
