"""ALiBi slopes and T5 buckets against Hugging Face's BLOOM and T5 code; their geometry by hand."""

from __future__ import annotations

import os

import numpy as np
import pytest

import posgeom.encodings as enc
from posgeom._errors import PosgeomError

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.t5.modeling_t5 import T5Attention  # noqa: E402


@pytest.mark.parametrize("heads", [8, 12, 16, 1, 6, 20])
def test_alibi_slopes_match_bloom(heads):
    n = 10
    alibi = build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32)
    bias = alibi[:, 0, :].double().numpy()  # (H, n): slope_h * position
    e = enc.alibi(n, n_heads=heads)
    np.testing.assert_allclose(e.vectors.T, bias, rtol=1e-6)
    np.testing.assert_allclose(enc.alibi_slopes(heads), bias[:, 1], rtol=1e-6)


def test_alibi_hand_values():
    np.testing.assert_array_equal(enc.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    expected_12 = np.concatenate([2.0 ** -np.arange(1, 9), 2.0 ** -(np.arange(4) + 0.5)])
    np.testing.assert_allclose(enc.alibi_slopes(12), expected_12, rtol=1e-12)
    np.testing.assert_allclose(enc.alibi_slopes(16), 2.0 ** (-0.5 * np.arange(1, 17)), rtol=1e-12)


def test_alibi_geometry_per_head_and_stacked():
    n, heads = 7, 12
    gaps = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
    slopes = enc.alibi_slopes(heads)
    for h in (0, 5, 11):
        e = enc.alibi(n, heads, head=h)
        assert e.vectors.shape == (n, 1)
        np.testing.assert_array_equal(e.vectors[:, 0], slopes[h] * np.arange(n))
        np.testing.assert_allclose(e.distances, slopes[h] * gaps, rtol=1e-15)
        assert np.linalg.matrix_rank(e.vectors - e.vectors.mean(0)) == 1
    stacked = enc.alibi(n, heads)
    np.testing.assert_allclose(stacked.distances, np.linalg.norm(slopes) * gaps, rtol=1e-12)
    assert [p.head for p in stacked.per_head()] == list(range(heads))
    for bad in (0, -2, 1.5):
        with pytest.raises(PosgeomError):
            enc.alibi(n, n_heads=bad)
    for bad in (12, -1, "worst"):
        with pytest.raises(PosgeomError):
            enc.alibi(n, heads, head=bad)
    with pytest.raises(PosgeomError, match="target"):
        enc.alibi(n, heads, head="best")


def test_alibi_best_head_minimises_paper_stress():
    n = 16
    gaps = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
    target = 0.05 * gaps  # closest slope among 12 heads: 2^-4 (head 3), stress 1/16
    iu = np.triu_indices(n, 1)
    by_hand = [
        np.sum((m * gaps[iu] - target[iu]) ** 2) / np.sum(target[iu] ** 2)
        for m in enc.alibi_slopes(12)
    ]
    e = enc.alibi(n, 12)
    np.testing.assert_allclose(e.head_stresses(target), by_hand, rtol=1e-10)
    best = e.best_head(target)
    assert best.head == int(np.argmin(by_hand)) == 3
    assert e.head_stresses(target)[3] == pytest.approx(1 / 16)
    assert enc.alibi(n, 12, head="best", target=target).head == 3


@pytest.mark.parametrize(
    ("bidirectional", "num_buckets", "max_distance"),
    [(True, 32, 128), (False, 32, 128), (True, 64, 256), (True, 8, 20), (False, 16, 40)],
)
def test_t5_buckets_match_transformers(bidirectional, num_buckets, max_distance):
    rel = np.arange(-600, 601)
    hf = T5Attention._relative_position_bucket(
        torch.from_numpy(rel),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    ours = enc.t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    np.testing.assert_array_equal(ours, hf.numpy())


def test_t5_bucket_geometry():
    n = 200
    e = enc.t5(n)
    d = e.distances
    assert e.vectors is None
    assert np.array_equal(d, d.T) and np.all(np.diag(d) == 0)
    # exact buckets below max_exact = 8, logarithmic after, the last bucket (15) from 128 on
    np.testing.assert_array_equal(d[0, :8], np.arange(8))
    assert d[0, 8] == 8 and d[0, 12] == 9 and d[0, 127] == 15 and d[0, 199] == 15
    assert np.all(np.diff(d[0]) >= 0)
    # Toeplitz: depends only on |i - j|
    np.testing.assert_array_equal(d[50, 60:], d[0, 10:150])
    uni = enc.t5(20, bidirectional=False).distances
    np.testing.assert_array_equal(uni[0, :16], np.arange(16))


def test_t5_bias_table_distance():
    n, nb, heads = 30, 32, 3
    bias = np.random.default_rng(0).standard_normal((nb, heads))
    e = enc.t5(n, num_buckets=nb, bias=bias)
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]
    bucket = T5Attention._relative_position_bucket(torch.from_numpy(rel)).numpy()
    for i, j in [(0, 1), (3, 20), (29, 0), (7, 7)]:
        fwd = np.mean(np.abs(bias[bucket[0, 0]] - bias[bucket[i, j]]))
        bwd = np.mean(np.abs(bias[bucket[0, 0]] - bias[bucket[j, i]]))
        assert e.distances[i, j] == pytest.approx(0.5 * (fwd + bwd), abs=1e-14)
    emb = torch.nn.Embedding(nb, heads)
    table = enc.t5(n, bias=emb).distances
    np.testing.assert_allclose(
        table, enc.t5(n, bias=emb.weight.detach().numpy()).distances, rtol=1e-6
    )
    with pytest.raises(PosgeomError):
        enc.t5(n, bias=np.zeros((16, 2)))
    with pytest.raises(PosgeomError):
        enc.t5(n, num_buckets=32, max_distance=4)
