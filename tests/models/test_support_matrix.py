"""Mechanisms with their layers on tiny random models of transformers' own architectures.

The default suite builds the eight architectures the first version got wrong plus a few
representative ones; the full matrix (every model type of the mapping) is e2e. Rotary
mechanisms are checked against the model's own rotary module (angles to 1e-6).
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.models import sized_config  # noqa: E402
from posgeom.encodings.rope_types import rope_frequencies  # noqa: E402
from posgeom.models import find_positional_mechanisms  # noqa: E402
from studies import support  # noqa: E402

torch.set_num_threads(1)


def _kinds(found):
    return [(m.kind, m.layers) for m in found]


def _one(found, **match):
    hits = [m for m in found if all(getattr(m.params, k, None) == v for k, v in match.items())]
    assert len(hits) == 1, (match, _kinds(found))
    return hits[0]


@pytest.mark.parametrize(
    ("model_type", "rotary_dim", "head_dim", "pairs"),
    [("gptj", 8, 16, "interleaved"), ("codegen", 8, 16, "interleaved"), ("glm", 8, 16, None)],
)
def test_sin_cos_tables_and_partial_rotary(model_type, rotary_dim, head_dim, pairs):
    model = support.build(model_type)
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "rotary" and mech.layers == (0, 1)
    assert (mech.rotary_dim, mech.head_dim) == (rotary_dim, head_dim)
    assert mech.theta == 10000.0
    if pairs:
        assert mech.pairs == pairs
    else:  # GLM: rotate_half pairs neighbours
        assert mech.pairs == "interleaved"
    assert support.rotary_error(model, mech) <= 1e-6


def test_gemma3_reports_both_bases_on_their_layers():
    model = support.build("gemma3_text")
    types = model.config.layer_types
    assert set(types) == {"sliding_attention", "full_attention"}
    found = find_positional_mechanisms(model)
    full = _one(found, layer_type="full_attention")
    sliding = _one(found, layer_type="sliding_attention")
    assert full.theta == 1_000_000.0 and sliding.theta == 10_000.0
    assert full.layers == (types.index("full_attention"),)
    assert sliding.layers == (types.index("sliding_attention"),)
    for mech in (full, sliding):
        assert support.rotary_error(model, mech) <= 1e-6


@pytest.mark.parametrize("model_type", ["smollm3", "llama4_text", "cohere2"])
def test_nope_layers_are_their_own_entry(model_type):
    model = support.build(model_type)
    found = find_positional_mechanisms(model)
    assert [m.kind for m in found] == ["rotary", "none"]
    rotary, none = found
    assert set(rotary.layers) | set(none.layers) == {0, 1} and not set(rotary.layers) & set(
        none.layers
    )
    # the layer left without rotation is the one the model's own code skips
    cfg = model.config
    flags = getattr(cfg, "no_rope_layers", None)
    expected = (
        [i for i, f in enumerate(flags) if not f]
        if flags
        else [i for i, t in enumerate(cfg.layer_types) if t != "sliding_attention"]
    )
    assert list(none.layers) == expected
    assert support.rotary_error(model, rotary) <= 1e-6


def test_mla_reports_the_whole_head_and_its_rotary_part():
    model = support.build("deepseek_v3")
    (mech,) = find_positional_mechanisms(model)
    cfg = model.config
    assert mech.rotary_dim == cfg.qk_rope_head_dim == 8
    assert mech.head_dim == cfg.qk_nope_head_dim + cfg.qk_rope_head_dim == 24
    assert support.rotary_error(model, mech) <= 1e-6


def test_deberta_relative_embeddings_are_named_not_none():
    config = sized_config(
        transformers.DebertaV2Config,
        relative_attention=True,
        position_buckets=16,
        max_relative_positions=64,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
    )
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "relative_embeddings" and mech.layers == (0, 1)
    np.testing.assert_array_equal(
        mech.table, model.encoder.rel_embeddings.weight.detach().double().numpy()
    )
    assert (mech.position_buckets, mech.max_relative_positions) == (16, 64)
    assert set(mech.terms) == {"p2c", "c2p"}
    from posgeom._errors import PosgeomError
    from posgeom.extension.model import model_from_config
    from posgeom.models import mechanism_encodings

    with pytest.raises(PosgeomError, match="no position geometry"):
        mech.to_encoding(4)
    with pytest.raises(PosgeomError, match="extend cannot scale these positions"):
        model_from_config(model.config, model=model, name="deberta")
    assert mechanism_encodings(model, 8) == {}  # analyze-model scores the layers only


def test_relative_embedding_buckets_match_deberta():
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    from posgeom.encodings.relative_embeddings import log_bucket_position

    r = np.arange(-2000, 2000)
    for size, limit in [(256, 512), (32, 64), (8, 100)]:
        theirs = make_log_bucket_position(torch.tensor(r), size, limit).numpy()
        np.testing.assert_array_equal(log_bucket_position(r, size, limit), theirs)


ROPE_TYPES = {
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 2.0},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 16.0},
    "longrope": {
        "factor": 2.0,
        "original_max_position_embeddings": 64,
        "short_factor": [1.0, 1.1, 1.2, 1.3],
        "long_factor": [1.5, 2.0, 2.5, 3.0],
    },
    "llama3": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    },
}


@pytest.mark.parametrize("rope_type", sorted(ROPE_TYPES))
def test_every_rope_type_with_its_parameters(rope_type):
    extra = ROPE_TYPES[rope_type]
    config = sized_config(
        transformers.LlamaConfig,
        max_position_embeddings=128,
        rope_parameters={"rope_type": rope_type, "rope_theta": 500.0, **extra},
    )
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    (mech,) = find_positional_mechanisms(model)
    doc = mech.as_dict()
    assert doc["rope_type"] == rope_type and doc["theta"] == 500.0 and doc["layers"] == [0, 1]
    params = {k: doc[k] for k in extra}
    assert params == extra  # transformers' names, transformers' values
    # posgeom's own formula from the reported parameters reproduces the model's module
    w, _ = rope_frequencies(rope_type, doc["head_dim"], doc["theta"], params, context=128)
    positions = torch.arange(8)[None]
    cos, sin = model.rotary_emb(torch.zeros(1, 8, 8), positions)
    angles = np.arctan2(sin[0].double().numpy(), cos[0].double().numpy())[:, : w.shape[0]]
    want = np.arange(8)[:, None] * w[None, :]
    wrapped = np.angle(np.exp(1j * (angles - want)))  # angles come back in (-pi, pi]
    assert np.all(np.abs(wrapped) <= 1e-6 * np.maximum(1.0, want))


def test_extract_json_is_one_document(tmp_path):
    from posgeom.cli.main import main

    model = support.build("smollm3")
    model.save_pretrained(tmp_path / "m")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["extract", str(tmp_path / "m"), "--json"]) == 0
    doc = json.loads(out.getvalue())
    assert set(doc) >= {"model", "model_type", "num_layers", "mechanisms"}
    assert doc["model_type"] == "smollm3" and doc["num_layers"] == 2
    kinds = [(m["kind"], m["layers"]) for m in doc["mechanisms"]]
    assert kinds == [("rotary", [0]), ("none", [1])]
    rotary = doc["mechanisms"][0]
    assert {"theta", "rotary_dim", "head_dim", "rope_type"} <= set(rotary)
    assert rotary["theta"] == model.config.rope_parameters["rope_theta"]


def test_learned_table_is_input_level_and_nope_model_all_none():
    bert = support.build("bert")
    assert _kinds(find_positional_mechanisms(bert)) == [("learned", None)]
    config = transformers.AutoConfig.for_model("smollm3")
    support._shrink(config)
    config.no_rope_layers = [0, 0]  # every block NoPE: the rotary module runs but nobody uses it
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    assert _kinds(find_positional_mechanisms(model, on_missing="none")) == [("none", (0, 1))]


def test_extend_names_the_layers_that_rotate():
    from posgeom.extension.model import model_from_config

    model = support.build("gemma3_text")
    ext = model_from_config(model.config, model=model, name="gemma")
    full = model.config.layer_types.index("full_attention")
    assert ext.family == "rope" and ext.summary()["layers"] == [full]
    assert ext.rope_parameters["rope_theta"] == 1_000_000.0
    smol = support.build("smollm3")
    assert model_from_config(smol.config, model=smol, name="s").summary()["layers"] == [0]


def test_support_page_has_a_row_for_every_model_type():
    """docs/SUPPORT.md covers transformers' whole model mapping: a new architecture of a later
    release fails here until ``python -m studies.support`` gives it a row."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    text = (support.DOCS / "SUPPORT.md").read_text()
    missing = [t for t in MODEL_MAPPING_NAMES if f"| {t} |" not in text]
    assert not missing, f"rerun python -m studies.support: no row for {missing[:10]}"


@pytest.mark.e2e  # every model type of the mapping, built, checked and run: 284 s on one thread
@pytest.mark.timeout(3600)
def test_full_matrix(tmp_path):
    """Every architecture of the mapping has a row; rotary angles agree to 1e-6; analyze-model,
    probe and extend ran on every rotary and learned architecture, and none of them raised an
    error that is posgeom's (a refusal says why in one line; a tiny-build fault is the tiny
    model's own)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    cache = tmp_path / "rows.jsonl"
    out = tmp_path / "SUPPORT.md"
    support.main(["--cache", str(cache), "--output", str(out)])
    rows = [support.Row(**r) for r in support.read_jsonl(cache)]
    assert {r.model_type for r in rows} == set(MODEL_MAPPING_NAMES)
    positional = [r for r in rows if any(m["kind"] != "none" for m in r.mechanisms)]
    assert len(positional) >= 60
    bad = [(r.model_type, r.rotary_error) for r in rows if r.rotary_error is not None]
    assert all(err <= 1e-6 for _, err in bad), [b for b in bad if not b[1] <= 1e-6]
    assert all(r.reason for r in rows if r.status != "ok")
    assert all(r.rotary_notes for r in rows if r.rotary_unchecked)  # each with its reason
    text = out.read_text()
    assert all(f"| {r.model_type} |" in text for r in rows)
    runnable = [r for r in rows if {"rotary", "learned"} & {m["kind"] for m in r.mechanisms}]
    assert all(set(r.runs) == {"analyze-model", "probe", "extend"} for r in runnable)
    errors = [
        (r.model_type, command, run["outcome"])
        for r in rows
        for command, run in r.runs.items()
        if run["status"] == "error"
    ]
    assert not errors, errors
    assert sum(r.runs["analyze-model"]["status"] == "ok" for r in runnable) >= 200


@pytest.mark.parametrize("model_type", ["openai-gpt", "ctrl", "m2m_100"])
def test_absolute_tables_under_other_names_are_found(model_type):
    """GPT-1's ``positions_embed``, CTRL's ``pos_encoding`` buffer and M2M-100's sinusoidal
    ``embed_positions.weights`` (rows from ``padding_idx + 1``): the rows the model adds."""
    model = support.build(model_type)
    found = find_positional_mechanisms(model)
    assert found and all(m.kind == "learned" and m.layers is None for m in found)
    mech = found[0]
    ids = torch.arange(3, 8)[None]
    if model_type == "m2m_100":
        rows = model.encoder.embed_positions(ids).detach().double().numpy()[0]
    elif model_type == "ctrl":
        rows = model.pos_encoding[:5].double().numpy()
    else:
        rows = model.positions_embed(torch.arange(5)).detach().double().numpy()
    np.testing.assert_allclose(mech.table[:5], rows, rtol=0, atol=1e-6)


def _smol_folder(tmp_path):
    """A tiny random SmolLM3 causal LM (layer 1 NoPE) and a 12-word word-level tokenizer."""
    tokenizers = pytest.importorskip("tokenizers")
    words = [f"w{i}" for i in range(12)]
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    config = transformers.AutoConfig.for_model("smollm3")
    support._shrink(config)
    config.vocab_size, config.max_position_embeddings, config.no_rope_layers = 13, 64, [1, 0]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    folder = tmp_path / "smol"
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    rng = np.random.default_rng(0)
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(" ".join(rng.choice(words, 20)) for _ in range(40)) + "\n")
    return folder, text


@pytest.mark.e2e  # three commands on a model: about a minute on two shared cores
@pytest.mark.filterwarnings("ignore")
def test_analyze_model_probe_and_extend_read_the_per_layer_map(tmp_path):
    """Smoke run of the three commands on a model with a NoPE block: each records it."""
    from posgeom.cli.main import main

    folder, text = _smol_folder(tmp_path)
    out = tmp_path / "analysis"
    argv = ["-q", "analyze-model", str(folder), str(text), "-n", "8", "-o", str(out)]
    assert main([*argv, "--noise", "none", "--no-refine", "--no-plot", "--bootstrap", "0"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    pairs = [(m["kind"], m["layers"]) for m in summary["mechanism_layers"]]
    assert pairs == [("rotary", [0]), ("none", [1])]
    probe = tmp_path / "probe"
    argv = ["-q", "probe", str(folder), str(text), "-n", "8", "--max-sequences", "40"]
    assert main([*argv, "-o", str(probe)]) == 0
    options = json.loads((probe / "summary.json").read_text())
    found = json.dumps(options)
    assert '"kind": "none", "layers": [1]' in found
    ext = tmp_path / "ext"
    argv = ["-q", "extend", str(folder), str(text), "--target-length", "128", "--no-fit"]
    assert main([*argv, "--replicates", "0", "-o", str(ext)]) == 0
    model = json.loads((ext / "summary.json").read_text())["model"]
    assert model["family"] == "rope" and model["layers"] == [0]


def test_value_sinusoids_are_not_rotary():
    """BROS's layout embedding and Voxtral-realtime's time embedding keep an ``inv_freq`` buffer
    but embed a value (a box coordinate, a time) as ``[sin(v w) | cos(v w)]`` features: their
    own modules' output is checked to be that, and only the token-position mechanisms are
    reported (BROS: its learned table; Voxtral-realtime: the rotary of its two towers, checked
    against their modules to 1e-6)."""
    from posgeom.encodings.value_sinusoid import embeds_values

    bros = support.build("bros")
    module = bros.bbox_embeddings.bbox_sinusoid_emb.x_pos_emb
    v = torch.tensor([[[0.0, 0.25, 0.5]]])  # (1, 1, 3) box coordinates
    w = module.inv_freq.double()
    angles = v.double()[..., None] * w
    want = torch.cat([angles.sin(), angles.cos()], dim=-1)
    torch.testing.assert_close(module(v).double(), want, rtol=0, atol=1e-6)
    assert embeds_values(module)
    (table,) = find_positional_mechanisms(bros)
    assert table.kind == "learned" and table.layers is None
    np.testing.assert_array_equal(
        table.table, bros.embeddings.position_embeddings.weight.detach().double().numpy()
    )
    vox = support.build("voxtral_realtime")
    time = vox.time_embedding
    t = torch.tensor([3.0])
    angles = t.double() * time.inv_freq.double()
    torch.testing.assert_close(
        time(t).double(), torch.cat([angles.cos(), angles.sin()]), rtol=0, atol=1e-5
    )
    assert embeds_values(time)
    found = find_positional_mechanisms(vox)
    assert [(m.kind, m.stack) for m in found] == [
        ("rotary", "audio_tower.layers"),
        ("rotary", "language_model.layers"),
    ]
    for mech in found:
        assert support.rotary_error(vox, mech) <= 1e-6
    assert not embeds_values(vox.language_model.rotary_emb)  # (x, position_ids): not judged
