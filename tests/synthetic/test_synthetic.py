"""Synthetic corpora: sampled frequencies converge to the exact model; exact geometry by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eig
from scipy.spatial.distance import pdist, squareform

from posgeom._errors import PosgeomError
from posgeom.synthetic import stationary_chain, synthetic_corpus, synthetic_distributions


def _hellinger(mu: np.ndarray) -> np.ndarray:
    return squareform(pdist(np.sqrt(mu)))


def _frequencies(corpus: list[np.ndarray], n: int, vocab: int) -> np.ndarray:
    tokens = np.stack(corpus)
    return np.stack([np.bincount(tokens[:, i], minlength=vocab) for i in range(n)]) / len(corpus)


@pytest.mark.parametrize("kind", ["three_regimes", "drifting", "block", "stationary"])
def test_empirical_frequencies_converge_to_exact(kind):
    n, vocab, count = 32, 64, 20000
    mu = synthetic_distributions(n, vocab, kind=kind, seed=3)
    assert mu.shape == (n, vocab) and np.all(mu >= 0)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, atol=1e-12)
    freq = _frequencies(synthetic_corpus(count, n, vocab, kind=kind, seed=3), n, vocab)
    tv = 0.5 * np.abs(freq - mu).sum(axis=1)
    # E[TV] <= sqrt(V / N) / 2 = 0.028; require every position within twice that
    assert tv.max() < np.sqrt(vocab / count)
    # and far closer than to a neighbouring kind's distributions (the test has power)
    other = synthetic_distributions(n, vocab, kind=kind, seed=4)
    assert 0.5 * np.abs(freq - other).sum(axis=1).min() > 2 * tv.max()


def test_stationary_chain_and_pair_statistics():
    vocab, count = 12, 40000
    p, pi = stationary_chain(vocab, seed=5)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    w, vl = eig(p.T)
    ref = np.real(vl[:, np.argmin(np.abs(w - 1))])
    np.testing.assert_allclose(pi, ref / ref.sum(), atol=1e-12)
    mu = synthetic_distributions(20, vocab, kind="stationary", seed=5)
    assert np.all(_hellinger(mu) == 0)
    tokens = np.stack(synthetic_corpus(count, 20, vocab, kind="stationary", seed=5))
    for i in (0, 13):  # joint law of (x_i, x_{i+1}) is pi_a P_ab wherever i is
        joint = np.zeros((vocab, vocab))
        np.add.at(joint, (tokens[:, i], tokens[:, i + 1]), 1.0 / count)
        assert 0.5 * np.abs(joint - pi[:, None] * p).sum() < 0.03


def test_drifting_is_exactly_toeplitz_with_closed_form():
    n, vocab, periods, depth = 32, 64, (64.0, 16.0), 0.9
    mu = synthetic_distributions(n, vocab, kind="drifting", periods=periods, depth=depth)
    d = _hellinger(mu)
    for k in range(1, n):
        diag = np.diagonal(d, k)
        np.testing.assert_allclose(diag, diag[0], atol=1e-12)
    w = np.array([0.5, 0.5])
    u = 1 / np.sqrt(vocab * (1 + 0.5 * depth**2 * np.sum(w**2)))
    v = depth * u * w
    gap = np.subtract.outer(np.arange(n), np.arange(n))
    omega = 2 * np.pi / np.array(periods)
    closed = np.sqrt(vocab * np.sum(v**2 * (1 - np.cos(gap[..., None] * omega)), axis=-1))
    np.testing.assert_allclose(d, closed, atol=1e-12)
    assert mu.min() > 0
    # distance grows with |i - j| over the first half-period of the slow wave
    assert np.all(np.diff(d[0, :9]) > 0)


def test_block_zero_within_blocks():
    n, blocks = 32, 4
    d = _hellinger(synthetic_distributions(n, 50, kind="block", n_blocks=blocks, seed=2))
    labels = np.repeat(np.arange(blocks), n // blocks)
    same = labels[:, None] == labels[None, :]
    assert np.all(d[same] == 0)
    assert d[~same].min() > 0.1
    uneven = _hellinger(synthetic_distributions(10, 50, kind="block", n_blocks=3))
    assert np.all(uneven[:4, :4] == 0) and uneven[3, 4] > 0  # array_split: 4, 3, 3


def test_three_regimes_hard_and_smooth():
    n = 32
    hard = _hellinger(synthetic_distributions(n, kind="three_regimes", overlap=0.0))
    groups = [range(0, 11), range(11, 21), range(21, 32)]  # (i + 1/2)/n against 1/3 and 2/3
    for g in groups:
        assert np.all(hard[np.ix_(g, g)] == 0)
    assert hard[0, 11] > 0.3 and hard[11, 21] > 0.3 and hard[0, 31] > 0.3
    smooth = _hellinger(synthetic_distributions(n, kind="three_regimes"))
    assert np.all(smooth[np.triu_indices(n, 1)] > 0)  # every position distinct
    assert np.all(np.diff(smooth[0, :16]) > 0)  # moving away from the first regime


def test_determinism_and_lengths():
    a = synthetic_corpus(50, 16, 30, seed=7, min_length=4)
    b = synthetic_corpus(50, 16, 30, seed=7, min_length=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert {len(x) for x in a} <= set(range(4, 17)) and len({len(x) for x in a}) > 3
    assert all(x.dtype == np.int64 and x.min() >= 0 and x.max() < 30 for x in a)
    c = synthetic_corpus(50, 16, 30, seed=8, min_length=4)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=False))
    np.testing.assert_array_equal(
        synthetic_distributions(16, 30, seed=7), synthetic_distributions(16, 30, seed=7)
    )
    fixed = synthetic_corpus(5, kind="drifting")
    assert len(fixed) == 5 and all(len(x) == 32 for x in fixed)


def test_errors():
    with pytest.raises(PosgeomError, match="three_regimes"):
        synthetic_corpus(5, kind="zipf")
    with pytest.raises(PosgeomError, match="overlap"):
        synthetic_distributions(kind="block", overlap=0.2)
    with pytest.raises(PosgeomError, match="vocab_size"):
        synthetic_distributions(vocab_size=4, kind="drifting", periods=(8.0, 4.0, 2.0))
    with pytest.raises(PosgeomError):
        synthetic_distributions(kind="drifting", depth=1.5)
    with pytest.raises(PosgeomError):
        synthetic_distributions(8, kind="block", n_blocks=9)
    with pytest.raises(PosgeomError):
        synthetic_corpus(0)
    with pytest.raises(PosgeomError):
        synthetic_corpus(3, 8, min_length=9)


def test_regime_weights_block_index_and_periods_by_hand():
    """The shared helpers of both synthetic models, against hand-computed values."""
    from posgeom.synthetic.corpora import block_index, check_periods, regime_weights

    assert block_index(5, 2).tolist() == [0, 0, 0, 1, 1]  # numpy.array_split: 3 + 2
    with pytest.raises(PosgeomError, match="n_blocks=3 exceeds n_positions=2"):
        block_index(2, 3)
    assert np.array_equal(regime_weights(np.array([1 / 6, 1 / 2, 5 / 6]), 0.0), np.eye(3))
    e = np.exp(-((1 / 3) ** 2) / (2 * 0.1**2))  # the middle position, one third from each side
    np.testing.assert_allclose(regime_weights(np.array([0.5]), 0.1)[0], [e, 1, e] / (1 + 2 * e))
    assert check_periods(16).tolist() == [16.0]
    with pytest.raises(PosgeomError, match="periods must be positive numbers"):
        check_periods([8.0, -1.0])
