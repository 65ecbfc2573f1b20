"""Extension strategies: their frequencies against transformers, fitted factors, table extension,
and the ranking end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.models import tiny_llama_config
from posgeom import PosgeomError
from posgeom.encodings.rope_extension import rope_lag_vectors
from posgeom.extension import (
    enumerate_strategies,
    extend_table,
    fit_factors,
    parse_family_spec,
    phase_report,
    score_strategies,
    strategy_from_parameters,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

L0, L = 256, 512


def _model():
    return parse_family_spec(f"rope:theta=10000,head_dim=16,max_position_embeddings={L0}")


def _config(params, max_positions):
    return tiny_llama_config(max_positions, params, vocab_size=50, intermediate_size=64)


def _llama(params, max_positions):
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(_config(params, max_positions)).eval()


@pytest.mark.filterwarnings("ignore")
def test_every_strategy_loads_in_transformers_with_the_frequencies_scored():
    model = _model()
    strategies = enumerate_strategies(model, L0, L)
    kinds = {s.kind for s in strategies}
    assert kinds == {"none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"}
    assert len(strategies) >= 10
    for s in strategies:
        assert s.rope_parameters["rope_theta"] > 0  # always spelled out
        changes = s.config_changes(L0, L)
        config = _config(s.rope_parameters, changes["max_position_embeddings"])
        rotary = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
        x = torch.zeros(1, L, 32)
        rotary(x, torch.arange(L)[None])  # dynamic / longrope update their buffer at length L
        ours, att = s.frequencies(model, L, L0)
        theirs = rotary.inv_freq.double().numpy()
        assert np.allclose(theirs, ours, rtol=2e-6), s.name
        assert float(rotary.attention_scaling) == pytest.approx(att, rel=1e-6), s.name
        fn = transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS.get(
            s.rope_parameters["rope_type"]
        )
        if fn is not None:
            inv, factor = fn(config, "cpu", seq_len=L)
            assert np.allclose(inv.double().numpy(), ours, rtol=2e-6), s.name
            assert factor == pytest.approx(att, rel=1e-6)


def test_ntk_bases_and_yarn_attention_by_hand():
    model = _model()
    by_name = {s.name: s for s in enumerate_strategies(model, L0, L)}
    # static NTK with a = s = 2: theta' = 10000 * 2^(16/14)
    assert f"ntk theta={round(10000 * 2 ** (16 / 14))}" in by_name
    _, att = by_name["yarn x2 b32/1"].frequencies(model, L, L0)
    assert att == pytest.approx(0.1 * math.log(2) + 1)
    assert by_name["yarn x2 b32/1 no-attn"].frequencies(model, L, L0)[1] == 1.0
    base = 10000.0 ** -(np.arange(0, 16, 2) / 16)
    assert np.allclose(by_name["linear x2"].frequencies(model, L, L0)[0], base / 2)


def test_phase_report_by_hand():
    w0 = np.array([1.0, 0.01, 0.001])
    # trained at 101: plane 0 saw the whole circle, plane 1 saw 1 rad, plane 2 saw 0.1 rad
    rep = phase_report(w0, w0, 101, 201)
    assert rep["incomplete_planes"] == 2
    assert rep["unseen_phase_fraction"] == pytest.approx((1.0 + 0.1) / (2 * math.pi) / 3)
    assert rep["unseen_planes"] == 2
    assert phase_report(w0, w0 / 2, 101, 201)["unseen_planes"] == 0  # interpolation: all seen


def test_fit_recovers_factors_that_explain_the_geometry_exactly():
    w0 = 10000.0 ** -(np.arange(0, 16, 2) / 16)
    lags = np.unique(np.round(np.geomspace(1, L - 1, 30)).astype(int))
    truth = np.linspace(1.0, 2.0, 8)
    v = rope_lag_vectors(w0 / truth, lags)
    target = 0.1 * np.linalg.norm(v[:, None] - v[None], axis=-1)  # any scale
    fit = fit_factors(w0, lags, target, trained_length=L0, target_length=L, penalty=0.0)
    assert fit.stress < 1e-4


def test_constrained_fit_keeps_fast_planes_monotone_and_pays_for_in_window_change():
    w0 = 10000.0 ** -(np.arange(0, 16, 2) / 16)  # periods 6 ... 19,869; L0 = 256
    lags = np.unique(np.round(np.geomspace(1, L - 1, 30)).astype(int))
    fast = 2 * np.pi / w0 < L0  # 4 planes turn fully inside L0
    truth = np.where(fast, 1.0, np.linspace(1.0, 2.0, 8))  # monotone, fast planes untouched
    v = rope_lag_vectors(w0 / truth, lags)
    target = np.linalg.norm(v[:, None] - v[None], axis=-1)
    kw = {"trained_length": L0, "target_length": L, "penalty": 0.0, "constrained": True}
    free = fit_factors(w0, lags, target, change_penalty=0.0, **kw)
    assert np.all(free.factors[fast] == 1.0) and np.all(np.diff(free.factors) >= 0)
    assert free.stress < 1e-3  # the truth is inside the constraints: recovered
    # a geometry that wants the fast planes moved: they stay, and the slow ones stay monotone
    v = rope_lag_vectors(w0 / np.linspace(3.0, 1.0, 8), lags)
    target = np.linalg.norm(v[:, None] - v[None], axis=-1)
    loose = fit_factors(w0, lags, target, change_penalty=0.0, **kw)
    tight = fit_factors(w0, lags, target, change_penalty=100.0, **kw)
    for fit in (loose, tight):
        assert np.all(fit.factors[fast] == 1.0) and np.all(np.diff(fit.factors) >= -1e-12)
    # penalising the in-window change keeps the factors nearer 1 (a smaller change)
    from posgeom.extension.usage import model_scores

    u = np.full(8, 1 / 8)
    change = [
        model_scores(u, w0, w0 / f.factors, 1.0, L0, L)["in_window_change"] for f in (loose, tight)
    ]
    assert change[1] <= change[0]


def test_extend_table_clamp_interpolate_gower():
    table = np.arange(12.0).reshape(4, 3)
    assert np.array_equal(extend_table(table, 6, "clamp")[4:], table[[3, 3]])
    lin = extend_table(table, 7, "interpolate")
    x = np.arange(7) * 3 / 6
    assert np.allclose(lin[:, 1], np.interp(x, np.arange(4), table[:, 1]))
    # a corpus geometry that is exactly that of a table linear in a 2-D curve: Gower places the
    # new positions where the table continues
    t = np.arange(10.0)
    full = np.stack([t, 0.1 * t**2, 3 - t], axis=1)
    dist = np.linalg.norm(full[:, None] - full[None], axis=-1)
    ext = extend_table(full[:6], 10, "gower", position_distances=dist)
    assert np.allclose(ext, full, atol=1e-8)
    with pytest.raises(PosgeomError, match="clamp or interpolate"):
        extend_table(full[:6], 10, "gower")


def test_table_lag_distances_by_hand():
    from posgeom.encodings.learned_extension import table_lag_distances

    # rows 0, 1, 3 on a line: squared distances at lag 1 are 1 and 4 (mean 2.5), at lag 2: 9;
    # lags >= 3 take the mean over the largest trained lags (here both): (2.5 + 9) / 2
    d = table_lag_distances(np.array([[0.0], [1.0], [3.0]]), 5)
    assert np.allclose(d[:3, :3], [[0, 1, 3], [1, 0, 2], [3, 2, 0]])
    assert np.allclose(d[3], np.sqrt([5.75, 9, 2.5, 0, 2.5]))
    assert np.allclose(d[4], np.sqrt([5.75, 5.75, 9, 2.5, 0]))
    assert np.allclose(d, d.T)


def _corpus(n=6000, seed=0):
    """A token chain with dependence at lags 1 and 2 (a second-order rule) over 8 tokens."""
    rng = np.random.default_rng(seed)
    s = list(rng.integers(0, 8, 2))
    for _ in range(n - 2):
        s.append((s[-1] + s[-2]) % 8 if rng.random() < 0.7 else int(rng.integers(0, 8)))
    return np.array(s)


@pytest.mark.filterwarnings("ignore")
def test_score_strategies_ranks_and_gives_loadable_parameters():
    seqs = [_corpus(4000, seed=i) for i in range(2)]
    result = score_strategies(_model(), seqs, None, L, classes="top:8", replicates=3, seed=0)
    names = [r.name for r in result.rows]
    assert "fitted" in names and "none" in names
    key = result.rank_by
    # one ranking: the recommended strategy first, then by the predictor the recommendation
    # names, best first; the summary names that rule
    rec = result.recommendation
    assert names[0] == rec["strategy"].name
    values = [result.predictors[rec["ranked_by"]][r.name] for r in result.rows[1:]]
    assert values == sorted(values, reverse=True)
    assert result.summary()["rank_by"] == rec["ranking"] == result.ranking
    assert rec["ranking"].startswith("the fallback rule YaRN x L/L0 (not validated) first, then")
    # the scores are those of the scores package on the lag kernel
    from posgeom.scores.stress import stress

    best = result.by_stress  # the lowest lag stress: a column, not a rival ranking
    assert best.scores[key] == min(r.scores[key] for r in result.rows)
    assert result.summary()["lowest_lag_stress"] == best.name
    w, att = best.strategy.frequencies(result.model, L, L0)
    vec = rope_lag_vectors(w, result.lag_geometry.lags, attention_factor=att)
    assert best.scores[key] == pytest.approx(
        stress(vec, result.lag_geometry.distances, kind=key), rel=1e-9
    )
    assert best.scores[f"{key}_ci"][0] <= best.scores[f"{key}_ci"][1]
    summary = result.summary()
    assert [s["name"] for s in summary["strategies"]] == names
    assert summary["rope_parameters"]["rope_theta"] == 10000.0
    # rope_parameters.json holds the recommendation; transformers gives the frequencies scored
    chosen = result.recommended
    assert summary["recommendation"]["strategy"] == chosen.name == summary["best"]
    w, att = chosen.frequencies(result.model, L, L0)
    changes = chosen.config_changes(L0, L)
    llama = _llama(result.rope_parameters, changes["max_position_embeddings"])
    llama.model.rotary_emb(torch.zeros(1, L, 32), torch.arange(L)[None])
    assert np.allclose(llama.model.rotary_emb.inv_freq.double().numpy(), w, rtol=2e-6)
    assert llama.model.rotary_emb.attention_scaling == pytest.approx(att, rel=1e-6)


def test_score_given_parameters_and_refusals():
    seqs = [_corpus(seed=4)]
    given = {"pi": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}}
    result = score_strategies(_model(), seqs, None, L, given, classes="top:8", replicates=0)
    assert [r.name for r in result.rows] == ["pi"] and result.rows[0].p_first is None
    with pytest.raises(PosgeomError, match="rope_theta"):
        strategy_from_parameters("x", {"rope_type": "linear", "factor": 2.0})
    with pytest.raises(PosgeomError, match="must exceed the trained length"):
        score_strategies(_model(), seqs, None, L0, classes="top:8", replicates=0)
    with pytest.raises(PosgeomError, match="unknown family spec"):
        parse_family_spec("kerple:r=1")


def test_learned_tables_alibi_and_nope_strategies():
    from posgeom.encodings.learned_extension import learned_lag_vectors
    from posgeom.extension import ExtensionModel

    rng = np.random.default_rng(5)
    table = rng.normal(size=(16, 4))
    model = ExtensionModel("learned", "table", 16, {"table": table})
    seqs = [_corpus(2000, seed=9)]
    result = score_strategies(model, seqs, None, 32, classes="top:8", replicates=0)
    assert {r.name for r in result.rows} == {"clamp", "interpolate", "gower-table"}
    assert any("gower left out" in line for line in result.verdict())
    clamp = result.strategy("clamp")
    vec = learned_lag_vectors(extend_table(table, 32, "clamp"), result.lag_geometry.lags)
    from posgeom.scores.stress import stress

    assert clamp.scores["scale_optimal"] == pytest.approx(
        stress(vec, result.lag_geometry.distances, kind="scale_optimal"), rel=1e-9
    )
    full = np.vstack([table, rng.normal(size=(16, 4))])
    dist = np.linalg.norm(full[:, None] - full[None], axis=-1)
    with_gower = score_strategies(
        model, result.lag_geometry, None, 32, replicates=0, position_distances=dist
    )
    assert {r.name for r in with_gower.rows} == {"clamp", "interpolate", "gower", "gower-table"}
    assert with_gower.rope_parameters is None
    for spec in (
        "alibi:heads=4,max_position_embeddings=16",
        "nope:max_position_embeddings=16",
        "sinusoidal:d=8,max_position_embeddings=16",
    ):
        one = score_strategies(spec, result.lag_geometry, None, 32, replicates=0)
        assert [r.name for r in one.rows] == ["none"]


@pytest.mark.filterwarnings("ignore:B has negative eigenvalues")
def test_reference_mds_scores_the_lag_geometry_own_embedding():
    from posgeom.embed.mds import classical_mds
    from posgeom.scores.stress import stress

    result = score_strategies(
        _model(), [_corpus(seed=7)], None, L, classes="top:8", replicates=0, fit=False
    )
    ref = result.reference_mds()
    d = result.lag_geometry.distances
    coords = classical_mds(d, 2, input_kind="distances").coordinates
    assert ref["rank_2"]["scale_optimal"] == pytest.approx(stress(coords, d, kind="scale_optimal"))
    assert ref["rank_8"]["scale_optimal"] <= ref["rank_1"]["scale_optimal"]
