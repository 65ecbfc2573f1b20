"""studies.extension.outcomes: every predictor against every outcome, on hand-made records."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

outcomes = pytest.importorskip("studies.extension.outcomes")


def test_cell_is_the_mean_spearman_and_the_worst_place_of_the_pick():
    rng = np.random.default_rng(0)
    pred = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}
    w1 = {"a": -1.0, "b": -2.0, "c": -3.0, "d": -4.0}  # same order: rho 1, pick a is 1st
    w2 = {"a": -3.0, "b": -1.0, "c": -2.0, "d": -4.0}  # pick a is 3rd
    c = outcomes.cell([(pred, w1), (pred, w2)], rng)
    rho2 = stats.spearmanr([3, 2, 1, 0], [-3, -1, -2, -4]).statistic
    assert c["spearman"] == pytest.approx((1.0 + rho2) / 2)
    assert c["pick_place"] == 3
    assert c["ci95"][0] <= c["spearman"] <= c["ci95"][1]


def test_a_tie_in_the_predictor_counts_its_worse_strategy():
    pred = {"a": 1.0, "b": 1.0, "c": 0.0}
    out = {"a": -1.0, "b": -3.0, "c": -2.0}
    assert outcomes.cell([(pred, out)], np.random.default_rng(0))["pick_place"] == 3


def _loss(strategy, losses):
    return {
        "kind": "loss",
        "strategy": strategy,
        "text": "t",
        "window": 0,
        "loss_past_8k": float(np.mean(losses)),
        "loss_first_2k": 1.0,
        "losses_past_8k": list(losses),
    }


def test_key_tokens_and_passkeys_by_hand(tmp_path):
    # 12 tokens; the short context loses 3 nats on tokens 0-10 and 0.6 on token 11
    short = [4.0] * 11 + [1.6]
    rows = [
        _loss("none", [1.0] * 12),
        _loss("yarn", [1.0] * 12),
        _loss("linear", [3.0] * 12),
        {"kind": "short", "strategy": "none", "text": "t", "window": 0, "losses_past_8k": short},
        {"kind": "passkey", "strategy": "none", "passkey_logprob": -4.0, "passkey_retrieved": 0.0},
        {"kind": "passkey", "strategy": "yarn", "passkey_logprob": -0.1, "passkey_retrieved": 1.0},
        {
            "kind": "passkey",
            "strategy": "yarn",
            "window": 1,
            "passkey_logprob": -0.2,
            "passkey_retrieved": 0.0,
        },
    ]
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res, defined = outcomes.outcome_windows(tmp_path)
    # median long loss 1.0: LSD 3 on tokens 0-10 (key at 2 nats), 0.6 on token 11 (key at 0.5)
    assert defined["key_tokens"]["key-token loss (LongPPL)"]["t#0"] == [11, 12]
    assert defined["key_tokens"]["key-token loss (LSD > 0.5)"]["t#0"] == [12, 12]
    assert res["key-token loss (LongPPL)"]["t#0"] == {"none": -1.0, "yarn": -1.0, "linear": -3.0}
    assert res["passkey log-prob"] == {
        "passkey#0": {"none": -4.0, "yarn": -0.1},
        "passkey#1": {"yarn": -0.2},
    }
    assert res["passkey retrieved"] == {"all prompts": {"yarn": 0.5}}
    assert defined["passkey_prompts"] == 2
