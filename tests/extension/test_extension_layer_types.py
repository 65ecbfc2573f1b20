"""``extend --measure`` on a model with one rotary set-up per layer type (Gemma 3): a strategy
replaces the global (full-attention) set-up only; the sliding-window layers keep their own."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from posgeom.encodings import family  # noqa: E402
from posgeom.extension.markdown import measure_lines  # noqa: E402
from posgeom.extension.model import model_from_config  # noqa: E402
from posgeom.extension.runners import apply_strategy, runner_for  # noqa: E402
from studies import support  # noqa: E402

torch.set_num_threads(1)


def _gemma3():
    config = transformers.AutoConfig.for_model("gemma3_text")
    support._shrink(config)
    config.layer_types = ["sliding_attention", "full_attention"]
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def _buffers(model):
    rotary = model.model.rotary_emb
    return {
        t: getattr(rotary, f"{t}_inv_freq").detach().double().clone()
        for t in ("full_attention", "sliding_attention")
    }


def test_a_strategy_scales_the_full_attention_layers_only():
    model = _gemma3()
    own = {t: dict(p) for t, p in model.config.rope_parameters.items()}
    before = _buffers(model)
    ext = model_from_config(model.config, model=model, name="gemma3")
    assert ext.summary()["layer_type"] == "full_attention" and ext.summary()["layers"] == [1]
    strategies = family("rope").extension.strategies(ext.params, 16, 64)
    linear = next(s for s in strategies if s.kind == "linear")
    assert linear.rope_parameters["factor"] == 4.0
    undo = apply_strategy(model, linear, 16, 64)
    params = model.config.rope_parameters
    assert params["sliding_attention"] == own["sliding_attention"]  # kept, not overwritten
    assert params["full_attention"] == dict(linear.rope_parameters)
    after = _buffers(model)
    # position interpolation divides every frequency by the factor (transformers' module rebuilt)
    torch.testing.assert_close(after["full_attention"], before["full_attention"] / 4.0)
    assert torch.equal(after["sliding_attention"], before["sliding_attention"])
    undo()
    assert model.config.rope_parameters == own
    restored = _buffers(model)
    assert all(torch.equal(restored[t], before[t]) for t in before)


def test_the_measurement_says_which_layers_were_scaled():
    model = _gemma3()
    scaled = runner_for(model).scaled()
    assert scaled == {"layer_types": ["full_attention"], "layers": [1]}
    lines = measure_lines({"scaled": scaled, "strategies": []})
    assert lines[0].startswith("Strategies replace the rotary set-up of layer types full_attention")


def test_one_set_up_for_every_layer_is_replaced_whole():
    from posgeom.encodings._extension import Strategy
    from posgeom.encodings.rope_layer_types import strategy_rope_parameters

    new = {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}
    strategy = Strategy("linear", "rope", "linear", new)
    assert strategy_rope_parameters({"rope_type": "default", "rope_theta": 1e4}, strategy) == new
    local_only = {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
    assert strategy_rope_parameters(local_only, strategy) == {"sliding_attention": new}
