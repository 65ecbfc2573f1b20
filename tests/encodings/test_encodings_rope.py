"""RoPE inverse frequencies and rotations against Hugging Face transformers (Llama)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import posgeom.encodings as enc
from posgeom._errors import PosgeomError

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)


def _config(rope_parameters: dict, max_pos: int = 64, head_dim: int = 32) -> LlamaConfig:
    return LlamaConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_pos,
        rope_parameters=rope_parameters,
    )


def _inv(config: LlamaConfig, kind: str, **kw) -> tuple[np.ndarray, float]:
    if kind == "default":
        inv, att = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        inv, att = ROPE_INIT_FUNCTIONS[kind](config, **kw)
    return inv.double().numpy(), float(att)


def test_default_and_linear_match_transformers():
    hf, _ = _inv(_config({"rope_type": "default", "rope_theta": 500.0}), "default")
    ours, att = enc.rope_inverse_frequencies(32, 500.0)
    np.testing.assert_allclose(ours, hf, rtol=1e-6)
    assert att == 1.0
    hf, _ = _inv(_config({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}), "linear")
    np.testing.assert_allclose(
        enc.rope_inverse_frequencies(32, scaling="linear", factor=4.0)[0], hf, rtol=1e-6
    )


@pytest.mark.parametrize("seq_len", [8, 16, 40, 100])
def test_dynamic_ntk_matches_transformers(seq_len):
    cfg = _config({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, max_pos=16)
    hf, _ = _inv(cfg, "dynamic", seq_len=seq_len)
    ours, _ = enc.rope_inverse_frequencies(
        32, scaling="dynamic", factor=2.0, seq_len=seq_len, original_max_position_embeddings=16
    )
    np.testing.assert_allclose(ours, hf, rtol=1e-6)
    e = enc.rope(
        seq_len, head_dim=32, scaling="dynamic", factor=2.0, original_max_position_embeddings=16
    )
    np.testing.assert_allclose(e.inv_freq, hf, rtol=1e-6)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"beta_fast": 16.0, "beta_slow": 2.0},
        {"truncate": False},
        {"mscale": 1.0, "mscale_all_dim": 0.5},
        {"attention_factor": 0.7},
    ],
)
def test_yarn_matches_transformers(extra):
    params = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 16,
        **extra,
    }
    hf, hf_att = _inv(_config(params), "yarn")
    e = enc.rope(
        64, head_dim=32, scaling="yarn", factor=4.0, original_max_position_embeddings=16, **extra
    )
    np.testing.assert_allclose(e.inv_freq, hf, rtol=1e-6)
    assert e.attention_factor == pytest.approx(hf_att, rel=1e-12)
    # extrapolated (high-frequency) planes keep theta_0 = 1; the slowest plane is interpolated
    assert e.inv_freq[0] == pytest.approx(1.0)
    assert e.inv_freq[-1] == pytest.approx(10000 ** (-30 / 32) / 4.0)


def test_rotation_matches_apply_rotary_pos_emb():
    n, h = 12, 16
    cfg = _config({"rope_type": "default", "rope_theta": 10000.0}, head_dim=h)
    rot = LlamaRotaryEmbedding(cfg)
    q = torch.randn(1, 2, n, h, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    cos, sin = rot(q, torch.arange(n)[None, :])
    q_hf, _ = apply_rotary_pos_emb(q, q, cos.double(), sin.double())
    e = enc.rope(n, head_dim=h)
    np.testing.assert_allclose(e.rotate(q.numpy()), q_hf.numpy(), atol=2e-6)
    # the position vectors are R_i applied to the unit vector (1, 0) of every plane
    unit = torch.tensor([1.0] * (h // 2) + [0.0] * (h // 2), dtype=torch.float64).expand(1, 1, n, h)
    p_hf, _ = apply_rotary_pos_emb(unit, unit, cos.double(), sin.double())
    np.testing.assert_allclose(e.vectors, p_hf[0, 0].numpy(), atol=2e-6)
    # rotations preserve norms and act on positions only through i - j
    np.testing.assert_allclose(np.linalg.norm(e.vectors, axis=1), np.sqrt(h / 2))
    inter = enc.rope(n, head_dim=h, layout="interleaved")
    np.testing.assert_allclose(inter.vectors[:, 0::2], e.vectors[:, : h // 2])
    x = np.random.default_rng(1).standard_normal((n, h))
    np.testing.assert_allclose(np.linalg.norm(inter.rotate(x), axis=1), np.linalg.norm(x, axis=1))


def test_rope_geometry_equals_sinusoidal_for_same_width_and_base():
    r = enc.rope(40, head_dim=128)
    s = enc.sinusoidal(40, d=128)
    np.testing.assert_allclose(r.distances, s.distances, atol=1e-10)
    unit = enc.rope(40, head_dim=128, normalize="vector")
    np.testing.assert_allclose(np.linalg.norm(unit.vectors, axis=1), 1.0)
    np.testing.assert_allclose(unit.distances * 8.0, s.distances, atol=1e-10)
    lin = enc.rope(40, head_dim=128, scaling="linear", factor=2.0)
    # linear scaling = position interpolation: position 2i of the scaled = position i of the plain
    np.testing.assert_allclose(lin.vectors[::2], enc.rope(20, head_dim=128).vectors, atol=1e-12)


def test_rope_errors():
    for bad in (
        dict(head_dim=7),
        dict(head_dim=0),
        dict(base=1.0),
        dict(base=-1),
        dict(scaling="longrope"),
        dict(scaling="linear", factor=0),
        dict(scaling="yarn", factor=2.0),
        dict(normalize="l1"),
    ):
        with pytest.raises(PosgeomError):
            enc.rope(8, **bad)
    with pytest.raises(PosgeomError):
        enc.rope(0)


_HEAD = 32
_TYPE_CASES = {
    "default": {},
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 2.0},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 16.0},
    "longrope": {
        "short_factor": list(np.linspace(1.0, 2.0, _HEAD // 2)),
        "long_factor": list(np.linspace(1.0, 8.0, _HEAD // 2)),
        "original_max_position_embeddings": 16,
        "factor": 4.0,
    },
    "llama3": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 32,
    },
    "proportional": {"partial_rotary_factor": 0.5, "factor": 2.0},
}


def test_every_transformers_rope_type_has_a_posgeom_function():
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} <= set(enc.ROPE_TYPES)
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} <= set(_TYPE_CASES)


@pytest.mark.parametrize("rope_type", sorted(set(ROPE_INIT_FUNCTIONS) | {"default"}))
@pytest.mark.parametrize("seq_len", [None, 8, 100])
def test_rope_type_matches_transformers(rope_type, seq_len):
    params = {"rope_type": rope_type, "rope_theta": 10000.0, **_TYPE_CASES[rope_type]}
    cfg = _config(dict(params), max_pos=64, head_dim=_HEAD)
    if rope_type == "default":
        hf, hf_att = _inv(cfg, "default")
    else:
        hf, hf_att = _inv(cfg, rope_type, seq_len=seq_len)
    ours, att = enc.rope_frequencies(
        rope_type, _HEAD, 10000.0, cfg.rope_parameters, seq_len=seq_len, context=64
    )
    np.testing.assert_allclose(ours, hf, rtol=1e-6, atol=1e-12)
    assert att == pytest.approx(hf_att, rel=1e-6)


@pytest.mark.parametrize(
    ("rope_type", "params", "message"),
    [
        ("linear", {}, "numeric factor"),
        ("dynamic", {"factor": -1.0}, "factor > 0"),
        ("yarn", {"factor": 2.0}, "original_max_position_embeddings"),
        ("longrope", {"short_factor": [1.0], "long_factor": [1.0]}, "original_max"),
        (
            "longrope",
            {"short_factor": [1.0], "long_factor": [1.0], "original_max_position_embeddings": 8},
            "expected 16",
        ),
        ("llama3", {"factor": 8.0}, "low_freq_factor"),
        (
            "llama3",
            {
                "factor": 8.0,
                "low_freq_factor": 4.0,
                "high_freq_factor": 1.0,
                "original_max_position_embeddings": 8,
            },
            "low_freq_factor < high_freq_factor",
        ),
        ("bogus", {}, "unknown RoPE scaling"),
    ],
)
def test_rope_type_validators(rope_type, params, message):
    with pytest.raises(PosgeomError, match=message):
        enc.rope_frequencies(rope_type, _HEAD, 10000.0, params)


def test_ntk_means_static_ntk_in_encodings_and_nn():
    """Regression: "ntk" was dynamic NTK in encodings and static NTK in nn (up to 75% apart at
    factor 4). Both are now static NTK-aware scaling base' = base f^(h/(h-2)); "dynamic" is
    transformers' dynamic NTK."""
    from posgeom.nn import RotaryEmbedding

    h, f = 16, 4.0
    expected = (10000.0 * f ** (h / (h - 2))) ** -(np.arange(0, h, 2) / h)
    theta, _ = enc.rope_inverse_frequencies(h, scaling="ntk", factor=f)
    np.testing.assert_allclose(theta, expected, rtol=1e-12)
    module = RotaryEmbedding(h, scaling={"type": "ntk", "factor": f})
    np.testing.assert_allclose(module.inv_freq.double().numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(enc.rope(40, head_dim=h, scaling="ntk", factor=f).inv_freq, expected)
