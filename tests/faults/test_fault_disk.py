"""A disk that fills (issue 10, defects 3 and 9): after every failed write the target holds the
complete old output, the command printed one line and exited 2, and no temporary is left.

As root, a small tmpfs is mounted and filled to every free size from 0 to past what the new
output needs (4 KiB steps: every write of the writers fails once at some size). Otherwise the
same sweep runs in subprocesses with RLIMIT_FSIZE (a write past the limit fails with EFBIG)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys

import pytest
from fault_helpers import SRC, cli, one_line, temporaries

from posgeom import PositionCounts, count_corpus
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.io._results import RESULTS_MANIFEST

SIZE = 512 * 1024


@pytest.fixture
def tmpfs(tmp_path):
    """A 512 KiB tmpfs at tmp_path/disk (skips when it cannot be mounted)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("not root: tmpfs needs mount; the RLIMIT_FSIZE test covers this case")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(disk)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def _fill(disk, free):
    """Leave about ``free`` bytes free on ``disk`` (a filler file takes the rest)."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    st = os.statvfs(disk)
    room = st.f_bavail * st.f_frsize - free
    with open(filler, "wb") as fh, contextlib.suppress(OSError):
        fh.write(b"\0" * max(room, 0))


def _digest(path):
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return {p.name: _digest(p) for p in sorted(path.iterdir())}


def _sweep(disk, capsys, target, argv, done):
    """Run ``argv`` with 0, 4, 8, ... KiB free until it succeeds; every failure must leave the
    old ``target`` whole and print one line. Returns how many sizes failed."""
    failures = 0
    for free in range(0, SIZE, 4096):
        old = _digest(target)
        _fill(disk, free)
        code, err = cli(capsys, *argv)
        (disk / "filler").unlink()
        assert not temporaries(disk), (free, temporaries(disk))
        if code == 0:  # enough room: the new output, complete
            done()
            return failures
        failures += 1
        assert code == 2 and "No space left on device" in one_line(err), err
        assert _digest(target) == old  # the complete old output, untouched
    raise AssertionError("the write never succeeded, even with the whole disk free")


def test_full_disk_keeps_the_old_output(tmpfs, small_corpus, capsys):
    counts, res = tmpfs / "c.npz", tmpfs / "res"
    assert cli(capsys, "count", small_corpus, "-n", 8, "-o", counts)[0] == 0
    fixed = count_corpus(small_corpus, WordLevelTokenizer(), max_positions=12)
    fixed_path = fixed.save(tmpfs.parent / "fixed.npz")  # the input lives off the small disk
    geometry = ["geometry", fixed_path, "--noise", "none", "-o", res]
    assert cli(capsys, *geometry, "-d", 4)[0] == 0

    def new_counts():
        assert PositionCounts.load(counts).max_positions == 9

    def new_results():
        assert json.loads((res / "summary.json").read_text())["options"]["model_dim"] == 5
        assert (res / RESULTS_MANIFEST).exists()

    argv = ["count", small_corpus, "-n", 9, "-o", counts, "--overwrite"]
    assert _sweep(tmpfs, capsys, counts, argv, new_counts) > 0
    argv = [*geometry, "-d", 5, "--overwrite"]
    assert _sweep(tmpfs, capsys, res, argv, new_results) > 0


LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from posgeom.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _tmpfs_works() -> bool:
    return (
        os.geteuid() == 0
        and os.path.exists("/proc/filesystems")
        and "tmpfs" in open("/proc/filesystems").read()
    )


@pytest.mark.skipif(_tmpfs_works(), reason="as root the tmpfs test fills a real disk")
def test_file_size_limit_keeps_the_old_output(small_corpus, tmp_path, capsys):
    """The same guarantee without root: writes fail (EFBIG) past RLIMIT_FSIZE bytes."""
    counts = tmp_path / "c.npz"
    assert cli(capsys, "count", small_corpus, "-n", 8, "-o", counts)[0] == 0
    old = _digest(counts)
    size = counts.stat().st_size
    env = {**os.environ, "PYTHONPATH": SRC}
    for limit in (0, size // 3, size - 1):
        argv = ["-q", "count", str(small_corpus), "-n", "9", "-o", str(counts), "--overwrite"]
        done = subprocess.run(
            [sys.executable, "-c", LIMITED, str(limit), *argv], env=env, capture_output=True
        )
        err = done.stderr.decode()
        assert done.returncode == 2 and "too large" in one_line(err), err
        assert _digest(counts) == old and not temporaries(tmp_path)
