"""RoPE against transformers' Llama implementation; ALiBi against BLOOM's slopes and hand values."""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")
os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.nn import ALiBiBias, RotaryEmbedding, alibi_slopes  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _hf_rope(head_dim: int, base: float, rope_parameters: dict | None = None):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    n_heads = 2
    params = {"rope_type": "default", "rope_theta": base}
    params.update(rope_parameters or {})
    cfg = LlamaConfig(
        hidden_size=head_dim * n_heads,
        num_attention_heads=n_heads,
        num_key_value_heads=n_heads,
        intermediate_size=8,
        num_hidden_layers=1,
        vocab_size=16,
        max_position_embeddings=64,
        rope_parameters=params,
    )
    return LlamaRotaryEmbedding(cfg)


@pytest.mark.parametrize("base", [10000.0, 100000.0])
def test_rope_matches_llama_float32(base):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    head_dim = 16
    q = torch.randn(2, 3, 7, head_dim)
    k = torch.randn(2, 3, 7, head_dim)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [3, 9, 20, 21, 40, 50, 63]])
    hf = _hf_rope(head_dim, base)
    cos, sin = hf(q, pos)
    q_ref, k_ref = apply_rotary_pos_emb(q, k, cos, sin)
    rope = RotaryEmbedding(head_dim, base=base)
    q_rot, k_rot = rope.apply(q, k, pos)
    torch.testing.assert_close(q_rot, q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k_rot, k_ref, atol=1e-5, rtol=1e-5)
    # (L,) position ids broadcast like (1, L)
    q1, _ = rope.apply(q, k, pos[1])
    torch.testing.assert_close(q1[1], q_rot[1])


def test_rope_matches_llama_bfloat16():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    head_dim = 32
    q32 = torch.randn(1, 2, 50, head_dim)
    k32 = torch.randn(1, 2, 50, head_dim)
    q, k = q32.bfloat16(), k32.bfloat16()
    pos = torch.arange(50)[None]
    hf = _hf_rope(head_dim, 10000.0)
    cos, sin = hf(q, pos)
    q_ref, k_ref = apply_rotary_pos_emb(q, k, cos, sin)
    q_rot, k_rot = RotaryEmbedding(head_dim).apply(q, k, pos)
    assert q_rot.dtype == torch.bfloat16 and k_rot.dtype == torch.bfloat16
    # both agree to bfloat16 resolution
    torch.testing.assert_close(q_rot.float(), q_ref.float(), atol=3e-2, rtol=2e-2)
    torch.testing.assert_close(k_rot.float(), k_ref.float(), atol=3e-2, rtol=2e-2)
    # float32 position math: posgeom is at least as close to the float32 rotation as HF's bf16 path
    q_exact, _ = RotaryEmbedding(head_dim).apply(q.float(), k.float(), pos)
    err_ours = (q_rot.float() - q_exact).abs().max()
    err_hf = (q_ref.float() - q_exact).abs().max()
    assert err_ours <= err_hf + 1e-6


def test_rope_linear_scaling_matches_llama():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    head_dim = 8
    q = torch.randn(1, 1, 10, head_dim)
    k = torch.randn(1, 1, 10, head_dim)
    pos = torch.arange(10)[None] * 5
    hf = _hf_rope(head_dim, 10000.0, {"rope_type": "linear", "factor": 4.0})
    q_ref, k_ref = apply_rotary_pos_emb(q, k, *hf(q, pos))
    q_rot, k_rot = RotaryEmbedding(head_dim, scaling={"type": "linear", "factor": 4.0}).apply(
        q, k, pos
    )
    torch.testing.assert_close(q_rot, q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k_rot, k_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "params",
    [
        {"rope_type": "longrope", "original_max_position_embeddings": 16, "factor": 4.0},
        {"rope_type": "dynamic", "factor": 2.0},
    ],
    ids=["longrope", "dynamic"],
)
@pytest.mark.parametrize("length", [12, 40, 96])
def test_length_dependent_scaling_matches_llama(params, length):
    """LongRoPE and dynamic NTK follow the current length as transformers' rotary module does
    (below the original length: short factors / plain theta; beyond it: long factors / NTK)."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    head_dim = 8
    params = dict(params)
    if params["rope_type"] == "longrope":
        params["short_factor"] = [1.0, 1.5, 2.0, 2.5]
        params["long_factor"] = [1.0, 3.0, 6.0, 9.0]
    q = torch.randn(1, 1, length, head_dim, dtype=torch.float64)
    k = torch.randn(1, 1, length, head_dim, dtype=torch.float64)
    pos = torch.arange(length)[None]
    hf = _hf_rope(head_dim, 10000.0, params)
    q_ref, k_ref = apply_rotary_pos_emb(q, k, *hf(q, pos))
    scaling = {k: v for k, v in params.items() if k != "rope_type"} | {"type": params["rope_type"]}
    if params["rope_type"] == "dynamic":  # the model's context, as transformers reads it
        scaling["max_position_embeddings"] = hf.original_max_seq_len
    rope = RotaryEmbedding(head_dim, scaling=scaling)
    q_rot, k_rot = rope.apply(q, k, pos)
    torch.testing.assert_close(q_rot, q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k_rot, k_ref, atol=1e-5, rtol=1e-5)


def test_rope_hand_values_and_relative_property():
    # head_dim 2: a single plane, angle p; [x0, x1] -> [x0 cos p - x1 sin p, x1 cos p + x0 sin p]
    rope = RotaryEmbedding(2)
    q = torch.tensor([[[[1.0, 2.0]]]], dtype=torch.float64)
    p = 3
    out, _ = rope.apply(q, q, torch.tensor([p]))
    hand = [math.cos(p) - 2 * math.sin(p), 2 * math.cos(p) + math.sin(p)]
    torch.testing.assert_close(out[0, 0, 0], torch.tensor(hand, dtype=torch.float64))
    # NTK scaling: base' = base * f^(h/(h-2)); for h=4, f=2: base' = 4 base
    ntk = RotaryEmbedding(4, scaling={"type": "ntk", "factor": 2.0})
    torch.testing.assert_close(ntk.inv_freq, torch.tensor([1.0, 1.0 / math.sqrt(40000.0)]))
    # q_m · k_n depends only on m - n
    rope = RotaryEmbedding(8)
    qv = torch.randn(1, 1, 1, 8, dtype=torch.float64)
    kv = torch.randn(1, 1, 1, 8, dtype=torch.float64)

    def score(m, n):
        qm, _ = rope.apply(qv, qv, torch.tensor([m]))
        _, kn = rope.apply(kv, kv, torch.tensor([n]))
        return float((qm * kn).sum())

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-12)


def test_rope_errors():
    with pytest.raises(PosgeomError, match="even"):
        RotaryEmbedding(7)
    with pytest.raises(PosgeomError, match="head_dim=8"):
        RotaryEmbedding(8).apply(torch.zeros(1, 1, 2, 6), torch.zeros(1, 1, 2, 6))
    with pytest.raises(PosgeomError, match="scaling"):
        RotaryEmbedding(8, scaling={"type": "yarn", "factor": 2.0})


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 12, 16, 6, 20])
def test_alibi_slopes_match_bloom(n_heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    ref = build_alibi_tensor(torch.ones(1, 2), n_heads, torch.float32).reshape(n_heads, 2)[:, 1]
    torch.testing.assert_close(ALiBiBias(n_heads).slopes, ref, atol=0, rtol=1e-6)
    torch.testing.assert_close(torch.tensor(alibi_slopes(n_heads), dtype=torch.float32), ref)


def test_alibi_slopes_hand_values():
    assert alibi_slopes(8) == [2.0 ** (-k) for k in range(1, 9)]
    assert alibi_slopes(4) == [2.0 ** (-2 * k) for k in range(1, 5)]
    # 12 heads: 8 slopes of 8 heads, then slopes 1, 3, 5, 7 of 16 heads (2^{-k/2}, k odd)
    assert alibi_slopes(12)[8:] == pytest.approx([2.0 ** (-k / 2) for k in (1, 3, 5, 7)])


def test_alibi_bias_symmetric_and_causal():
    bias = ALiBiBias(2)(4)
    assert bias.shape == (2, 4, 4)
    m = [0.0625, 0.00390625]  # 2^-4, 2^-8
    for h in range(2):
        for i in range(4):
            for j in range(4):
                assert float(bias[h, i, j]) == -m[h] * abs(i - j)
    causal = ALiBiBias(2, causal=True)(torch.arange(4))
    for i in range(4):
        for j in range(4):
            if j <= i:
                assert float(causal[1, i, j]) == -m[1] * (i - j)
            else:
                assert causal[1, i, j] == float("-inf")
    # softmax rows of the causal bias equal the BLOOM-style (key-position) bias rows, which
    # differ by a per-row constant (translation invariance of softmax)
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    bloom = build_alibi_tensor(torch.ones(1, 4), 2, torch.float32).reshape(2, 1, 4)
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
    torch.testing.assert_close(
        torch.softmax(causal, -1), torch.softmax(bloom.expand(2, 4, 4).masked_fill(mask, -1e30), -1)
    )
