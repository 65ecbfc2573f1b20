"""One typed input: counts are normalised once per analysis and the plug-in Gram built once."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

import posgeom
from helpers.pipeline import mds_rows
from posgeom import GeometryConfig, PosgeomError, analyze, count_positions
from posgeom.estimators import transforms
from posgeom.geometry import counts as counts_module
from posgeom.geometry import divergences
from posgeom.geometry.counts import CountMatrix, count_matrix
from posgeom.geometry.noise import noise_floor
from posgeom.synthetic import sample_counts, zipf_distributions


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _counting_outside_nulls(monkeypatch):
    """Calls of ``_self_gram`` on the counts' roots: the Euclidean estimate's null draws build
    Grams of other matrices (split-half differences), counted apart."""
    from posgeom.estimators import euclidean

    calls, nulls, inside = [], [], []
    real_gram, real_null = divergences._self_gram, euclidean._null_top

    def gram(*args, **kwargs):
        (nulls if inside else calls).append(1)
        return real_gram(*args, **kwargs)

    def null_top(*args, **kwargs):
        inside.append(1)
        try:
            return real_null(*args, **kwargs)
        finally:
            inside.pop()

    monkeypatch.setattr(divergences, "_self_gram", gram)
    monkeypatch.setattr(euclidean, "_null_top", null_top)
    return calls, nulls


def test_one_analysis_normalises_once_and_builds_the_gram_once(monkeypatch):
    from posgeom.estimators.euclidean import NULL_DRAWS

    mu = zipf_distributions(40, 500, seed=0)
    counts = sample_counts(mu, np.full(40, 400), seed=1)
    normalised = _counting(monkeypatch, counts_module, "_normalise")
    grams, nulls = _counting_outside_nulls(monkeypatch)
    res = analyze(counts, mds_rows(model_dim=16, resolution="full"))  # corrected, noise, SMACOF
    assert res.estimate.estimator == "corrected" and res.noise is not None
    assert len(normalised) == 1, "the counts were validated and normalised more than once"
    assert len(grams) == 1, "the plug-in Gram S S^T was built more than once"
    assert len(nulls) == NULL_DRAWS  # one Gram per null draw, each of its own matrix
    # at a coarser resolution the estimate and its noise floor are geometries of other
    # (coarsened) counts: each of those matrices is normalised once and its Gram built once,
    # and the noise floor on the estimate's classes reuses the estimate's (one coarsening)
    normalised.clear()
    grams.clear()
    coarsened = _counting(monkeypatch, transforms, "apply_classes")
    coarse = analyze(counts, mds_rows(model_dim=16, resolution="top:50"))
    assert coarse.estimate.resolution == "top:50" and coarse.noise is not None
    assert len(normalised) == len(grams) == 2  # the counts, the estimate's classes
    assert len(coarsened) == 1, "the counts were coarsened more than once"
    # the floor is the one of the coarsened counts built by hand (sum the tokens of each class)
    by_hand = np.zeros((40, coarse.estimate.vocab_size), dtype=np.int64)
    np.add.at(by_hand.T, coarse.estimate.class_map, counts.counts.toarray().T)
    ref_floor = noise_floor(by_hand, method="split_half", n_repeats=5, seed=0)
    for name in ("distances", "self_distance", "pair_floor"):
        np.testing.assert_array_equal(getattr(coarse.noise, name), getattr(ref_floor, name))
    # and the shared Gram gives the plug-in distances: scipy's pdist of sqrt(C / T)
    c = counts.counts.toarray()
    ref = squareform(pdist(np.sqrt(c / c.sum(axis=1, keepdims=True))))
    np.testing.assert_allclose(res.plugin_distances, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.noise.distances, ref, rtol=0, atol=1e-12)


def test_a_comparison_normalises_once_and_keeps_the_provenance(monkeypatch):
    """A comparison recognises its input once (every stage reuses the matrix); the provenance
    comes from the CountMatrix, so a CountMatrix input keeps it too."""
    seqs = [np.arange(k) % 7 for k in [9] * 30 + [5] * 10]
    pc = count_positions(seqs, max_positions=9)
    normalised = _counting(monkeypatch, counts_module, "_normalise")
    config = GeometryConfig(model_dim=8, families=("sinusoidal",), max_rank=2)
    res = analyze(pc, config, kind="compare")
    assert len(normalised) == 1, "the comparison normalised its counts more than once"
    info = res.counts_info
    assert info["n_sequences"] == 40 and info["fingerprint"] == pc.fingerprint
    again = analyze(count_matrix(pc), mds_rows(model_dim=8, max_rank=0))
    assert again.counts_info == {
        "n_sequences": 40,
        "n_tokens": pc.n_tokens,
        "fingerprint": pc.fingerprint,
        "tokenizer": None,
        "options": pc.options,
    }


def test_the_one_integer_rule_and_validation():
    ints = count_matrix(np.array([[2, 0, 1], [0, 3, 0]]))
    assert ints.integer and ints.counts.dtype == np.int64
    np.testing.assert_array_equal(ints.totals, [3, 3])
    assert count_matrix(np.array([[2.0, 1.0], [0.0, 3.0]])).integer  # whole floats: counts
    one_hot = count_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert not one_hot.integer  # float rows summing to 1: distributions
    assert count_matrix(np.array([[1, 0], [0, 1]])).integer  # integer dtype: one sample each
    probs = count_matrix(np.array([[0.25, 0.75], [0.5, 0.5]]))
    assert not probs.integer and probs.counts.dtype == np.float64
    with pytest.raises(PosgeomError, match="negative"):
        count_matrix(np.array([[1, -1]]))
    with pytest.raises(PosgeomError, match="NaN"):
        count_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(PosgeomError, match="empty"):
        count_matrix(np.zeros((0, 3)))


def test_a_count_matrix_is_recognised_not_revalidated(monkeypatch):
    seqs = [np.arange(k) % 7 for k in [9] * 30 + [5] * 10]
    pc = count_positions(seqs, max_positions=9)
    cm = count_matrix(pc)
    assert isinstance(cm, CountMatrix) and cm.provenance["n_sequences"] == 40
    assert not cm.counts.data.flags.writeable  # read-only: what is cached on it stays true
    calls = _counting(monkeypatch, counts_module, "_normalise")
    assert count_matrix(cm) is cm and count_matrix(cm.counts) is cm
    assert posgeom.positional_distributions(cm) is posgeom.positional_distributions(cm.counts)
    assert not calls
    fresh = count_matrix(sp.csr_matrix(pc.counts))  # another matrix: validated again
    assert fresh is not cm and len(calls) == 1


def test_one_rule_decides_what_recommended_runs(monkeypatch):
    from posgeom.estimators import RECOMMENDED, choose_estimator
    from posgeom.models import targets

    counts = np.array([[5, 3, 0], [1, 2, 2], [2, 2, 2]])
    assert choose_estimator("recommended", counts) == (RECOMMENDED, None)
    assert choose_estimator("split_half", counts) == ("split_half", None)
    name, why = choose_estimator("recommended", counts / counts.sum(axis=1, keepdims=True))
    assert name == "plugin" and "exact distributions" in why
    name, why = choose_estimator("recommended", counts, smoothing="add-alpha")
    assert name == "plugin" and "smoothing" in why
    name, why = choose_estimator("recommended", np.array([[5, 3], [0, 0], [2, 2]]))
    assert name == "plugin" and "position 1 has 0 samples" in why
    # the pipeline and the model analysis's target both ask it
    import posgeom.pipeline.target

    calls = _counting(monkeypatch, posgeom.pipeline.target, "choose_estimator")
    mu = zipf_distributions(8, 50, seed=0)
    res = analyze(mu, mds_rows(model_dim=4, refine=False, noise=None))  # probabilities
    assert res.estimate is None and res.options["estimator"] == "plugin" and len(calls) == 1
    asked = []
    monkeypatch.setattr(
        posgeom.estimators, "choose_estimator", lambda *a, **k: asked.append(1) or ("plugin", "x")
    )
    with pytest.warns(RuntimeWarning, match="does not apply"):
        target = targets.analysis_target(counts, estimator="recommended", seed=0, plugin=mu[:3])
    assert target.fallback and asked


def test_one_converter_for_whatever_holds_distances():
    from posgeom._distance_matrix import DistanceMatrix, as_distances
    from posgeom.encodings import sinusoidal

    mu = zipf_distributions(6, 40, seed=2)
    est = posgeom.estimate_geometry(sample_counts(mu, np.full(6, 300), seed=3).counts)
    enc = sinusoidal(6, d=8)
    mds = posgeom.classical_mds(est, 3)
    refined = posgeom.embed.smacof_refine(est.distances, mds)
    factors = posgeom.embed.low_rank_factors(mds, 2)
    for holder, ref in (
        (est, est.distances),
        (enc, squareform(pdist(enc.vectors))),
        (mds, squareform(pdist(mds.coordinates))),
        (refined, squareform(pdist(refined.coordinates))),
        (factors, squareform(pdist(factors.A @ factors.B.T))),
        (np.array(est.distances), est.distances),  # an array
    ):
        dm = as_distances(holder)
        assert isinstance(dm, DistanceMatrix) and not dm.distances.flags.writeable
        np.testing.assert_allclose(dm.distances, ref, rtol=0, atol=1e-12)
        assert as_distances(dm) is dm
        if not isinstance(holder, np.ndarray):  # an attribute everywhere: a read-only array
            held = holder.distances
            assert isinstance(held, np.ndarray) and not held.flags.writeable
            assert holder.distances is held  # built once
            np.testing.assert_allclose(held, ref, rtol=0, atol=1e-12)
    with pytest.raises(PosgeomError, match="not symmetric"):
        as_distances(np.array([[0.0, 1.0], [2.0, 0.0]]))
