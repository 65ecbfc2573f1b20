"""Gower's out-of-sample extension (posgeom.embed.extend) and the 'extend' policy of
AbsolutePositionEmbedding, against true coordinates of Euclidean configurations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.spatial.distance import cdist, pdist, squareform

from helpers.mds import mds_result, numpy_mds
from posgeom._errors import PosgeomError
from posgeom.embed.extend import double_centred_diagonal, gower_extension


def _config(seed: int, n: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, dim)) * np.array([3.0, 2.0, 1.0][:dim])


def test_double_centred_diagonal_matches_explicit_b():
    x = _config(0, 9, 3)
    sq = squareform(pdist(x, "sqeuclidean"))
    n = len(x)
    j = np.eye(n) - 1.0 / n
    np.testing.assert_allclose(double_centred_diagonal(sq), np.diag(-0.5 * j @ sq @ j), atol=1e-12)
    # for a Euclidean configuration, B_ii = |x_i - centroid|^2
    xc = x - x.mean(0)
    np.testing.assert_allclose(double_centred_diagonal(sq), (xc**2).sum(1), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_held_out_points_recover_true_coordinates(seed):
    x = _config(seed, 25, 3)
    train, new = x[:20], x[20:]
    sq = squareform(pdist(train, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 3)
    centroid = train.mean(0)
    # the MDS frame is the centred configuration up to an orthogonal map: find it on training data
    rot, _ = orthogonal_procrustes(coords, train - centroid)
    np.testing.assert_allclose(coords @ rot, train - centroid, atol=1e-10)
    new_sq = cdist(new, train, "sqeuclidean")
    ext = gower_extension(coords, eig, sq, new_sq)
    assert ext.shape == (5, 3)
    np.testing.assert_allclose(ext @ rot, new - centroid, atol=1e-9)
    # one point as a 1-D row
    np.testing.assert_allclose(gower_extension(coords, eig, sq, new_sq[0]), ext[0], atol=1e-12)


def test_training_points_map_to_their_own_coordinates():
    # extending a training point by its own distance row returns its coordinates (full rank)
    x = _config(3, 12, 2)
    sq = squareform(pdist(x, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 2)
    np.testing.assert_allclose(gower_extension(coords, eig, sq, sq), coords, atol=1e-10)


def test_truncated_rank_is_projection_of_full_extension():
    # keeping r < dim gives the first r coordinates of the full-rank extension (orthogonal axes)
    x = _config(4, 30, 3)
    train, new = x[:26], x[26:]
    sq = squareform(pdist(train, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 3)
    new_sq = cdist(new, train, "sqeuclidean")
    full = gower_extension(coords, eig, sq, new_sq)
    part = gower_extension(coords[:, :2], eig, sq, new_sq)
    np.testing.assert_allclose(part, full[:, :2], atol=1e-10)


def test_gower_errors():
    x = _config(5, 8, 2)
    sq = squareform(pdist(x, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 2)
    with pytest.raises(PosgeomError, match="expected \\(m, 8\\)"):
        gower_extension(coords, eig, sq, np.ones((2, 7)))
    with pytest.raises(PosgeomError, match="strictly positive"):
        gower_extension(coords, np.array([1.0, 0.0]), sq, np.ones((1, 8)))
    with pytest.raises(PosgeomError, match="expected \\(8, 8\\)"):
        gower_extension(coords, eig, sq[:7, :7], np.ones((1, 8)))
    with pytest.raises(PosgeomError, match="non-negative"):
        gower_extension(coords, eig, sq, -np.ones((1, 8)))


def test_absolute_embedding_extend_policy():
    torch = pytest.importorskip("torch")
    from posgeom.nn import AbsolutePositionEmbedding

    x = _config(6, 14, 3)
    train, new = x[:11], x[11:]
    sq = squareform(pdist(train, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 3)
    d = 8
    q = np.eye(d)[:, :3][::-1].copy()  # orthonormal placement, not plain padding
    mds = mds_result(coords, eig, q)
    mod = AbsolutePositionEmbedding.from_mds(
        mds, beyond="extend", train_sq_distances=sq, dtype=torch.float64
    )
    assert mod.n_parameters == 0  # from_mds is frozen by default
    with pytest.raises(PosgeomError, match=r"call \.extend"):
        mod(torch.tensor([0, 11]))
    rows = mod.extend(cdist(new, train, "sqeuclidean"))
    expected = gower_extension(coords, eig, sq, cdist(new, train, "sqeuclidean")) @ q.T
    np.testing.assert_allclose(rows.numpy(), expected, atol=1e-12)
    out = mod(torch.tensor([[0, 12, 13]]))
    assert out.shape == (1, 3, d)
    np.testing.assert_allclose(out[0, 0].numpy(), coords[0] @ q.T, atol=1e-12)
    np.testing.assert_allclose(out[0, 1:].numpy(), expected[1:], atol=1e-12)
    # distances between extended and training rows equal the true Euclidean distances
    full = mod(14).numpy()
    np.testing.assert_allclose(squareform(pdist(full)), squareform(pdist(x)), atol=1e-9)
    with pytest.raises(PosgeomError, match="n=11"):
        mod(torch.tensor([14]))


def test_extend_needs_distances_and_gower_data():
    torch = pytest.importorskip("torch")
    from posgeom.nn import AbsolutePositionEmbedding

    x = _config(7, 6, 2)
    sq = squareform(pdist(x, "sqeuclidean"))
    coords, eig = numpy_mds(sq, 2)
    mds = mds_result(coords, eig, np.eye(2))
    with pytest.raises(PosgeomError, match=r"train_sq_distances has shape \(5, 5\)"):
        AbsolutePositionEmbedding.from_mds(mds, beyond="extend", train_sq_distances=sq[:5, :5])
    with pytest.raises(PosgeomError, match="MDSResult"):
        AbsolutePositionEmbedding.from_mds(object(), beyond="extend")
    plain = AbsolutePositionEmbedding(torch.zeros(6, 2))
    with pytest.raises(PosgeomError, match="from_mds"):
        plain.extend(np.ones((1, 6)))


def test_from_mds_extend_with_a_real_mds_result():
    """Regression: from_mds(beyond="extend") read the bound method MDSResult.distances as an
    array and crashed. With a real classical_mds result it now extends by Gower's formula, with
    the fitted configuration's distances or with the given D**2 (equal here: D is Euclidean)."""
    torch = pytest.importorskip("torch")
    from posgeom.embed.mds import classical_mds
    from posgeom.nn import AbsolutePositionEmbedding

    x = _config(8, 15, 3)
    train, new = x[:12], x[12:]
    dist = squareform(pdist(train))
    res = classical_mds(dist, 3, model_dim=8, input_kind="distances")
    new_sq = cdist(new, train, "sqeuclidean")
    implicit = AbsolutePositionEmbedding.from_mds(res, beyond="extend", dtype=torch.float64)
    explicit = AbsolutePositionEmbedding.from_mds(
        res, beyond="extend", train_sq_distances=dist**2, dtype=torch.float64
    )
    rows = implicit.extend(new_sq)
    np.testing.assert_allclose(rows.numpy(), explicit.extend(new_sq).numpy(), atol=1e-9)
    full = implicit(15).numpy()
    np.testing.assert_allclose(squareform(pdist(full)), squareform(pdist(x)), atol=1e-8)
