"""Models whose positions the first support matrix called ``none``: each mechanism found from
what the model has, on tiny random models of transformers' own classes, and checked against
what the model itself computes (its position module's output, its bias, its lookup)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.models import sized_config  # noqa: E402
from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.encodings.t5_mechanism import t5_relative_position_bucket  # noqa: E402
from posgeom.extension.model import model_from_config  # noqa: E402
from posgeom.models import find_positional_mechanisms, mechanism_encodings  # noqa: E402
from studies import support  # noqa: E402

torch.set_num_threads(1)


def _randomise(model, name):
    """Random values in the tables called ``name`` (some models initialise them to zeros)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if pname.endswith(name):
                param.copy_(torch.randn(param.shape, generator=gen))


def test_ibert_quantised_position_table_is_learned():
    model = support.build("ibert")
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "learned" and mech.layers is None and mech.offset == 2  # padding_idx 1
    # the rows the model's embeddings look up for the positions of 5 real tokens
    emb = model.embeddings
    ids = torch.arange(3, 8)[None]
    positions = transformers.models.ibert.modeling_ibert.create_position_ids_from_input_ids(
        ids, emb.padding_idx
    )
    rows, _ = emb.position_embeddings(positions)
    np.testing.assert_allclose(mech.table[:5], rows[0].detach().double().numpy(), atol=1e-6)


def test_cpmant_buckets_are_t5_buckets_of_its_bias():
    model = support.build("cpmant")
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "relative_buckets" and mech.layers == (0, 1)
    cfg = model.config
    assert (mech.num_buckets, mech.max_distance) == (
        cfg.position_bias_num_buckets,
        cfg.position_bias_max_distance,
    )
    _randomise(model, "relative_attention_bias")
    (mech,) = find_positional_mechanisms(model)
    n = 200  # past max_exact and max_distance: the logarithmic and the clamped buckets
    pos, seg = torch.arange(n)[None], torch.zeros(1, n, dtype=torch.long)
    theirs = model.position_bias(pos, pos, seg, seg)[0].detach().double().numpy()  # (H, n, n)
    r = np.arange(n)[None, :] - np.arange(n)[:, None]  # key - query
    ours = mech.bias_table[
        t5_relative_position_bucket(
            r, bidirectional=True, num_buckets=mech.num_buckets, max_distance=mech.max_distance
        )
    ].transpose(2, 0, 1)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_xlnet_relative_sinusoid_matches_its_encoding():
    model = support.build("xlnet")
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "sinusoidal" and mech.relative and mech.layers == (0, 1)
    assert mech.layout == "concat" and mech.inv_freq.shape == (model.config.d_model // 2,)
    n = 300
    theirs = model.relative_positional_encoding(n, n)[:, 0].double().numpy()  # offsets n .. -n+1
    offsets = n - np.arange(2 * n)
    np.testing.assert_allclose(mech.params.vectors(offsets), theirs, atol=2e-5)
    ext = model_from_config(model.config, model=model, name="xlnet")
    assert ext.family == "sinusoidal" and ext.params["d"] == model.config.d_model
    assert ext.params["base"] == pytest.approx(10000.0, rel=1e-5)


def test_pegasus_x_absolute_sinusoid_matches_its_module():
    model = support.build("pegasus_x")
    found = find_positional_mechanisms(model)
    assert [(m.kind, m.layers) for m in found] == [("sinusoidal", None)] * 2
    n, d = 500, model.config.d_model
    # the module computes in its input's dtype: float64 hidden states, float64 sinusoid
    hidden = torch.zeros(1, n, d, dtype=torch.float64)
    theirs = model.encoder.embed_positions(hidden)[0].numpy()
    np.testing.assert_allclose(found[0].to_encoding(n), theirs, atol=1e-9)
    # Pegasus-X's w_k = 10000^(-k/(d/2 - 1)) is Vaswani's formula with base 10000^(d/(d-2))
    base = found[0].params.standard_base()
    assert base == pytest.approx(10000.0 ** (d / (d - 2)), rel=1e-5)
    enc = mechanism_encodings(model, 16)
    assert enc["sinusoidal"].vectors.shape == (16, d)


def test_speecht5_relative_table_is_the_rows_its_encoder_looks_up():
    model = support.build("speecht5")
    found = find_positional_mechanisms(model)
    rel = [m for m in found if m.kind == "relative_embeddings"]
    assert len(rel) == 1 and rel[0].layers == (0, 1)
    mech = rel[0]
    module = model.encoder.wrapped_encoder.embed_positions
    np.testing.assert_array_equal(mech.table, module.pe_k.weight.detach().double().numpy())
    m = mech.max_relative_positions
    n = 2 * m + 20  # past the clipping on both sides
    out = module(torch.zeros(1, n, model.config.hidden_size)).detach().double().numpy()
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(out, mech.table[np.clip(i - j, -m, m - 1) + m])
    with pytest.raises(PosgeomError, match="extend cannot scale these positions"):
        model_from_config(model.config, model=model, name="speecht5")


def test_swin_window_bias_is_the_bias_its_blocks_add():
    model = support.build("swin")
    _randomise(model, "relative_position_bias_table")
    found = find_positional_mechanisms(model)
    assert {m.kind for m in found} == {"window_bias"}
    stages = {m.stack: m for m in found}
    assert len(found) == sum(model.config.depths)  # one entry per block: tables differ
    assert set(stages) == {f"encoder.layers.{s}.blocks" for s in range(4)}
    for mech in found:
        block = model.get_submodule(f"{mech.stack}.{mech.layers[0]}")
        theirs = block.attention.relative_position_bias()[0].detach().double().numpy()
        np.testing.assert_allclose(mech.params.bias(), theirs, atol=1e-6)
    dist = found[0].to_encoding(5, head=0)
    b = found[0].params.bias()[0]
    want = 0.5 * (abs(b[1, 3] - b[1, 1]) + abs(b[3, 1] - b[3, 3]))
    assert dist[1, 3] == pytest.approx(want) and np.allclose(np.diag(dist), 0)
    with pytest.raises(PosgeomError, match="window_bias"):
        model_from_config(model.config, model=model, name="swin")
    assert mechanism_encodings(model, 8) == {}


def test_beit_window_bias_with_its_cls_rows():
    config = sized_config(
        transformers.BeitConfig, image_size=32, patch_size=8, use_relative_position_bias=True
    )
    torch.manual_seed(0)
    model = transformers.BeitModel(config).eval()
    _randomise(model, "relative_position_bias_table")
    found = find_positional_mechanisms(model)
    assert [m.kind for m in found] == ["window_bias", "window_bias"]
    for i, mech in enumerate(found):
        assert mech.window == (4, 4) and mech.extra_rows == 3 and mech.layers == (i,)
        module = model.get_submodule(mech.source.rsplit(".", 1)[0])
        theirs = module((4, 4))[0, :, 1:, 1:].detach().double().numpy()  # patches, not [CLS]
        np.testing.assert_allclose(mech.params.bias(), theirs, atol=1e-6)
    # the default BEiT configuration has no positions at all (every position flag off)
    plain = transformers.BeitModel(
        transformers.BeitConfig(**{**config.to_dict(), "use_relative_position_bias": False})
    )
    assert [m.kind for m in find_positional_mechanisms(plain, on_missing="none")] == ["none"]


@pytest.mark.parametrize(
    ("model_type", "form"),
    [
        ("qwen2_vl_text", "(x, position_ids)"),  # M-RoPE: sections fitted to the tiny head
        ("qwen3_vl_vision", "(x, 2-D grid (P, 2))"),
        ("pixtral", "(x, 2-D grid (P, 2))"),
        ("gemma4_vision", "(x, 2-D grid (1, P, 2))"),
    ],
)
def test_rotaries_are_checked_with_their_own_signature(model_type, form):
    """M-RoPE and vision rotaries, called with every axis at position p, give the angles
    p w_k of the reported frequencies (to 1e-6), and a wrong frequency is caught."""
    import dataclasses

    model = support.build(model_type)
    (mech,) = [m for m in find_positional_mechanisms(model) if m.kind == "rotary"]
    error, used = support.rotary_check(model, mech)
    assert error <= 1e-6 and used == form
    wrong = dataclasses.replace(
        mech, params=dataclasses.replace(mech.params, inv_freq=mech.params.inv_freq * 1.01)
    )
    assert support.rotary_error(model, wrong) > 1e-3


def test_a_rotary_module_without_positions_stays_unchecked_with_its_reason():
    row = support.run_one("dinov3_vit")  # its rotary is computed from the pixels' patch grid
    assert row.rotary_unchecked == 1 and row.rotary_error is None
    assert row.rotary_notes == ["DINOv3ViTRopePositionEmbedding(pixel_values: torch.Tensor)"]


def test_wavlm_buckets_are_t5_buckets_and_its_convolution_is_named():
    model = support.build("wavlm")
    _randomise(model, "rel_attn_embed.weight")
    found = find_positional_mechanisms(model)
    assert [m.kind for m in found] == ["relative_buckets", "conv_positions"]
    buckets, conv = found
    assert buckets.layers == (0, 1) and conv.layers is None  # bias of block 0 passed on
    attention = model.encoder.layers[0].attention
    n = 300
    theirs = attention.compute_bias(n, n).detach().double().numpy()  # (H, n, n)
    r = np.arange(n)[None, :] - np.arange(n)[:, None]
    kw = {"num_buckets": buckets.num_buckets, "max_distance": buckets.max_distance}
    ours = buckets.bias_table[t5_relative_position_bucket(r, bidirectional=True, **kw)]
    np.testing.assert_allclose(ours.transpose(2, 0, 1), theirs, atol=1e-6)
    assert conv.kernel_size == model.config.num_conv_pos_embeddings
    with pytest.raises(PosgeomError, match="conv_positions"):
        conv.to_encoding(4)


def test_conformer_relative_sinusoid_is_the_rows_of_its_offsets():
    model = support.build("wav2vec2-conformer")
    sines = [m for m in find_positional_mechanisms(model) if m.kind == "sinusoidal"]
    assert len(sines) == 1 and sines[0].relative and sines[0].layers == (0, 1)
    n, d = 100, model.config.hidden_size
    out = model.encoder.embed_positions(torch.zeros(1, n, d))[0].double().numpy()
    offsets = n - 1 - np.arange(2 * n - 1)  # the module's rows run from n - 1 down to -(n - 1)
    np.testing.assert_allclose(sines[0].params.vectors(offsets), out, atol=2e-5)


@pytest.mark.parametrize(
    ("model_type", "table"),
    [
        ("bark", "position_embeds_layer.weight"),
        ("patchtst", "encoder.positional_encoder.position_enc"),
        ("qwen3_asr_encoder", "positional_embedding.positional_embedding"),
    ],
)
def test_tables_under_further_names_are_learned(model_type, table):
    model = support.build(model_type)
    found = find_positional_mechanisms(model)
    mech = next(m for m in found if m.source.endswith(table))
    assert mech.kind == "learned" and mech.layers is None
    weight = dict([*model.named_parameters(), *model.named_buffers()])[mech.source]
    np.testing.assert_array_equal(mech.table, weight.detach().double().numpy()[mech.offset :])


def test_per_block_relative_tables_act_on_their_own_block():
    model = support.build("granite_speech5_encoder")
    found = find_positional_mechanisms(model)
    assert [(m.kind, m.layers) for m in found] == [("relative_embeddings", (i,)) for i in (0, 1)]
    for i, mech in enumerate(found):
        assert mech.source.startswith(f"{mech.stack}.{i}.")  # each block's own table
        weight = model.get_parameter(mech.source).detach().double().numpy()
        np.testing.assert_array_equal(mech.table, weight)
    assert not np.array_equal(found[0].table, found[1].table)


def test_a_constant_attention_output_leaves_the_layers_to_the_configuration():
    """NeoMME's two bases land on their layer types' blocks (full attention on the global
    layer, the window base on the other): with its zero output projection the probe cannot
    tell and the layer types decide; with the tiny build's drawn projection the probe decides,
    and its full-attention base (two planes, ``w = (1, 0.001)``, a subset of the window base's
    eight) is kept off the window block, which received the wider set-up."""
    model = support.build("neomme")
    found = find_positional_mechanisms(model)
    types = model.config.layer_types
    for mech in found:
        assert mech.kind == "rotary"
        assert mech.layers == tuple(i for i, t in enumerate(types) if t == mech.layer_type)


def test_a_relative_sinusoid_with_inv_freq_is_not_called_rotary():
    """Parakeet's ``encode_positions`` keeps an ``inv_freq`` buffer but returns the sinusoid of
    the offsets L-1 .. -(L-1) (Transformer-XL style), which attention projects and adds."""
    model = support.build("parakeet_encoder")
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "sinusoidal" and mech.relative
    n = 50
    out = model.encode_positions(torch.zeros(1, n, model.config.hidden_size))
    offsets = n - 1 - np.arange(2 * n - 1)
    np.testing.assert_allclose(mech.params.vectors(offsets), out[0].double().numpy(), atol=2e-5)


def test_relative_key_tables_and_stacked_position_convolutions():
    bert2 = support.build("wav2vec2-bert")
    found = find_positional_mechanisms(bert2)
    assert [(m.kind, m.layers) for m in found] == [("relative_embeddings", (i,)) for i in (0, 1)]
    for mech in found:  # the rows each block's attention looks up per clipped offset
        weight = bert2.get_parameter(mech.source).detach().double().numpy()
        np.testing.assert_array_equal(mech.table, weight)
    audio = support.build("data2vec-audio")
    (conv,) = find_positional_mechanisms(audio)
    assert conv.kind == "conv_positions" and conv.layers is None
    assert conv.convolutions == audio.config.num_conv_pos_embeddings
    assert conv.kernel_size == audio.config.conv_pos_kernel_size


def test_rotary_set_ups_not_named_after_a_layer_type_act_on_every_block():
    """DeepSeek-V4's ``main`` and ``compress`` bases are not among its layer types
    (``heavily_compressed_attention``, ...): the layer types do not filter them away."""
    model = support.build("deepseek_v4")
    found = [m for m in find_positional_mechanisms(model) if m.stack == "layers"]
    assert {m.layer_type for m in found} == {"main", "compress"}
    assert all(m.kind == "rotary" and m.layers == (0, 1) for m in found)
    assert all(support.rotary_error(model, m) <= 1e-6 for m in found)
