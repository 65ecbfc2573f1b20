"""Lag counts, token classes, the dependence profile and lag kernels against direct references."""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from posgeom import PosgeomError
from posgeom.corpus.bootstrap_weights import sequence_weights
from posgeom.encodings.alibi import alibi_lag_vectors
from posgeom.encodings.learned_extension import learned_lag_vectors
from posgeom.encodings.rope_extension import rope_lag_vectors
from posgeom.encodings.t5 import t5_lag_vectors
from posgeom.lags import (
    count_lags,
    default_lags,
    dependence_profile,
    embedding_classes,
    lag_geometry,
    parse_classes,
    top_classes,
)
from posgeom.lags.kernels import nope_lag_vectors


def _markov(n: int, v: int, seed: int, stay: float = 0.6) -> np.ndarray:
    """A sticky Markov chain: the next token repeats the last with probability ``stay``."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.int64)
    out[0] = 0
    fresh = rng.integers(0, v, n)
    keep = rng.random(n) < stay
    for i in range(1, n):
        out[i] = out[i - 1] if keep[i] else fresh[i]
    return out


def test_default_lags_dense_then_log_spaced():
    lags = default_lags(1000, dense=8, per_octave=2)
    assert lags[:8].tolist() == list(range(1, 9))
    assert lags[-1] == 1000 and np.all(np.diff(lags) > 0)
    ratios = lags[9:-1] / lags[8:-2]
    assert np.allclose(ratios, math.sqrt(2), atol=0.08)  # two per doubling
    assert default_lags(5).tolist() == [1, 2, 3, 4, 5]


def test_top_classes_most_frequent_first_rest_other():
    counts = np.array([5, 0, 9, 9, 1, 2])
    cls = top_classes(counts, 3)
    assert cls.n_classes == 4
    assert cls.tokens.tolist() == [2, 3, 0]  # ties by smaller id
    assert cls(np.array([2, 3, 0, 4, 5, 1, 99])).tolist() == [0, 1, 2, 3, 3, 3, 3]
    assert parse_classes("top:3", token_counts=counts).tokens.tolist() == [2, 3, 0]
    with pytest.raises(PosgeomError, match="embedding:K"):
        parse_classes("embedding:4")
    with pytest.raises(PosgeomError, match="unknown token classes"):
        parse_classes("bins:4")


def test_embedding_classes_recover_separated_clusters():
    rng = np.random.default_rng(0)
    centres = np.eye(3) * 10
    x = np.vstack([c + rng.normal(0, 0.1, (20, 3)) for c in centres])
    cls = embedding_classes(x, 3, seed=1)
    labels = cls.table.reshape(3, 20)
    assert all(len(set(row)) == 1 for row in labels) and len(set(labels[:, 0])) == 3
    assert cls(np.array([1000])).tolist() == [3]  # beyond the table: other


def test_count_lags_matches_brute_force_with_replicates():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 7, n) for n in (40, 3, 65, 1, 30)]
    cls = top_classes(np.bincount(np.concatenate(seqs)), 4)
    lags = np.array([1, 2, 5, 33])
    block = 16
    lc = count_lags(seqs, cls, lags=lags, replicates=6, block=block, seed=11, batch_tokens=50)
    c = cls.n_classes
    # the units: blocks of 16 tokens per sequence, numbered in reading order
    unit, units = 0, []
    for s in seqs:
        units.append(unit + np.arange(s.size) // block)
        unit += (s.size + block - 1) // block
    w = sequence_weights(np.arange(unit), replicates=6, seed=11)
    for li, k in enumerate(lags):
        expect = collections.Counter()
        reps = np.zeros((6, c * c))
        for s, u in zip(seqs, units, strict=True):
            cl = cls(s)
            for i in range(s.size - k):
                cell = cl[i] * c + cl[i + k]
                expect[cell] += 1
                reps[:, cell] += w[u[i]]
        got = lc.counts[li]
        assert {j: got[j] for j in np.flatnonzero(got)} == dict(expect)
        assert np.array_equal(lc.replicate_counts[:, li], reps)
    assert lc.n_sequences == 5 and lc.n_tokens == 139
    assert lc.replicate(2).dtype == np.int64


def test_count_lags_refuses_bad_input():
    cls = top_classes(np.ones(4), 2)
    with pytest.raises(PosgeomError, match="strictly increasing"):
        count_lags([np.arange(4)], cls, lags=np.array([2, 1]))
    with pytest.raises(PosgeomError, match="no pair reached"):
        count_lags([np.arange(3)], cls, lags=np.array([5]))
    with pytest.raises(PosgeomError, match="at least 2"):
        count_lags([np.arange(3)], cls, lags=np.array([1]), replicates=1)


def _chord(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.linalg.norm(np.sqrt(p) - np.sqrt(q)))


def test_dependence_profile_plugin_null_and_signal():
    seq = _markov(60_000, 6, seed=0)
    cls = top_classes(np.bincount(seq), 6)
    lc = count_lags([seq], cls, lags=np.array([1, 2, 400]))
    dep = dependence_profile(lc, n_null=30, seed=0)
    for i in range(3):  # the plug-in against the formula written out
        joint = lc.joint(i).astype(float)
        p = joint / joint.sum()
        assert dep.plugin[i] == pytest.approx(_chord(p, np.outer(p.sum(1), p.sum(0))), rel=1e-12)
    # independent pairs: the chord^2 is about chi^2 / (4 N) with (C - 1)^2 degrees of freedom
    n = lc.pairs[2]
    iid = math.sqrt((6 - 1) ** 2 / (4 * n))
    multinomial = dependence_profile(lc, null="multinomial", n_null=30, seed=0)
    assert multinomial.null[2] == pytest.approx(iid, rel=0.15)
    # the chain's tokens come in runs (mean length 2), so pairs 400 apart are independent but
    # far fewer in effect: the block-shuffled null sees it, the independent-pairs null does not
    assert dep.null_method == "shuffled" and dep.null[2] > 1.2 * iid
    assert dep.plugin[2] == pytest.approx(dep.null[2], rel=0.3)
    assert dep.signal[:2].all() and not dep.signal[2]
    assert dep.longest_signal_lag == 2
    # the sticky chain at lag 1: P(a, b) = pi (stay 1[a = b] + (1 - stay) / 6), pi = 1/6
    truth = (0.6 * np.eye(6) + 0.4 / 6) / 6
    assert dep.corrected[0] == pytest.approx(_chord(truth, np.full((6, 6), 1 / 36)), abs=0.01)


def test_lag_geometry_plugin_and_corrected_estimate():
    rng = np.random.default_rng(1)
    seqs = [_markov(3000, 5, seed=s) for s in range(8)] + [rng.integers(0, 5, 3000)]
    cls = top_classes(np.bincount(np.concatenate(seqs)), 5)
    lc = count_lags(seqs, cls, lags=np.array([1, 2, 50, 100]), replicates=4)
    geo = lag_geometry(lc, n_null=5)
    p = lc.counts / lc.counts.sum(axis=1, keepdims=True)
    assert geo.distance(1, 2, estimator="plugin") == pytest.approx(_chord(p[0], p[1]), rel=1e-9)
    # far lags are nearly independent and alike: corrected below the plug-in (its noise removed)
    assert geo.distance(50, 100) < geo.distance(50, 100, estimator="plugin")
    assert geo.distance(1, 2) > 0.05
    assert geo.estimate.estimator == "corrected"
    with pytest.raises(PosgeomError, match="both be counted"):
        geo.distance(1, 3)


def test_rope_lag_kernel_inner_product_and_distances():
    w = 10000.0 ** -(np.arange(0, 8, 2) / 8)
    lags = np.array([0, 1, 7, 100])
    v = rope_lag_vectors(w, lags, attention_factor=1.5)
    assert v[0] @ v[2] == pytest.approx(1.5**4 * np.sum(np.cos(7 * w)))
    d = np.linalg.norm(v[1] - v[3])
    assert d == pytest.approx(1.5**2 * math.sqrt(np.sum(2 - 2 * np.cos(99 * w))))


def test_alibi_t5_learned_nope_lag_kernels():
    lags = np.array([1, 3, 200])
    assert alibi_lag_vectors([0.5, 0.25], lags).tolist() == [[0.5, 0.25], [1.5, 0.75], [100, 50]]
    # causal T5 buckets (16 exact below 16, log up to 128, then the last bucket 31)
    assert t5_lag_vectors(lags).ravel().tolist() == [1, 3, 31]
    bias = np.arange(64.0).reshape(32, 2)
    assert t5_lag_vectors(lags, bias=bias)[1].tolist() == [6.0, 7.0]
    table = np.random.default_rng(0).normal(size=(10, 3))
    vec = learned_lag_vectors(table, np.array([0, 4]))
    ref = np.mean([table[i] * table[i + 4] for i in range(6)], axis=0)
    assert np.allclose(vec[1], ref) and np.allclose(vec[0], (table**2).mean(axis=0))
    with pytest.raises(PosgeomError, match="extend the table"):
        learned_lag_vectors(table, np.array([10]))
    assert not nope_lag_vectors(lags).any()


def test_null_counts_keep_the_first_token_and_the_totals():
    seq = _markov(5000, 4, seed=2)
    cls = top_classes(np.bincount(seq), 4)
    lc = count_lags([seq], cls, lags=np.array([1, 3]), null_shuffles=3, null_block=16)
    c = cls.n_classes
    for r in range(3):
        for li in range(2):
            real, null = lc.joint(li), lc.joint(li, lc.null_counts[r])
            assert np.array_equal(real.sum(axis=1), null.sum(axis=1))  # same first tokens
    # the second tokens of the null are the sequence's own tokens in a block-shuffled order
    whole = lc.null_counts[0, 0].reshape(c, c).sum(axis=0)
    assert whole.sum() == seq.size - 1 and np.all(whole <= np.bincount(cls(seq), minlength=c))


def test_distance_interval_from_the_replicates():
    from posgeom.estimators import estimate_geometry
    from posgeom.uncertainty._intervals import bootstrap_interval

    seqs = [_markov(4000, 5, seed=s) for s in range(6)]
    cls = top_classes(np.bincount(np.concatenate(seqs)), 5)
    lc = count_lags(seqs, cls, lags=np.array([1, 2, 30]), replicates=8, block=500)
    geo = lag_geometry(lc, n_null=3)
    reps = [estimate_geometry(lc.replicate(b)).distances[0, 2] for b in range(8)]
    est = estimate_geometry(lc.counts).distances[0, 2]
    iv = geo.distance_interval(30, 1)
    ref = bootstrap_interval(est, reps, truth=est)
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((ref.estimate, ref.low, ref.high))
    assert iv.low < geo.distance(1, 30) < iv.high
    with pytest.raises(
        PosgeomError, match=r"^lags 2 != 2 must both be counted; counted: \[ 1  2 30\]$"
    ):
        geo.distance_interval(2, 2)
    with pytest.raises(PosgeomError, match=r"^lags 1 and 3 must both be counted"):
        geo.distance(1, 3)


def test_lag_counts_round_trip_and_refuse_other_artifacts(tmp_path):
    from posgeom import ArtifactError
    from posgeom.corpus.counting import count_positions

    seq = _markov(3000, 4, seed=1)
    lc = count_lags([seq], top_classes(np.bincount(seq), 3), lags=np.array([1, 5]), replicates=3)
    back = type(lc).load(lc.save(tmp_path / "lags.npz"))
    for name in ("counts", "lags", "replicate_counts", "null_counts"):
        assert np.array_equal(getattr(back, name), getattr(lc, name))
    assert back.classes.kind == "top:3" and np.array_equal(back.classes.table, lc.classes.table)
    assert back.summary() == lc.summary()
    with pytest.raises(PosgeomError, match="exists"):
        lc.save(tmp_path / "lags.npz")
    count_positions([seq], max_positions=4).save(tmp_path / "pos.npz")
    with pytest.raises(ArtifactError):
        type(lc).load(tmp_path / "pos.npz")
