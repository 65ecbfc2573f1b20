"""Issue 36, items 4, 9 and 10: one writer per work folder for its whole run; ``report`` leaves a
user's manifest and a job folder alone; no folder where it should not be.

- item 4: two ``posgeom train`` runs into one ``-o run`` both exited 0 (the lock was held only
  around each write); now the second is refused with one line, exit 2, and the lock goes with
  the first process (its end, a crash, ``SIGKILL`` or Ctrl-C);
- item 9: ``report`` rewrote any JSON with a ``files`` key named ``posgeom-manifest.json`` in the
  page's folder, and listed a page written inside a count job's folder as a job file;
- item 10: a failed ``train`` left an empty run folder; ``count -o job/out.npz --job-dir job``
  broke the job's resume; ``extend --measure`` with its cache a symlink to a user's folder deleted
  that folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fault_helpers import SRC, cli, one_line, spawn

from posgeom._errors import PosgeomError
from posgeom.io._results import RESULTS_MANIFEST
from posgeom.io.workfolders import WorkFolder

ORDER = ["--task", "order", "--max-len", 8, "--order-samples", 64, "--eval-limit", 32]
ORDER += ["--d-model", 16, "--encoding", "learned"]
QUICK = ["--steps-per-epoch", 2, "--epochs", 1]

HOLDER = """
import sys, time
from posgeom.io.workfolders import WorkFolder
folder = WorkFolder.open(sys.argv[1], kind=sys.argv[2])
print("held", flush=True)
time.sleep(120)
"""


def _holder(folder: Path, kind: str) -> subprocess.Popen:
    """Another process that opened ``folder`` as a work folder of ``kind`` and keeps it."""
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), kind],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def _free(folder: Path) -> bool:
    """Whether another process can take ``folder``'s whole-run lock now (it is free)."""
    probe = "import sys; from pathlib import Path; from posgeom.io._locks import hold; "
    probe += "sys.exit(0 if hold(Path(sys.argv[1])) else 3)"
    env = {**os.environ, "PYTHONPATH": SRC}
    code = subprocess.run([sys.executable, "-c", probe, str(folder)], env=env).returncode
    assert code in (0, 3)
    return code == 0


# ----------------------------------------------------------------------------- item 4
@pytest.mark.parametrize("kind", ["train-run", "experiment", "posgeom-count-job"])
def test_item04_a_second_writer_is_refused(tmp_path, kind):
    folder = tmp_path / "work"
    proc = _holder(folder, kind)
    try:
        with pytest.raises(PosgeomError, match="another posgeom process is writing"):
            WorkFolder.open(folder, kind=kind)
        with pytest.raises(PosgeomError, match="another posgeom process is writing"):
            WorkFolder.open(folder, kind=kind, restart=True)  # nothing of the first's cleared
        assert not _free(folder)
    finally:
        proc.kill()
        proc.wait()
    assert _free(folder)  # SIGKILL: the kernel dropped the lock, nothing stale to clear
    with WorkFolder.open(folder, kind=kind, restart=True) as again:
        assert not _free(folder) and again.listed_files() == []
    assert _free(folder)


def test_item04_cli_count_and_experiment_refuse_a_folder_in_use(small_corpus, tmp_path, capsys):
    job = tmp_path / "job"
    proc = _holder(job, "posgeom-count-job")
    try:
        argv = ["count", small_corpus, "-n", 6, "--job-dir", job, "--shard-lines", 100]
        code, err = cli(capsys, *argv, "-o", tmp_path / "c.npz")
        assert code == 2 and "another posgeom process is writing" in one_line(err)
        assert not (tmp_path / "c.npz").exists()
    finally:
        proc.kill()
        proc.wait()
    code, _ = cli(
        capsys, "count", small_corpus, "-n", 6, "--job-dir", job, "-o", tmp_path / "c.npz"
    )
    assert code == 0


@pytest.mark.e2e
def test_item04_two_train_processes_into_one_run_folder(tmp_path):
    """Two real ``posgeom train`` processes: the second is refused while the first trains, and
    the lock is free after the first's Ctrl-C (and after its SIGKILL)."""
    run = tmp_path / "run"
    for stop in (signal.SIGINT, signal.SIGKILL):
        long = ["--steps-per-epoch", 50, "--epochs", 5000, "--overwrite"]  # killed long before
        started = time.time()
        first = spawn("-q", "train", *ORDER, *long, "-o", run)
        deadline = started + 120
        config = run / "config.json"
        while not config.exists() or config.stat().st_mtime < started - 1:  # written by it
            assert first.poll() is None and time.time() < deadline, first.stderr.read()
            time.sleep(0.2)
        second = spawn("-q", "train", *ORDER, *QUICK, "-o", run, "--overwrite")
        err = second.communicate(timeout=300)[1].decode()
        assert second.returncode == 2, err
        assert "another posgeom process is writing" in one_line(err)
        assert first.poll() is None  # the first still trains, its folder untouched
        os.killpg(first.pid, stop)
        first.communicate(timeout=120)
        assert _free(run)
    third = spawn("-q", "train", *ORDER, *QUICK, "-o", run, "--overwrite")
    assert third.wait(timeout=300) == 0, third.stderr.read()
    assert json.loads((run / "result.json").read_text())["final"]["epoch"] == 1


# ----------------------------------------------------------------------------- item 9
def _a_results_folder(folder: Path) -> Path:
    """A small ``run`` results folder (a report can be made of it)."""
    from fault_helpers import write_corpus

    from posgeom.cli.main import main

    corpus = write_corpus(folder.parent / "corpus.txt", 200)
    assert main(["-q", "run", str(corpus), "-n", "6", "-d", "4", "-o", str(folder)]) == 0
    return folder


def test_item09_report_keeps_a_users_own_manifest(tmp_path, capsys):
    run = _a_results_folder(tmp_path / "run")
    mine = tmp_path / "mine"
    mine.mkdir()
    text = json.dumps({"files": {"paper.tex": "draft 3"}, "note": "my own file list"})
    (mine / RESULTS_MANIFEST).write_text(text)
    code, err = cli(capsys, "report", run, "-o", mine / "report.html", "--no-figures")
    assert code == 0, err
    assert (mine / RESULTS_MANIFEST).read_text() == text
    # posgeom's own results folder still lists its page (a later --overwrite replaces it)
    assert cli(capsys, "report", run, "--no-figures")[0] == 0
    assert "report.html" in json.loads((run / RESULTS_MANIFEST).read_text())["files"]


def test_item09_report_is_not_written_into_a_count_job(small_corpus, tmp_path, capsys):
    run = _a_results_folder(tmp_path / "run")
    job = tmp_path / "job"
    argv = ["count", small_corpus, "-n", 6, "--job-dir", job, "--shard-lines", 100]
    assert cli(capsys, *argv, "-o", tmp_path / "a.npz")[0] == 0
    before = (job / RESULTS_MANIFEST).read_bytes()
    for page in (job / "report.html", job / "sub" / "report.html"):
        code, err = cli(capsys, "report", run, "-o", page, "--no-figures")
        assert code == 2 and str(job) in one_line(err) and "elsewhere" in one_line(err)
        assert not page.exists()
    assert (job / RESULTS_MANIFEST).read_bytes() == before
    assert cli(capsys, *argv, "-o", tmp_path / "b.npz")[0] == 0  # the job still resumes


# ----------------------------------------------------------------------------- item 10
def test_item10_a_failed_train_leaves_no_empty_run_folder(tmp_path, capsys):
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    argv = ["train", "--task", "sst2", "--train-file", empty, "--eval-file", empty, *QUICK]
    code, err = cli(capsys, *argv, "-o", tmp_path / "run")
    assert code == 2, err
    one_line(err)
    assert not (tmp_path / "run").exists()
    # a folder of the user's (empty) is left as it was: there, and empty
    (tmp_path / "mine").mkdir()
    assert cli(capsys, *argv, "-o", tmp_path / "mine")[0] == 2
    assert list((tmp_path / "mine").iterdir()) == []


def test_item10_counts_inside_the_job_folder_are_refused(small_corpus, tmp_path, capsys):
    job = tmp_path / "job"
    argv = ["count", small_corpus, "-n", 6, "--job-dir", job, "--shard-lines", 100]
    for out in (job / "out.npz", job / "sub" / "out.npz"):
        code, err = cli(capsys, *argv, "-o", out)
        assert code == 2 and "job" in one_line(err), err
        assert not job.exists()  # refused before the job began
    assert cli(capsys, *argv, "-o", tmp_path / "out.npz")[0] == 0
    assert cli(capsys, *argv, "-o", tmp_path / "again.npz")[0] == 0  # the job resumes


@pytest.mark.filterwarnings("ignore")
def test_item10_extend_measure_keeps_a_symlinked_cache_folder(tmp_path, capsys):
    """``res.measure`` a symlink to a folder of the user's: posgeom works in it and removes only
    its own files; the folder, and the link, stay."""
    folder, text = _tiny_model(tmp_path)
    mine = tmp_path / "my-cache"
    mine.mkdir()
    (tmp_path / "res.measure").symlink_to(mine)
    argv = ["extend", folder, text, "--target-length", 128, "--classes", "top:4", "--no-fit"]
    argv += ["--measure", "--windows", 1, "--heldout-fraction", 0.2, "--measure-top", 1]
    code, err = cli(capsys, *argv, "--replicates", 2, "-o", tmp_path / "res")
    assert code == 0, err
    assert (tmp_path / "res" / "summary.json").is_file()
    assert mine.is_dir() and list(mine.iterdir()) == []
    assert (tmp_path / "res.measure").is_symlink()


def _tiny_model(tmp_path: Path) -> tuple[Path, Path]:
    """The shared one-layer Llama (tests/helpers/models.py) saved as a Hugging Face folder, and
    a text of its words."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from helpers.models import tiny_llama

    tiny = tiny_llama(tmp_path / "tiny")
    words = [w for w in tiny["vocab"] if w != "[UNK]"]
    text = tmp_path / "book.txt"
    rng = np.random.default_rng(3)
    text.write_text(" ".join(words[t] for t in rng.integers(0, len(words), 1000)))
    return tiny["folder"], text


def test_item04_a_commit_into_a_held_folder_is_refused_not_waited_on(tmp_path, monkeypatch):
    """A results folder written inside a work folder another process holds for its whole run:
    refused after a bounded wait (WAIT_S), instead of waiting for hours."""
    import posgeom.io._locks as locks
    from posgeom.io.outputs import results_directory

    monkeypatch.setattr(locks, "WAIT_S", 0.3)
    folder = tmp_path / "run"
    proc = _holder(folder, "train-run")
    try:
        t0 = time.monotonic()
        with pytest.raises(PosgeomError, match="stays locked by another posgeom process"):
            with results_directory(folder / "res", content="run") as tmp:
                (tmp / "x.txt").write_text("x\n")
        assert time.monotonic() - t0 < 30
        assert not (folder / "res").exists()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("restart", [False, True])
def test_item04_a_killed_runs_temporaries_do_not_block_its_folder(tmp_path, restart):
    """A process killed mid-write leaves its temporary (``.<name>.posgeom-<host>-<pid>-*.tmp``)
    in the work folder; a resume or restart of that folder removes it (its pid is dead), where it
    was refused as "files posgeom did not write" (found by the SIGKILL case of the two-process
    train test). A temporary of a live process, or any other unlisted file, still refuses."""
    from posgeom.io._atomic import temp_sibling

    folder = WorkFolder.open(tmp_path / "run", kind="train-run")
    folder.write_text("a.txt", "kept")
    folder.release()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    sub = tmp_path / "run" / "epoch_1"
    sub.mkdir()
    stale = temp_sibling(sub / "model.safetensors")
    stale = stale.with_name(stale.name.replace(f"-{os.getpid()}-", f"-{dead.stdout.strip()}-"))
    stale.write_bytes(b"half a file")
    again = WorkFolder.open(tmp_path / "run", kind="train-run", restart=restart)
    again.release()
    assert not stale.exists()
    live = temp_sibling(tmp_path / "run" / "b.txt")  # this (live) process's: not stale
    live.write_bytes(b"being written")
    with pytest.raises(PosgeomError, match="did not write"):
        WorkFolder.open(tmp_path / "run", kind="train-run", restart=True)
    assert live.exists()
