"""Smoke runs of analyze-model, probe and extend on tiny random models of transformers' zoo.

The default suite runs a stratified handful (one per kind: an encoder with a learned table, a
decoder with rotary, rotary with a base per layer type, a decoder with NoPE layers, an
encoder-decoder) through the library functions the commands call; the e2e matrix
(``test_support_matrix.py::test_full_matrix``) runs every rotary and learned architecture. The
outcomes are checked against what the models are: the number of hidden states transformers
returns, the blocks the configuration rotates, the learned table's length.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.models import find_positional_mechanisms  # noqa: E402
from posgeom.models.token_input import check_token_input, token_input_problem  # noqa: E402
from studies import support  # noqa: E402
from studies import support_runs as sr  # noqa: E402

torch.set_num_threads(1)


def _rotating_blocks(config) -> list[int]:
    """The blocks transformers rotates, read from the configuration as the modelling code does:
    SmolLM3's ``no_rope_layers`` (1: rotary), else every block."""
    flags = getattr(config, "no_rope_layers", None)
    if flags:
        return [i for i, f in enumerate(flags) if f]
    return list(range(config.num_hidden_layers))


HANDFUL = {  # one architecture per kind of the matrix
    "bert": "learned",  # encoder, learned table
    "llama": "rope",  # decoder, rotary on every block
    "gemma3_text": "rope",  # a base per layer type: extend scales the full-attention blocks
    "smollm3": "rope",  # NoPE blocks: extend scales only the rotating ones
    "bart": "learned",  # encoder-decoder, learned tables (the encoder is run)
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("model_type", sorted(HANDFUL))
def test_commands_run_on_one_architecture_per_kind(model_type):
    model = support.build(model_type)
    found = find_positional_mechanisms(model, on_missing="none")
    got = sr.runs(model, {m.kind for m in found})
    assert set(got) == set(sr.COMMANDS)
    assert all(r["status"] == "ok" for r in got.values()), got
    # analyze-model and probe score one hidden state per block plus the embeddings, as
    # transformers returns them for the token ids (an encoder-decoder: its encoder)
    forward = model.get_encoder() if model.config.is_encoder_decoder else model
    ids = torch.arange(1, 9)[None]
    with torch.no_grad():
        states = forward(input_ids=ids, output_hidden_states=True).hidden_states
    assert got["analyze-model"]["outcome"].startswith(f"{len(states)} layers, stress ")
    assert f"{len(states)} layers, linear MAE" in got["probe"]["outcome"]
    family, _, recommended = got["extend"]["outcome"].partition(": ")
    assert family == HANDFUL[model_type]
    if model_type == "gemma3_text":  # the global (full-attention) blocks only
        full = [i for i, t in enumerate(model.config.layer_types) if t == "full_attention"]
        assert recommended.endswith(f"(layers {full})")
    elif family == "rope":
        assert recommended.endswith(f"(layers {_rotating_blocks(model.config)})")
    if family == "learned":  # the table is probed beside the layers
        assert got["probe"]["outcome"].startswith("table MAE ")


def test_the_synthetic_corpus_is_the_token_ids_the_model_sees():
    """``t<i>`` is id ``i``: the tokenizer hands the model exactly the drawn ids, and the id at
    position ``k`` lies in its drifting window ``1 + (3k + {0..5}) mod (V - 1)``."""
    rows = 97
    tok = sr.id_tokenizer(rows)
    texts = sr.smoke_corpus(rows)
    assert len(texts) == sr.SEQUENCES
    ids = np.array([tok(t)["input_ids"] for t in texts])
    spelt = np.array([[int(w[1:]) for w in t.split()] for t in texts])
    np.testing.assert_array_equal(ids, spelt)
    k = np.arange(sr.LENGTH)
    offset = (ids - 1 - 3 * k[None, :]) % (rows - 1)
    assert offset.min() == 0 and offset.max() == 5
    assert tok.all_special_ids == []


@pytest.mark.filterwarnings("ignore")
def test_models_that_do_not_read_token_ids_are_refused_in_one_line():
    vit = support.build("vit")  # forward(pixel_values, ...): no input_ids
    assert token_input_problem(vit) == "its forward reads pixel_values, not input_ids"
    clip = support.build("clip")  # two towers: no token embedding of its own
    assert "no token embedding" in token_input_problem(clip)
    for model in (vit, clip):
        with pytest.raises(PosgeomError, match="does not read token ids alone") as info:
            check_token_input(model)
        assert "\n" not in str(info.value)
    assert token_input_problem(support.build("bert")) is None
    got = sr.runs(vit, {"learned"})
    assert {r["status"] for r in got.values()} == {"refused"}
    # BLIP takes input_ids but its forward asks for pixel_values at run time
    blip = support.build("blip")
    got = sr.runs(blip, {"learned"})
    assert got["analyze-model"]["status"] == "refused"
    assert "pixel_values" in got["analyze-model"]["outcome"]


@pytest.mark.filterwarnings("ignore")
def test_a_model_whose_own_forward_fails_is_a_tiny_build_fault_not_an_error():
    """A tiny configuration the model's own code cannot run is recorded as ``tiny``."""
    config = transformers.AutoConfig.for_model("llama")
    support._shrink(config)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    model.layers[0].self_attn.head_dim = 3  # the model's own forward now fails on reshape
    with pytest.raises(RuntimeError):
        model(input_ids=torch.arange(1, 9)[None])
    got = sr.runs(model, {"rotary"})
    assert got["analyze-model"]["status"] == "tiny"
    assert got["analyze-model"]["outcome"].startswith("the tiny model's own forward fails")


@pytest.mark.filterwarnings("ignore")
def test_extend_reads_encoders_and_vision_language_models_from_their_text_path():
    """ALBERT has no causal LM in transformers: extend reads its weights with AutoModel; Aria's
    language model rotates (its vision tower has a learned patch table): extend scales the
    language model's rotary, not the patch table; CodeGen's fused qkv projection has no plane use
    to read: the model-aware predictor is left out, with a note, instead of refusing."""
    for model_type, family in (("albert", "learned"), ("aria", "rope"), ("codegen", "rope")):
        model = support.build(model_type)
        rows = model.get_input_embeddings().weight.shape[0]
        line = sr._extend(model, sr.id_tokenizer(rows), sr.smoke_corpus(rows))
        assert line.split(":")[0] == family, (model_type, line)
    text = model.config  # codegen
    assert text.n_layer == 2 and line.endswith("(layers [0, 1])")


@pytest.mark.filterwarnings("ignore")
def test_hidden_states_with_several_residual_streams_are_averaged_over_them():
    """DeepSeek-V4's hyper-connections carry ``N`` residual streams per token (hidden states
    ``(B, T, N, d)`` except the last): each layer's per-position mean is the mean over the
    tokens at that position of the mean over the streams, computed here from transformers' own
    forward."""
    from posgeom.models import layerwise_positional_signal

    model = support.build("deepseek_v4")
    ids = torch.as_tensor(np.random.default_rng(0).integers(1, 200, (6, 5)))
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states
    assert states[0].ndim == 4 and states[-1].ndim == 3
    want = np.stack(
        [(h.mean(dim=2) if h.ndim == 4 else h).double().mean(dim=0).numpy() for h in states]
    )
    signal = layerwise_positional_signal(
        model, None, [list(map(int, row)) for row in ids], max_positions=5, progress=False
    )
    np.testing.assert_allclose(signal.means, want, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_extend_refuses_a_proportional_rope_without_strategies_in_one_line():
    """LFM 3's full-attention layers use rope_type 'proportional' (the first planes rotate, the
    rest are kept, as transformers' own frequencies show: zeros after the rotating planes);
    extend's built-in strategies are not defined for it: refused with the fix."""
    model = support.build("lfm3")
    found = find_positional_mechanisms(model)
    full = next(m for m in found if m.params.layer_type == "full_attention")
    w = np.asarray(full.params.inv_freq)
    assert w[w.size // 2 :].max() == 0 and w[: w.size // 2].min() > 0
    rows = model.get_input_embeddings().weight.shape[0]
    with pytest.raises(PosgeomError, match="proportional") as info:
        sr._extend(model, sr.id_tokenizer(rows), sr.smoke_corpus(rows))
    assert "--strategies" in str(info.value) and "\n" not in str(info.value)
