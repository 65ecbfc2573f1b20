"""Position modules of posgeom.nn against references (DistilBERT sinusoids, hand values,
an independent numpy MDS)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers.mds import mds_result, numpy_mds  # noqa: E402
from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.embed.mds import classical_mds  # noqa: E402
from posgeom.embed.refine import smacof_refine  # noqa: E402
from posgeom.nn import (  # noqa: E402
    AbsolutePositionEmbedding,
    LearnedPositionEmbedding,
    LowRankPositionEmbedding,
    SinusoidalPositionEmbedding,
)

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _fake_mds(seed: int = 0, n: int = 10, d: int = 6, r: int = 4):
    """A real MDSResult computed independently with numpy eigh (classical MDS of random points),
    placed in d dimensions by a random orthonormal Q."""
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(n, r)) * np.arange(r, 0, -1)
    coords, w = numpy_mds(((pts[:, None] - pts[None]) ** 2).sum(-1), r)
    q, _ = np.linalg.qr(rng.normal(size=(d, r)))
    return mds_result(coords, w, q)


# -- sinusoidal --------------------------------------------------------------------------------


def test_sinusoidal_matches_distilbert_reference():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    n, d = 40, 16
    ref = torch.empty(n, d)
    create_sinusoidal_embeddings(n, d, ref)
    mod = SinusoidalPositionEmbedding(n, d)
    torch.testing.assert_close(mod(n), ref, atol=1e-6, rtol=0)
    assert mod.n_parameters == 0
    assert "weight" in dict(mod.named_buffers())


def test_sinusoidal_hand_values_and_compute_beyond():
    mod = SinusoidalPositionEmbedding(4, 4, dtype=torch.float64)
    p = 3
    hand = [math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)]
    np.testing.assert_allclose(mod(torch.tensor([p]))[0].numpy(), hand, rtol=1e-15)
    p = 7  # beyond the buffer: formula evaluated
    hand = [math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)]
    np.testing.assert_allclose(mod(torch.tensor([[p]]))[0, 0].numpy(), hand, rtol=1e-15)
    strict = SinusoidalPositionEmbedding(4, 4, beyond="error")
    with pytest.raises(PosgeomError, match="n=4"):
        strict(5)


# -- learned -----------------------------------------------------------------------------------


def test_learned_init_and_lookup():
    mod = LearnedPositionEmbedding(512, 64)
    w = mod.embedding.weight.detach().double()
    assert abs(float(w.std()) - 0.02) < 0.001 and abs(float(w.mean())) < 0.001
    assert mod.n_parameters == 512 * 64
    ids = torch.tensor([[5, 0, 511]])
    torch.testing.assert_close(mod(ids)[0], w[[5, 0, 511]].float())


# -- absolute ----------------------------------------------------------------------------------


def test_absolute_lookup_shapes_and_values():
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    mod = AbsolutePositionEmbedding(table, dtype=torch.float64)
    assert mod.n_parameters == 12
    ids = torch.tensor([[[3, 1], [0, 0]]])  # (1, 2, 2)
    out = mod(ids)
    assert out.shape == (1, 2, 2, 3)
    np.testing.assert_array_equal(out.detach().numpy(), table[ids.numpy()])
    np.testing.assert_array_equal(mod(3).detach().numpy(), table[:3])
    frozen = AbsolutePositionEmbedding(torch.tensor(table), trainable=False)
    assert frozen.n_parameters == 0 and frozen.weight.dtype == torch.get_default_dtype()


def test_absolute_from_mds_is_the_embedding():
    mds = _fake_mds()
    mod = AbsolutePositionEmbedding.from_mds(mds, dtype=torch.float64)
    np.testing.assert_array_equal(mod.table().numpy(), mds.embedding)
    assert mod.n_parameters == 0
    assert AbsolutePositionEmbedding.from_mds(mds, trainable=True).n_parameters == 60


def test_beyond_error_names_n_and_options():
    mod = AbsolutePositionEmbedding(torch.zeros(8, 2))
    with pytest.raises(PosgeomError) as exc:
        mod(torch.tensor([0, 8]))
    msg = str(exc.value)
    assert "n=8" in msg and "interpolate" in msg and "extend" in msg
    with pytest.raises(PosgeomError, match="n=8"):
        mod(9)


def test_interpolate_hand_values():
    # table rows r_p = (p, p^2); n = 5, request 0..8 (p_max = 8): t = p * 4/8 = p/2
    table = torch.tensor([[p, p * p] for p in range(5)], dtype=torch.float64)
    mod = AbsolutePositionEmbedding(table, beyond="interpolate", dtype=torch.float64)
    out = mod(9).detach().numpy()
    t = np.arange(9) / 2
    lo = np.floor(t).astype(int)
    hi = np.minimum(lo + 1, 4)
    w = t - lo
    hand = np.stack([t, (1 - w) * lo**2 + w * hi**2], axis=1)
    np.testing.assert_allclose(out, hand, rtol=1e-15)
    assert out[3].tolist() == [1.5, 2.5]  # halfway between rows 1 and 2
    # within range: exact lookup, no rescaling
    np.testing.assert_array_equal(mod(torch.tensor([4, 2])).detach().numpy(), table[[4, 2]])


def test_bad_inputs():
    mod = AbsolutePositionEmbedding(torch.zeros(4, 2))
    with pytest.raises(PosgeomError, match="integer tensor"):
        mod(torch.tensor([0.0, 1.0]))
    with pytest.raises(PosgeomError, match=">= 0"):
        mod(torch.tensor([-1]))
    with pytest.raises(PosgeomError, match="2-D"):
        AbsolutePositionEmbedding(torch.zeros(4))
    with pytest.raises(PosgeomError, match="beyond="):
        AbsolutePositionEmbedding(torch.zeros(4, 2), beyond="wrap")
    with pytest.raises(PosgeomError, match="not available"):
        LowRankPositionEmbedding(4, 4, 2, beyond="extend")


# -- low rank ----------------------------------------------------------------------------------


def test_low_rank_parameter_count_paper_example():
    mod = LowRankPositionEmbedding(32, 128, 3)
    assert mod.n_parameters == 480 == 3 * (32 + 128)
    assert sum(p.numel() for p in mod.parameters()) == 480
    assert mod(5).shape == (5, 128)
    # entries of P = A Bᵀ have std close to 0.02 (documented init)
    assert 0.015 < float(mod.table().detach().std()) < 0.025


def test_low_rank_is_a_times_b_transpose():
    a = np.arange(6.0).reshape(3, 2)
    b = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]])
    mod = LowRankPositionEmbedding(3, 4, 2, init=(a, b), dtype=torch.float64)
    np.testing.assert_array_equal(mod.table().detach().numpy(), a @ b.T)
    out = mod(torch.tensor([[2, 0]])).detach().numpy()[0]
    np.testing.assert_array_equal(out, (a @ b.T)[[2, 0]])


@pytest.mark.parametrize("rank", [1, 2, 4])
def test_low_rank_from_mds_equals_rank_r_embedding(rank):
    mds = _fake_mds(seed=rank)
    mod = LowRankPositionEmbedding.from_mds(mds, rank, dtype=torch.float64)
    # rank-r MDS embedding: top-r coordinates placed by the first r columns of Q
    ref = mds.coordinates[:, :rank] @ mds.placement[:, :rank].T
    np.testing.assert_allclose(mod.table().detach().numpy(), ref, atol=1e-12)
    assert mod.n_parameters == rank * (10 + 6)
    # the Gram matrix of the rank-r table is the rank-r truncation of B (Eckart-Young)
    gram = ref @ ref.T
    lam = np.linalg.eigvalsh(gram)[::-1]
    np.testing.assert_allclose(lam[:rank], mds.eigenvalues[:rank], rtol=1e-10)


def test_low_rank_from_a_smacof_refined_embedding():
    """A RefinedEmbedding (no eigenvalues) initialises the factors too: A B^T = X Q^T."""
    rng = np.random.default_rng(9)
    pts = rng.normal(size=(10, 3)) * [3.0, 2.0, 1.0]
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    refined = smacof_refine(dist, classical_mds(dist, 2, model_dim=6), max_iter=50)
    mod = LowRankPositionEmbedding.from_mds(refined, 2, dtype=torch.float64)
    ref = refined.coordinates @ refined.placement.T
    np.testing.assert_allclose(mod.table().detach().numpy(), ref, atol=1e-10)


def test_low_rank_from_real_classical_mds():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(12, 3)) * [3.0, 2.0, 1.0]
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    res = classical_mds(dist, 3, model_dim=8)
    mod = LowRankPositionEmbedding.from_mds(res, 3, dtype=torch.float64)
    table = mod.table().detach().numpy()
    # distances of the rank-3 table reproduce the input distances (exact Euclidean input)
    got = np.sqrt(((table[:, None] - table[None]) ** 2).sum(-1))
    np.testing.assert_allclose(got, dist, atol=1e-9)


def test_low_rank_errors():
    with pytest.raises(PosgeomError, match="min\\(n, d\\)"):
        LowRankPositionEmbedding(4, 16, 5)
    with pytest.raises(PosgeomError, match="min\\(n, d\\)"):
        LowRankPositionEmbedding(16, 4, 5)
    with pytest.raises(PosgeomError, match=">= 1"):
        LowRankPositionEmbedding(4, 4, 0)
    with pytest.raises(PosgeomError, match="expected A \\(3, 2\\)"):
        LowRankPositionEmbedding(3, 4, 2, init=(np.zeros((3, 1)), np.zeros((4, 2))))
    with pytest.raises(PosgeomError, match="MDS coordinates"):
        LowRankPositionEmbedding.from_mds(_fake_mds(), 5)
    with pytest.raises(PosgeomError, match="MDSResult"):
        LowRankPositionEmbedding.from_mds(object(), 1)


def test_low_rank_gradients_reach_a_and_b():
    mod = LowRankPositionEmbedding(6, 5, 2)
    loss = mod(torch.tensor([[0, 3, 5]])).pow(2).sum()
    loss.backward()
    assert mod.A.grad is not None and mod.B.grad is not None
    # rows of A not looked up get no gradient; dL/dA = 2 P[ids] B  for looked-up rows
    p = (mod.A @ mod.B.T).detach()
    torch.testing.assert_close(mod.A.grad[3], 2 * p[3] @ mod.B.detach())
    assert torch.all(mod.A.grad[[1, 2, 4]] == 0)
