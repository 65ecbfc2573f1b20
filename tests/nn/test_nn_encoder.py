"""Theorem 1: TinyEncoder without positions is permutation-equivariant; order-only task."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.nn import (  # noqa: E402
    ALiBiBias,
    LowRankPositionEmbedding,
    RotaryEmbedding,
    SinusoidalPositionEmbedding,
    TinyEncoder,
    accuracy,
    fit_classifier,
    order_task,
)

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _model(position, dtype=torch.float64):
    torch.manual_seed(0)
    return TinyEncoder(20, 16, 2, 2, 12, position).to(dtype).eval()


def _tokens(batch=3, length=12):
    return torch.randint(0, 20, (batch, length), generator=torch.Generator().manual_seed(5))


def test_nope_is_permutation_equivariant_float64():
    model = _model(None)
    x = _tokens()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        h, hp = model.encode(x), model.encode(x[:, perm])
        torch.testing.assert_close(hp, h[:, perm], atol=1e-12, rtol=0)
        torch.testing.assert_close(model(x[:, perm]), model(x), atol=1e-12, rtol=0)
    # also with padding: permuting tokens together with the mask
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[0, 8:] = 0
    with torch.no_grad():
        a = model(x, mask)
        b = model(x[:, perm], mask[:, perm])
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize("position", ["sinusoidal", "learned", "rope", "alibi"])
def test_positional_signal_breaks_equivariance(position):
    model = _model(position)
    x = _tokens()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        h, hp = model.encode(x), model.encode(x[:, perm])
    assert (hp - h[:, perm]).abs().max() > 1e-4


def test_symmetric_alibi_is_reversal_invariant():
    # -m|i-j| is unchanged by i -> L-1-i: reversing the sequence reverses the outputs, so a
    # mean-pooled encoder with symmetric ALiBi cannot tell "a before b" from "b before a"
    model = _model(ALiBiBias(2))
    x = _tokens()
    with torch.no_grad():
        torch.testing.assert_close(
            model.encode(x.flip(1)), model.encode(x).flip(1), atol=1e-12, rtol=0
        )


def test_encoder_rejects_mismatched_position_modules():
    with pytest.raises(PosgeomError, match="width 8 but d_model=16"):
        TinyEncoder(20, 16, 2, 1, 12, SinusoidalPositionEmbedding(12, 8))
    with pytest.raises(PosgeomError, match="RotaryEmbedding\\(8\\)"):
        TinyEncoder(20, 16, 2, 1, 12, RotaryEmbedding(4))
    with pytest.raises(PosgeomError, match="n_heads=2"):
        TinyEncoder(20, 16, 2, 1, 12, ALiBiBias(4))
    with pytest.raises(PosgeomError, match="divisible"):
        TinyEncoder(20, 15, 2, 1, 12)
    with pytest.raises(PosgeomError, match="unknown"):
        TinyEncoder(20, 16, 2, 1, 12, "bogus")
    with pytest.raises(PosgeomError, match="no torch module"):  # a family without one
        TinyEncoder(20, 16, 2, 1, 12, "xpos")


def test_order_task_pairs_share_bags_with_opposite_labels():
    task = order_task(200, 7, 10, seed=3)
    tokens, labels = task.tokens, task.labels
    assert tokens.shape == (200, 7) and labels.float().mean() == 0.5
    pos_a = (tokens == task.token_a).float().argmax(1)
    pos_b = (tokens == task.token_b).float().argmax(1)
    assert torch.all((tokens == task.token_a).sum(1) == 1) and torch.all(
        (tokens == task.token_b).sum(1) == 1
    )
    torch.testing.assert_close(labels, (pos_a < pos_b).long())
    # every bag of tokens appears with both labels
    bags = {}
    for t, y in zip(tokens.tolist(), labels.tolist(), strict=True):
        bags.setdefault(tuple(sorted(t)), set()).add(y)
    assert all(v == {0, 1} for v in bags.values())
    again = order_task(200, 7, 10, seed=3)
    assert torch.equal(again.tokens, tokens)
    with pytest.raises(PosgeomError, match="even"):
        order_task(3, 7, 10)


def _train_eval(position, steps=200):
    train = order_task(2048, 8, 12, seed=0)
    test = order_task(512, 8, 12, seed=1)
    torch.manual_seed(0)
    model = TinyEncoder(12, 32, 2, 1, 8, position)
    fit_classifier(model, train.tokens, train.labels, steps=steps, lr=3e-3, batch_size=64, seed=0)
    return accuracy(model, test.tokens, test.labels)


def test_order_task_nope_at_chance_positions_learn():
    # Theorem 1: without positions the pooled output depends only on the bag of tokens, and every
    # bag appears with both labels, so accuracy is 0.5 on paired data
    assert _train_eval(None) <= 0.6
    assert _train_eval("sinusoidal") >= 0.9
    assert _train_eval("learned") >= 0.9


@pytest.mark.e2e  # three trainings of 300 steps: 3.4 s
def test_order_task_other_encodings():
    assert _train_eval("rope", steps=300) >= 0.9
    assert _train_eval(LowRankPositionEmbedding(8, 32, 2), steps=300) >= 0.9
    assert _train_eval("alibi", steps=300) <= 0.6  # symmetric ALiBi is reversal invariant
