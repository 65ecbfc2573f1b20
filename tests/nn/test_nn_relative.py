"""The T5 relative-position bias module against transformers' T5Attention.compute_bias."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.encodings import t5, t5_relative_position_bucket  # noqa: E402
from posgeom.nn import T5RelativeBias, TinyEncoder  # noqa: E402


@pytest.mark.parametrize("is_decoder", [False, True])
def test_bias_matches_t5_attention(is_decoder):
    from transformers.models.t5.modeling_t5 import T5Attention

    config = transformers.T5Config(d_model=16, d_kv=4, num_heads=4, is_decoder=is_decoder)
    torch.manual_seed(0)
    attn = T5Attention(config, has_relative_attention_bias=True).eval()
    ours = T5RelativeBias(4, bidirectional=not is_decoder)
    with torch.no_grad():
        ours.bias.weight.copy_(attn.relative_attention_bias.weight)
    n = 150  # beyond max_distance: the logarithmic and the capped buckets
    expected = attn.compute_bias(n, n)[0]  # (H, n, n)
    torch.testing.assert_close(ours(n), expected, rtol=0, atol=0)
    # the module's buckets are the numpy formula (the only implementation)
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]
    np.testing.assert_array_equal(
        ours.buckets(torch.arange(n)).numpy(),
        t5_relative_position_bucket(rel, bidirectional=not is_decoder),
    )


def test_geometry_of_the_module_is_the_t5_bias_geometry():
    from posgeom.encodings import family
    from posgeom.encodings._registry import TorchSpec

    spec = TorchSpec(n=20, d=16, n_heads=4, seed=1)
    module = family("t5").torch_module(spec)
    geometry = family("t5").module_geometry(module, spec)
    values = module(20).detach().double().numpy()  # bias a query at i gives key j, per head
    diff = np.abs(values - np.einsum("hii->hi", values)[:, :, None]).mean(0)
    np.testing.assert_allclose(geometry.distances, 0.5 * (diff + diff.T), atol=1e-12)
    np.testing.assert_allclose(
        geometry.distances, t5(20, bias=module.bias.weight).distances, atol=0
    )


def test_tiny_encoder_takes_the_bias_and_checks_heads():
    enc = TinyEncoder(30, 16, 4, 1, 12, "t5")
    assert isinstance(enc.position, T5RelativeBias)
    assert enc(torch.randint(0, 30, (2, 12))).shape == (2, 2)
    with pytest.raises(PosgeomError, match="n_heads=4"):
        TinyEncoder(30, 16, 4, 1, 12, T5RelativeBias(2))
