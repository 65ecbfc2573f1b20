"""The model-aware plane use against the projection weights, its scores by hand, and the
recommendation read from the committed record."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.models import tiny_llama_config
from posgeom.extension import parse_family_spec, score_strategies
from posgeom.extension.usage import model_scores, plane_use

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HEAD_DIM, HEADS, KV = 16, 4, 2


def _llama(seed=0):
    config = tiny_llama_config(
        64,
        vocab_size=30,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        num_key_value_heads=KV,
        head_dim=HEAD_DIM,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # a non-trivial RMSNorm gain, folded into W_q and W_k
        for layer in model.model.layers:
            layer.input_layernorm.weight.uniform_(0.5, 1.5)
    return model


def _pairs():
    """Which coordinates transformers' rotary turns together: rotate_half moves e_j to the
    coordinate of its partner (an independent reading of the plane layout)."""
    from transformers.models.llama.modeling_llama import rotate_half

    out = []
    for j in range(HEAD_DIM // 2):
        e = torch.zeros(HEAD_DIM)
        e[j] = 1.0
        partner = int(torch.nonzero(rotate_half(e))[0])
        out.append((j, partner))
    return out


def test_plane_use_is_the_product_of_query_and_key_norms_per_plane():
    model = _llama()
    use = plane_use(model)
    pairs = _pairs()
    assert use.per_head.shape == (2, HEADS, HEAD_DIM // 2)
    for li, layer in enumerate(model.model.layers):
        g = layer.input_layernorm.weight.detach().double()
        wq = layer.self_attn.q_proj.weight.detach().double() * g
        wk = layer.self_attn.k_proj.weight.detach().double() * g
        for head in range(HEADS):
            kv = head // (HEADS // KV)  # transformers' repeat_kv order
            for j, partner in pairs:
                rows_q = [head * HEAD_DIM + j, head * HEAD_DIM + partner]
                rows_k = [kv * HEAD_DIM + j, kv * HEAD_DIM + partner]
                want = torch.linalg.norm(wq[rows_q]) * torch.linalg.norm(wk[rows_k])
                assert use.per_head[li, head, j] == pytest.approx(float(want), rel=1e-12)
    assert use.weights.sum() == pytest.approx(1.0)
    # a model whose queries and keys live on plane 3 only uses plane 3
    with torch.no_grad():
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                keep = torch.zeros_like(proj.weight)
                for h in range(proj.weight.shape[0] // HEAD_DIM):
                    keep[h * HEAD_DIM + 3] = keep[h * HEAD_DIM + 3 + HEAD_DIM // 2] = 1.0
                proj.weight.mul_(keep)
    assert np.allclose(plane_use(model).weights, np.eye(HEAD_DIM // 2)[3])


def test_model_scores_by_hand():
    w0 = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    u = np.full(8, 1 / 8)
    l0, target = 64, 128
    # unchanged frequencies: nothing moves inside; an attention factor a scales every logit by
    # a^2, |a^2 - 1|^2 / 4 on every plane
    assert model_scores(u, w0, w0, 1.0, l0, target)["in_window_change"] == pytest.approx(0.0)
    a = 1.1
    got = model_scores(u, w0, w0, a, l0, target)["in_window_change"]
    assert got == pytest.approx((a * a - 1) ** 2 / 4)
    # beyond: a plane that turns less than a circle in L0 is driven (L-1)/(L0-1) - 1 past it
    seen = (l0 - 1) * w0
    short = seen < 2 * np.pi
    reach = np.minimum((target - 1) * w0, 2 * np.pi)
    want = np.mean(np.where(short, reach / seen - 1, 0.0))
    assert model_scores(u, w0, w0, 1.0, l0, target)["beyond_unseen"] == pytest.approx(want)
    # interpolation by (L - 1) / (L0 - 1) maps lag L - 1 onto L0 - 1: nothing unseen
    cover = w0 * (l0 - 1) / (target - 1)
    assert model_scores(u, w0, cover, 1.0, l0, target)["beyond_unseen"] == pytest.approx(0.0)


def test_score_strategies_with_plane_use_recommends_by_the_record():
    from posgeom.extension.record import load_record

    model = _llama()
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 30, 400) for _ in range(2)]
    result = score_strategies(
        model, seqs, 64, 96, classes="top:6", replicates=0, fit=False, plane_use=model
    )
    values = result.predictors
    assert "model-aware" in values and "corpus + model" in values
    family = load_record()["families"]["rope"]["transformers"]
    rec = result.recommendation
    if family["default_predictor"] is None and family["fallback_validated"]:  # the fallback
        assert rec["strategy"].name == "yarn x1.5 b32/1" and rec["predictor"] == family["fallback"]
        assert rec["strategy"].rope_parameters["factor"] == 1.5
    elif family["default_predictor"] is None:  # nothing validated: no scaling
        assert rec["strategy"].name == "none" and not rec["validated"]
        assert result.rope_parameters == {"rope_type": "default", "rope_theta": 10000.0}
    else:
        vals = values[family["default_predictor"]]
        assert rec["strategy"].name == max(vals, key=vals.get)
    assert result.rope_parameters == {**rec["strategy"].rope_parameters}
    assert result.summary()["plane_use"]["weights"] == pytest.approx(plane_use(model).weights)
    # a family spec has no weights: model-aware is absent, the rest is there
    spec = parse_family_spec("rope:theta=10000,head_dim=16,max_position_embeddings=64")
    bare = score_strategies(spec, seqs, None, 96, classes="top:6", replicates=0, fit=False)
    assert "model-aware" not in bare.predictors and "factor rule" in bare.predictors


def test_the_package_record_is_the_study_record_and_its_flags_follow_the_windows():
    import json
    from pathlib import Path

    from posgeom.extension.record import load_record

    record = load_record()
    study = Path(__file__).resolve().parents[2] / "docs" / "extension" / "record.json"
    assert json.loads(study.read_text()) == record  # one record: the package reads the study's
    for scope in record["families"]["rope"].values():
        names = list(scope["windows"])
        for pred, entry in scope["predictors"].items():
            windows = [w for s in entry["sets"].values() for w in s["per_window"].values()]
            hits = all(w["pick_top2"] and w["pick_loss_minus_none"] < 0 for w in windows)
            complete = sorted(entry["sets"]) == sorted(names)
            want = hits and complete and not entry["needs_forward"]
            assert entry["validated"] == want, pred
            for s in entry["sets"].values():  # the summaries count the windows
                per = s["per_window"].values()
                assert s["top2_hits"] == sum(w["pick_top2"] for w in per)
                assert s["windows"] == len(per)
        ok = [
            p for p, e in scope["predictors"].items() if e["validated"] and p != scope["fallback"]
        ]
        assert (scope["default_predictor"] is None) == (not ok)
        assert scope["fallback_validated"] == scope["predictors"][scope["fallback"]]["validated"]


def test_the_recommendation_carries_its_picks_places_on_every_long_context_outcome():
    """The pick's measured place under each outcome of the held-out split comes from the
    record's outcome matrix (hand-made here), reaches the recommendation and its printed lines."""
    from posgeom.extension.recommend import recommendation_lines
    from posgeom.extension.record import load_record, outcome_places

    family = {
        "outcome_matrix": {
            "table": {
                "fallback: yarn x L/L0": {
                    "loss past L0": {"pick_place": 2, "strategies": 14, "windows": 2},
                    "passkey retrieved": {"pick_place": 8, "strategies": 14, "windows": 1},
                    "key-token loss (LongPPL)": {"pick_place": None, "windows": 0},
                }
            }
        }
    }
    places = outcome_places(family, "fallback: yarn x L/L0")
    assert places == {"loss past L0": [2, 14], "passkey retrieved": [8, 14]}
    assert outcome_places(family, "model-aware") == {} and outcome_places({}, "x") == {}

    # inside the record's scope (SmolLM2's rope parameters and factor) the places are carried;
    # outside it (this tiny Llama: theta 10,000, L0 64) they are not: they are another model's
    seqs = [np.random.default_rng(1).integers(0, 30, 12_400)]
    inside = parse_family_spec("rope:theta=100000,head_dim=64,max_position_embeddings=8192")
    result = score_strategies(inside, seqs, None, 12288, classes="top:6", replicates=0, fit=False)
    lines = recommendation_lines(result)
    package = outcome_places(
        load_record()["families"]["rope"]["transformers"], result.recommendation["predictor"]
    )
    assert result.recommendation["scope"]["inside"]
    assert result.recommendation.get("outcome_places", {}) == package
    if package:
        assert any("passkey retrieved" in line and "long-context" in line for line in lines)
    small = score_strategies(_llama(), seqs, 64, 96, classes="top:6", replicates=0, fit=False)
    assert "outcome_places" not in small.recommendation


def _claims(text):
    """Every "validated" in ``text`` not negated (not / nothing / un-validated)."""
    import re

    return [
        text[max(0, m.start() - 40) : m.end()]
        for m in re.finditer(r"validated", text, re.I)
        if not re.search(r"(not|nothing|un)\s?$", text[max(0, m.start() - 9) : m.start()], re.I)
    ]


def test_scope_check_says_which_settings_are_outside_the_record():
    from posgeom.extension.record import load_record, scope_check

    scope = load_record()["families"]["rope"]["transformers"]["scope"]
    smol = parse_family_spec("rope:theta=100000,head_dim=64,max_position_embeddings=8192")
    assert scope_check(smol, 12288, scope)["inside"]
    far = scope_check(smol, 16384, scope)  # factor 2: outside the record's 1.5
    assert not far["inside"] and far["outside"] == ["factor 2 (record: 1.5)"]
    other = parse_family_spec("rope:theta=10000,head_dim=64,max_position_embeddings=2048")
    got = scope_check(other, 8192, scope)
    assert [o.split(" (")[0] for o in got["outside"]] == [
        "rope theta 10,000",
        "trained length 2,048",
        "factor 4",
    ]
    assert got["case"] == {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "head_dim": 64,
        "trained_length": 2048,
        "factor": 4.0,
    }
    assert not scope_check(smol, 12288, None)["inside"]  # a record without a scope covers nothing


SPECS_OUTSIDE = [  # none of them is SmolLM2 at x1.5 (the record's only transformers scope)
    ("rope:theta=10000,head_dim=64,max_position_embeddings=2048", 8192),  # the case
    ("rope:theta=100000,head_dim=64,max_position_embeddings=8192", 16384),  # factor 2
    ("rope:theta=500000,head_dim=128,max_position_embeddings=8192", 12288),  # other base, width
    ("rope:theta=10000,head_dim=16,max_position_embeddings=64", 256),
]


@pytest.mark.parametrize("spec,target", SPECS_OUTSIDE)
def test_no_claim_of_validation_outside_the_records_scope(tmp_path, capsys, spec, target):
    """Every surface of extend on a bare spec the record does not cover (terminal, table.md,
    summary.json) claims no validation, says "not validated for this model / factor" and what
    would validate it, and names one ranking."""
    import json

    from posgeom.cli.main import main

    ids = tmp_path / "ids.npy"
    np.save(ids, np.random.default_rng(0).integers(0, 30, (1, 3000)))
    out = tmp_path / "out"
    argv = ["extend", spec, str(ids), "--target-length", str(target), "--replicates", "2"]
    assert main([*argv, "--classes", "top:6", "--no-fit", "-o", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    rec = summary["recommendation"]
    assert rec["validated"] is False and rec["ranked_by_validated"] is False
    assert rec["scope"]["inside"] is False and rec["scope"]["outside"]
    assert "outcome_places" not in rec
    surfaces = {
        "terminal": printed,
        "table.md": (out / "table.md").read_text(),
        "summary verdict": " ".join(summary["verdict"]),
        "summary why": rec["why"],
        "summary rank_by": summary["rank_by"],
    }
    for name, text in surfaces.items():
        assert not _claims(text), (name, _claims(text))
    assert "not validated for this model / factor" in rec["why"] and "--measure" in rec["why"]
    assert summary["rank_by"] == rec["ranking"]
    # one ranking name, the same on every surface; no rival "best" line
    assert f"Ranked by {rec['ranking']}." in surfaces["table.md"]
    assert f"table ranked by {rec['ranking']}" in printed
    assert "best by" not in printed and "best by" not in surfaces["table.md"]
    assert summary["strategies"][0]["name"] == summary["best"]


def test_the_claims_check_can_fail():
    assert _claims("the fallback is validated (its record)") and not _claims("not validated")
    assert not _claims("NOT validated; nothing validated; unvalidated")
