"""The pretraining study's statistics against scipy, on records with a known answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from studies.pretrain import analysis as an


def _record(arm: str, seed: int, stress: float, loss: float) -> dict:
    row = {"paper": stress, "scale_optimal": stress, "per_position_max": stress}
    row["violation_rate"] = stress
    return {
        "arm": arm,
        "corpus": "code",
        "objective": "causal",
        "seed": seed,
        "validation_loss": loss,
        "test_loss": loss + 0.01,
        "before": {"recommended": row, "plugin": row, "lag": row},
        "after": {"recommended": row},
    }


def _records(slope: float, noise: float, seeds: int = 3) -> list[dict]:
    rng = np.random.default_rng(1)
    arms = [f"a{i}" for i in range(6)]
    return [
        _record(a, s, 0.1 * i, 2.0 + slope * 0.1 * i + noise * rng.normal())
        for i, a in enumerate(arms)
        for s in range(seeds)
    ]


def test_a_monotone_loss_is_ranked_and_matches_scipy():
    (cell,) = an.analyse(_records(slope=1.0, noise=1e-4), n_boot=200).values()
    c = cell["correlations"][an.HEADLINE]
    assert c["rho"] == pytest.approx(1.0) and c["ci_low"] == pytest.approx(1.0)
    arms = cell["arms"]
    x = [an.means(arms, ("before", "recommended", "scale_optimal"))[a] for a in arms]
    y = [an.means(arms, "validation_loss")[a] for a in arms]
    assert c["rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert cell["first_choice"]["by_stress"] == ["a0"]
    assert cell["first_choice"]["ranks_by_loss"] == {"a0": 1}


def test_pure_noise_is_not_ranked():
    (cell,) = an.analyse(_records(slope=0.0, noise=0.05, seeds=5), n_boot=200).values()
    c = cell["correlations"][an.HEADLINE]
    assert c["ci_low"] < 0 < c["ci_high"]


def test_paired_difference_matches_scipy_ttest_rel():
    recs = [_record("learned", s, 0.5, 2.0 + 0.01 * s) for s in range(4)]
    recs += [_record("learned_mds_init", s, 0.0, 2.0 + 0.013 * s + 0.002 * s**2) for s in range(4)]
    arms = an.cells(recs)["code", "causal"]
    d = an.paired_difference(arms, "learned_mds_init", "learned")
    a = [r["validation_loss"] for r in arms["learned_mds_init"]]
    b = [r["validation_loss"] for r in arms["learned"]]
    ci = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (d["t_low"], d["t_high"]) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert d["mean"] == pytest.approx(np.mean(np.subtract(a, b)))


def test_an_arm_missing_a_seed_is_compared_on_the_common_seeds():
    recs = [r for r in _records(1.0, 1e-3) if not (r["arm"] == "a5" and r["seed"] == 2)]
    (cell,) = an.analyse(recs, n_boot=50).values()
    assert cell["seeds"] == [0, 1] and all(len(v) == 2 for v in cell["arms"].values())


def test_the_control_stays_out_of_the_correlations():
    recs = _records(1.0, 1e-3)
    ctl = [_record("mds_scaled", s, 5.0, 1.0 + 0.001 * s) for s in range(3)]
    recs += [_record(a, s, 0.0, 2.5 + 0.001 * s) for a in ("mds", "sinusoidal") for s in range(3)]
    (cell,) = an.analyse(recs + ctl, n_boot=50).values()
    assert "mds_scaled" not in cell["arms"]
    assert cell["control"]["rank"] == 1 and cell["control"]["n_arms"] == 9
    d = cell["control"]["vs"]["mds"]
    assert d["mean"] == pytest.approx(-1.5) and cell["control"]["vs"]["nope"] is None
