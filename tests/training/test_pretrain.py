"""The pretraining grid (posgeom experiment pretrain): a two-step grid of every arm, its resume,
and its pieces checked against hand computations."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from scipy.spatial.distance import pdist, squareform  # noqa: E402

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.cli.main import main  # noqa: E402
from posgeom.training.corpora import SPLITS, load_corpus, window_starts  # noqa: E402
from posgeom.training.lm import ARMS, DEFAULT_ARMS, EXTENDABLE, build_lm  # noqa: E402
from posgeom.training.pretrain import CorpusSpec, pretrain_grid  # noqa: E402
from posgeom.training.pretrain_scores import geometry_row  # noqa: E402

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SMALL = {"context": 8, "d_model": 16, "n_heads": 2, "n_layers": 1, "batch": 4, "steps": 2}
SMALL |= {"eval_windows": 8, "log_every": 1}


def _code_files() -> tuple[str, ...]:
    """Six real, small standard-library modules."""
    names = ("this.py", "keyword.py", "colorsys.py", "bisect.py", "stat.py", "fnmatch.py")
    return tuple(str(STDLIB / n) for n in names)


def _doc(tmp_path: Path, name: str, lines: list[str]) -> str:
    p = tmp_path / name
    p.write_text("".join(line + "\n" for line in lines))
    return str(p)


def test_split_is_by_document_and_windows_start_at_lines(tmp_path):
    files = [_doc(tmp_path, f"f{i}.txt", [f"line {i} a", "", f"line {i} bb"]) for i in range(10)]
    sp = load_corpus(files, seed=3)
    names = [set(sp.names[s]) for s in SPLITS]
    assert sum(len(n) for n in names) == 10 and not (names[0] & names[1] | names[0] & names[2])
    assert len(names[1]) == 1 and len(names[2]) == 1
    # a document is "line i a\n\nline i bb\n" + separator: windows of 8 bytes start at lines
    data = sp.data["test"].tobytes()
    assert data == Path(files[int(sp.names["test"][0][1])]).read_bytes() + b"\n"
    assert window_starts(sp, "test", 8).tolist() == [0, 10]  # the empty line starts none
    # a window ends inside its document: "line i bb\n" holds 10 bytes, the document 20
    assert window_starts(sp, "test", 10).tolist() == [0, 10]
    assert window_starts(sp, "test", 11).tolist() == [0]
    with pytest.raises(PosgeomError, match="documents"):
        load_corpus(files[:2])


def test_blocks_cut_at_line_ends(tmp_path):
    lines = [f"row {i:03d}" for i in range(100)]
    sp = load_corpus([_doc(tmp_path, "one.txt", lines)], block_bytes=80)
    docs = sorted(d for s in SPLITS for d in sp.names[s])
    # 8 bytes a line: each block ends at the first line end past 80 bytes (11 lines, 88 bytes)
    assert docs == sorted(f"one.txt@{88 * k}" for k in range(10))
    sizes = {s: sp.data[s].size - len(sp.names[s]) for s in SPLITS}  # less the separators
    assert sorted(sizes.values()) == sorted(
        sum(8 if d == "one.txt@792" else 88 for d in sp.names[s]) for s in SPLITS
    )


def test_causal_mask_and_masked_model_see_the_right_tokens():
    x = torch.randint(0, 256, (2, 8))
    y = x.clone()
    y[:, 5] = (y[:, 5] + 1) % 256
    for arm in ("learned", "rope", "alibi", "t5", "nope"):
        causal = build_lm(arm, n=8, d=16, n_heads=2, n_layers=2, causal=True, seed=0)
        a, b = causal(x), causal(y)
        assert torch.equal(a[:, :5], b[:, :5]), arm  # no position sees a later byte
        assert not torch.allclose(a[:, 5:], b[:, 5:])
        masked = build_lm(arm, n=8, d=16, n_heads=2, n_layers=2, causal=False, seed=0)
        assert not torch.allclose(masked(x)[:, :5], masked(y)[:, :5])


def test_arms_share_everything_but_the_position_module():
    a = build_lm("learned", n=8, d=16, n_heads=2, n_layers=1, causal=True, seed=4)
    b = build_lm("nope", n=8, d=16, n_heads=2, n_layers=1, causal=True, seed=4)
    sa = {k: v for k, v in a.state_dict().items() if not k.startswith("position")}
    assert sa.keys() == b.state_dict().keys()
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in sa.items())
    long = torch.randint(0, 256, (1, 32))
    for arm in EXTENDABLE:  # run at 4x the trained length
        m = build_lm(arm, n=8, d=16, n_heads=2, n_layers=1, causal=True, seed=0)
        assert m(long).shape == (1, 32, 256)


def test_per_position_stress_by_hand():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(7, 3))
    target = squareform(pdist(rng.normal(size=(7, 2))))
    row = geometry_row(pts, target)
    delta = squareform(pdist(pts))
    iu = np.triu_indices(7, 1)
    alpha = (delta[iu] @ target[iu]) / (delta[iu] @ delta[iu])
    by_hand = ((alpha * delta - target) ** 2).sum(1) / (target**2).sum(1)
    np.testing.assert_allclose(row["per_position"], by_hand, rtol=1e-12)
    assert row["scale_optimal"] == pytest.approx(
        ((alpha * delta[iu] - target[iu]) ** 2).sum() / (target[iu] ** 2).sum(), rel=1e-12
    )
    assert row["paper"] == pytest.approx(
        ((delta[iu] - target[iu]) ** 2).sum() / (target[iu] ** 2).sum()
    )


def test_two_step_grid_of_every_arm_resumes_without_recomputing(tmp_path):
    out = tmp_path / "grid"
    corpus = [CorpusSpec("code", _code_files())]
    recs = pretrain_grid(out, corpus, seeds=[0], arms=tuple(ARMS), overrides=SMALL)
    assert len(recs) == 2 * len(ARMS) == 2 * (len(DEFAULT_ARMS) + 1)
    assert {(r["arm"], r["objective"]) for r in recs} == {
        (a, o) for a in ARMS for o in ("causal", "masked")
    }
    for r in recs:
        assert np.isfinite(r["validation_loss"]) and np.isfinite(r["test_loss"])
        assert len(r["per_position_loss"]) == 8 and len(r["train_curve"]) == 2
        assert ("loss_4x" in r) == (r["arm"] in EXTENDABLE)
        for est in ("recommended", "plugin"):
            assert {"paper", "scale_optimal", "violation_rate", "per_position_max"} <= set(
                r["before"][est]
            )
    by = {(r["arm"], r["objective"]): r for r in recs}
    # the MDS table fits its own corpus geometry; NoPE has stress 1 by definition
    assert by["mds", "causal"]["before"]["recommended"]["scale_optimal"] < 1e-9
    assert by["nope", "causal"]["before"]["recommended"]["scale_optimal"] == pytest.approx(1)
    # the rescaled MDS table: the same shape (scale-optimal stress 0), another scale (paper)
    scaled = by["mds_scaled", "causal"]["before"]["recommended"]
    assert scaled["scale_optimal"] < 1e-9 and scaled["paper"] > 100
    # a fixed table is not trained, a trained one moves
    for arm, moves in (("mds", False), ("learned_mds_init", True)):
        after = by[arm, "causal"]["after"]["recommended"]["paper"]
        assert (after > 1e-12) == moves, arm
    lines = (out / "records.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == recs
    stamp = (out / "runs/code-causal-nope-s0/record.json").stat().st_mtime_ns
    with pytest.raises(PosgeomError, match="--resume"):
        pretrain_grid(out, corpus, seeds=[0], arms=tuple(ARMS), overrides=SMALL)
    with pytest.raises(PosgeomError, match="other options"):
        pretrain_grid(out, corpus, seeds=[0], overrides=SMALL, resume=True)
    again = pretrain_grid(out, corpus, seeds=[0], arms=tuple(ARMS), overrides=SMALL, resume=True)
    assert again == recs
    assert (out / "runs/code-causal-nope-s0/record.json").stat().st_mtime_ns == stamp


def test_cli_refuses_bad_corpus_options(tmp_path, capsys):
    out = str(tmp_path / "g")
    assert main(["experiment", "pretrain", "-o", out]) == 2
    assert "--corpus" in capsys.readouterr().err
    assert main(["experiment", "pretrain", "-o", out, "--corpus", f"x={tmp_path}/none"]) == 2
    assert "neither a file nor a folder" in capsys.readouterr().err
    assert main(["experiment", "pretrain", "-o", out, "--corpus", "x", "--arms", "nope"]) == 2
    assert not Path(out).exists()
