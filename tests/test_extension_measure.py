"""--measure: losses of a tiny random Llama against a direct transformers forward; resuming."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.extension import enumerate_strategies, parse_family_spec
from posgeom.extension.measure import measure_strategies

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

L0, L = 32, 64


def _config(params=None, max_positions=L0):
    return transformers.LlamaConfig(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=max_positions,
        rope_parameters=dict(params or {"rope_type": "default", "rope_theta": 10000.0}),
    )


def _model():
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(_config()).eval()


def _strategies():
    family = parse_family_spec(f"rope:theta=10000,head_dim=16,max_position_embeddings={L0}")
    by_name = {s.name: s for s in enumerate_strategies(family, L0, L)}
    return [by_name["none"], by_name["linear x2"], by_name["yarn x2 b32/1"], by_name["dynamic x2"]]


def _windows():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 40, L) for _ in range(2)]


def _direct(model, strategy, window):
    """The loss of a model built by transformers from the strategy's config.json keys."""
    changes = strategy.config_changes(L0, L)
    fresh = transformers.LlamaForCausalLM(
        _config(strategy.rope_parameters, changes["max_position_embeddings"])
    ).eval()
    fresh.load_state_dict(model.state_dict())
    x = torch.as_tensor(window)[None]
    with torch.no_grad():
        logits = fresh(x).logits[0, :-1].double()
    loss = torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="none").numpy()
    return loss[: L0 - 1].mean(), loss[L0 - 1 :].mean()


@pytest.mark.filterwarnings("ignore")
def test_measured_losses_match_a_direct_forward(tmp_path):
    model, windows = _model(), _windows()
    strategies = _strategies()
    out = measure_strategies(model, strategies, windows, trained_length=L0, cache_dir=tmp_path)
    assert out["windows"] == 2 and out["window_length"] == L
    for s, row in zip(strategies, out["strategies"], strict=True):
        direct = [_direct(model, s, w) for w in windows]
        assert row["within_loss"] == pytest.approx(np.mean([d[0] for d in direct]), rel=1e-5)
        assert row["beyond_loss"] == pytest.approx(np.mean([d[1] for d in direct]), rel=1e-5)
        assert row["tokens_beyond"] == 2 * (L - L0)
    # the model gets its own rope parameters back
    assert model.config.rope_parameters["rope_type"] == "default"
    assert model.config.max_position_embeddings == L0


@pytest.mark.filterwarnings("ignore")
def test_an_interrupted_measure_resumes_without_redoing_finished_windows(tmp_path):
    model, windows, strategies = _model(), _windows(), _strategies()
    seen: list[str] = []

    def stop_after_three(line: str) -> None:
        seen.append(line)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        measure_strategies(
            model, strategies, windows, trained_length=L0, cache_dir=tmp_path,
            progress=stop_after_three,
        )  # fmt: skip
    assert seen[-1].startswith("measure: 3/8")
    assert model.config.rope_parameters["rope_type"] == "default"  # restored on the interrupt
    calls = []
    hook = model.get_decoder().register_forward_hook(lambda *a: calls.append(1))
    resumed = measure_strategies(model, strategies, windows, trained_length=L0, cache_dir=tmp_path)
    hook.remove()
    assert len(calls) == 8 - 3
    fresh = measure_strategies(
        _model(), strategies, windows, trained_length=L0, cache_dir=tmp_path / "new"
    )
    assert resumed["strategies"] == fresh["strategies"]
