"""--measure: losses of a tiny random Llama against a direct transformers forward; resuming."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.models import tiny_llama_config
from posgeom.extension import enumerate_strategies, parse_family_spec
from posgeom.extension.measure import measure_strategies

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

L0, L = 32, 64


def _config(params=None, max_positions=L0):
    return tiny_llama_config(max_positions, params, num_hidden_layers=2)


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
        if len(seen) == 4:  # the cost, then three computed items
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        measure_strategies(
            model,
            strategies,
            windows,
            trained_length=L0,
            cache_dir=tmp_path,
            progress=stop_after_three,
        )
    assert seen[0].startswith("measure: 10 forwards of up to")  # the cost, before any item
    assert seen[-1].startswith("measure: 3/10")  # 4 strategies x 2 windows + 2 short references
    assert "elapsed" in seen[-1] and "ETA" in seen[-1]
    assert model.config.rope_parameters["rope_type"] == "default"  # restored on the interrupt
    calls = []
    hook = model.get_decoder().register_forward_hook(lambda *a: calls.append(1))
    resumed = measure_strategies(model, strategies, windows, trained_length=L0, cache_dir=tmp_path)
    hook.remove()
    # the 5 unfinished windows, then the short-context references: blocks of L0/4 past L0
    assert len(calls) == 8 - 3 + 2 * ((L - L0) // (L0 // 4))
    fresh = measure_strategies(
        _model(), strategies, windows, trained_length=L0, cache_dir=tmp_path / "new"
    )
    assert resumed["strategies"] == fresh["strategies"]


def _token_losses_direct(model, ids):
    x = torch.as_tensor(np.asarray(ids))[None]
    with torch.no_grad():
        logits = model(x).logits[0, :-1].double()
    return torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="none").numpy()


def test_key_tokens_as_longppl_defines_them_by_hand():
    from posgeom.extension.outcomes import key_token_loss, key_token_mask

    long = np.array([0.5, 1.0, 1.9, 2.5, 0.1, 3.0])
    short = np.array([3.0, 2.9, 4.5, 6.0, 2.0, 0.0])
    # short - long > 2 and long < 2: tokens 0 (2.5), 2 (2.6); not 1 (1.9), 3 (long 2.5), 4 (1.9)
    mask = key_token_mask(long, short)
    assert mask.tolist() == [True, False, True, False, False, False]
    assert key_token_loss(np.arange(6.0), mask) == pytest.approx((0 + 2) / 2)
    assert np.isnan(key_token_loss(long, np.zeros(6, bool)))
    # with three strategies the long-context loss is their per-token median (here ``long``)
    from posgeom.extension.outcomes import consensus_key_mask

    views = [long - 1.0, long, long + 5.0]  # a strategy far better and one far worse
    assert consensus_key_mask(views, short).tolist() == mask.tolist()


@pytest.mark.filterwarnings("ignore")
def test_short_context_losses_and_passkey_against_direct_forwards():
    from posgeom.extension.outcomes import passkey_ids, passkey_outcome, short_context_losses

    model, ids = _model(), _windows()[0]
    got = short_context_losses(model, ids, L0, 8, block=16)  # blocks [32, 48), [48, 64)
    for p in (L0, L0 + 5, 48, L - 1):  # token p predicted from ids[s - 8 : p], s its block start
        s = L0 if p < 48 else 48
        assert got[p - L0] == pytest.approx(_token_losses_direct(model, ids[s - 8 : p + 1])[-1])
    words = {
        w: i
        for i, w in enumerate(
            "the pass key is . remember it what ? 0 1 2 3 4 5 6 7 8 9 "
            "grass green sky blue sun yellow here we go there and "
            "back again important info".split()
        )
    }

    def encode(text):
        out = []
        for w in text.replace(".", " . ").replace("?", " ? ").lower().split():
            out += [words[c] for c in w] if w.isdigit() else [words.get(w, 39)]
        return out

    prompt, answer = passkey_ids(encode, 90, depth=0.2, seed=3)
    assert prompt.size == 90 and answer.tolist() == list(range(85, 90))
    key = "".join(str(int(t) - words["0"]) for t in prompt[answer])
    needle = encode(f" The pass key is {key}.")  # stated in the prompt, before the question
    body = prompt[:85].tolist()
    assert any(body[i : i + len(needle)] == needle for i in range(len(body)))
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.as_tensor(prompt)[None]).logits[0].double(), -1)
    direct = logp[answer - 1, torch.as_tensor(prompt[answer])].numpy()
    out = passkey_outcome(model, prompt, answer)
    assert out["passkey_logprob"] == pytest.approx(direct.mean())
    hit = bool((logp[answer - 1].argmax(-1).numpy() == prompt[answer]).all())
    assert out["passkey_retrieved"] == float(hit)


def test_a_strategy_its_family_cannot_apply_is_refused_not_measured_as_none(tmp_path):
    """Issue 25: a strategy of a family that cannot apply it to the model (an ALiBi slope change,
    a learned table's clamp on a transformers model) was scored, then measured as the model's
    own; now it is one line before any forward, and nothing is stored."""
    from posgeom._errors import PosgeomError
    from posgeom.extension import Strategy
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig

    alibi = CausalDecoder(DecoderConfig(position="alibi", trained_length=L0), seed=0).eval()
    cases = [
        (_model(), Strategy("halved", "alibi", "halve-slopes"), "transformers"),
        (_model(), Strategy("clamp", "learned", "clamp"), "transformers"),
        (alibi, Strategy("halved", "alibi", "halve-slopes"), "decoder"),
    ]
    for i, (model, strategy, target) in enumerate(cases):
        cache = tmp_path / f"cache{i}"
        message = f"of family {strategy.family} cannot be measured on a {target} model"
        with pytest.raises(PosgeomError, match=message):
            measure_strategies(model, [strategy], _windows(), trained_length=L0, cache_dir=cache)
        assert not [p for p in cache.glob("*.json") if p.name != "posgeom-manifest.json"]
    none = Strategy("none", "alibi", "none")  # what the family can run: the model as it is
    got = measure_strategies(alibi, [none], _windows(), trained_length=L0, cache_dir=tmp_path / "n")
    assert got["strategies"][0]["name"] == "none" and got["strategies"][0]["windows"] == 2
