"""SIGINT, SIGTERM and SIGKILL at random points of count, geometry and run (issue 10, defect 12:
SIGTERM left hidden temporary folders): the output is complete or absent, SIGINT exits 130 and
SIGTERM 143 without temporaries, and after SIGKILL the next run removes the stale temporaries
of the killed process and succeeds. With Dask workers, Ctrl-C gives no worker traceback."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest
from fault_helpers import cli, spawn, temporaries, write_corpus

from posgeom import PositionCounts
from posgeom.io._results import RESULTS_MANIFEST

RNG = np.random.default_rng(2026)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("signals")
    corpus = write_corpus(folder / "corpus.txt", 15_000)
    counts = folder / "counts.npz"
    from posgeom.cli.main import main

    assert main(["-q", "count", str(corpus), "-n", "24", "-o", str(counts)]) == 0
    return folder, corpus, counts


def _command(kind, sig, folder, corpus, counts):
    out = folder / f"out-{kind}-{sig.name}"
    if kind == "count":
        return out.with_suffix(".npz"), ["count", corpus, "-n", 24, "-o", out.with_suffix(".npz")]
    geometry = ["-d", 16, "--noise-repeats", 3, "-o", out]
    if kind == "geometry":
        return out, ["geometry", counts, *geometry]
    return out, ["run", corpus, "-n", 24, *geometry]


def _complete(out):
    """The output loads completely (a counts file, or a results folder and its manifest)."""
    if out.suffix == ".npz":
        assert PositionCounts.load(out).n_sequences == 15_000
        return
    manifest = json.loads((out / RESULTS_MANIFEST).read_text())
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {RESULTS_MANIFEST}


CASES = [
    ("count", signal.SIGTERM),
    ("count", signal.SIGKILL),
    ("geometry", signal.SIGTERM),
    ("geometry", signal.SIGINT),
    ("geometry", signal.SIGKILL),
    ("run", signal.SIGTERM),
    ("run", signal.SIGINT),
    ("run", signal.SIGKILL),
]


@pytest.mark.parametrize(("kind", "sig"), CASES, ids=[f"{k}-{s.name}" for k, s in CASES])
def test_signal_at_a_random_point(work, kind, sig, capsys):
    folder, corpus, counts = work
    out, argv = _command(kind, sig, folder, corpus, counts)
    proc = spawn("-q", *argv)
    time.sleep(float(RNG.uniform(0.3, 2.5)))  # imports take ~1 s: before, during or after work
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=60)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert "Traceback" not in err, err
    if code == 0:  # it finished first
        _complete(out)
    elif code == -sig and sig != signal.SIGKILL:  # before or after posgeom's handler ran
        if out.exists():
            _complete(out)
    elif sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        if out.exists():  # killed after the output was in place
            _complete(out)
            argv = [*argv, "--overwrite"]
        assert cli(capsys, *argv)[0] == 0  # the next run cleans what the killed one left
        _complete(out)
    else:
        assert code == {signal.SIGTERM: 143, signal.SIGINT: 130}[sig], err
        assert "partial ones removed" in err
        if out.exists():  # the signal came after the output was in place
            _complete(out)
    assert not temporaries(folder), temporaries(folder)


def test_dask_workers_are_quiet_on_ctrl_c(work, tmp_path):
    """Ctrl-C once the cluster is up: no worker traceback; 130 with the output absent, or, when
    the count won the race, a complete output (0, or -SIGINT if the interrupt came at exit)."""
    pytest.importorskip("distributed")
    _, corpus, _ = work  # 15,000 lines in 300 shards: the interrupt lands while workers count
    out = tmp_path / "c.npz"
    proc = spawn("count", corpus, "-n", 8, "--workers", 2, "--shard-lines", 50, "-o", out)
    seen, deadline = [], time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for the cluster, then for a first shard
        line = proc.stderr.readline().decode()
        seen.append(line)
        if not line or " counted (" in line:  # "shard k/300 counted (...)": workers are busy
            break
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    code = proc.wait(timeout=60)
    err = "".join(seen) + proc.stderr.read().decode()
    proc.stderr.close()
    noise = ("Traceback", "KeyboardInterrupt", "Error", "Exception")  # e.g. CancelledError
    assert not any(word in err for word in noise), err
    assert code in (0, 130, -signal.SIGINT), err
    if code == 130:
        assert "partial ones removed" in err
        assert not out.exists()
    else:  # finished before the interrupt took effect: the output is whole
        assert PositionCounts.load(out).n_sequences == 15_000
    assert not temporaries(tmp_path), temporaries(tmp_path)
