"""Bounded memory for every input (issue 18, items 5-8): n against the longest sequence before
allocating, bounded lines, one pass over streams, bounded JSON and array reads, limits on heads
and workers, the split-half noise floor past 10^9 samples."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from fault_helpers import cli, one_line

from posgeom import count_positions
from posgeom._errors import PosgeomError
from posgeom.corpus import count_corpus, read_texts
from posgeom.corpus.counting import PositionCounts


def test_n_far_past_the_longest_sequence_is_refused_before_allocating(
    small_corpus, tmp_path, capsys
):
    """Item 5: `count small.txt -n 1000000000` took 11.8 GB within 25 s. Refused now before the
    (n, V) counts exist: the process's peak memory stays far below n * 8 bytes (8 GB)."""
    import resource

    out = tmp_path / "x.npz"
    code, err = cli(capsys, "count", small_corpus, "-n", 1_000_000_000, "-o", out)
    line = one_line(err)
    assert code == 2 and "longest sequence has 39 tokens" in line and "--max-positions 39" in line
    assert not out.exists()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert peak_kib < 2 * 1024 * 1024  # under 2 GiB, against the 8 GB the rows would need
    # a small excess is allowed (positions past the longest are simply empty)
    assert count_corpus(small_corpus, "word", max_positions=64).max_positions == 64


def test_a_line_without_newline_is_bounded(tmp_path, capsys):
    """Item 6: `count /dev/zero --format text` was killed by the kernel; a 200 MB line without a
    newline used 663 MB. Lines are read in bounded pieces: one over the limit is one line."""
    code, err = cli(
        capsys, "count", "/dev/zero", "--format", "text", "-n", 8, "-o", tmp_path / "z.npz"
    )
    assert code == 2 and "longer than 16 MiB" in one_line(err)
    from posgeom.corpus._bounded import MAX_LINE_BYTES

    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.write(b"ok line\n")
        fh.write(b"a " * (MAX_LINE_BYTES // 2 + 8))  # one line just over the limit
    with pytest.raises(PosgeomError, match=r"big.txt, line 2: longer than 16 MiB"):
        list(read_texts(big))


def _fifo(tmp_path, data: bytes):
    path = tmp_path / "fifo.txt"
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as fh:
            fh.write(data)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return path, thread


def test_a_fifo_corpus_is_read_once(small_corpus, tmp_path, capsys):
    """Item 7: a FIFO (or /dev/stdin, <(cat ...)) with the word tokenizer hung or said "the
    corpus is empty": it was read twice. Now its counts equal those of the file."""
    fifo, thread = _fifo(tmp_path, small_corpus.read_bytes())
    out = tmp_path / "fifo.npz"
    assert cli(capsys, "count", fifo, "--format", "text", "-n", 8, "-o", out)[0] == 0
    thread.join(5)
    ref = count_corpus(small_corpus, "word", max_positions=8)
    got = PositionCounts.load(out)
    assert got.n_sequences == ref.n_sequences == 400
    assert (got.counts != ref.counts).nnz == 0 and got.fingerprint == ref.fingerprint
    assert not any(p.name.startswith("posgeom-stream-") for p in (tmp_path / "..").iterdir())


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_summary_json_that_is_a_device_or_fifo(tmp_path, capsys, target):
    """Item 7: summary.json linked to /dev/zero was read without bound, a FIFO hung."""
    rng = np.random.default_rng(0)
    path = count_positions(rng.integers(0, 9, size=(200, 6)), max_positions=6).save(
        tmp_path / "c.npz"
    )
    res = tmp_path / "res"
    assert cli(capsys, "geometry", path, "-d", 3, "-o", res)[0] == 0
    (res / "summary.json").unlink()
    if target == "fifo":
        os.mkfifo(res / "summary.json")  # never opened for writing: a read would block
    else:
        (res / "summary.json").symlink_to(target)
    from posgeom.reports.view import load_folder

    view = load_folder(res)
    assert any(m.startswith("summary.json") for m in view.missing)  # named, and no hang
    from posgeom.io.jsonfiles import read_json

    with pytest.raises(PosgeomError, match="not a regular file"):
        read_json(res / "summary.json")


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--n-heads", "0"], "--n-heads must be between 1 and"),
        (["--n-heads", "100000"], "--n-heads must be between 1 and"),
        (["--workers", "640"], "--workers 640 but this machine has"),
    ],
)
def test_heads_and_workers_have_limits(small_corpus, tmp_path, capsys, extra, words):
    """Items 7 and 15: `--n-heads 100000` and `--workers 64` ran on; `--n-heads 0` was a
    ZeroDivisionError."""
    out = tmp_path / "o"
    code, err = cli(capsys, "compare", small_corpus, "-n", 6, "-d", 16, *extra, "-o", out)
    assert code == 2 and words in one_line(err) and not out.exists()


def test_split_half_noise_floor_past_a_billion_samples(tmp_path, capsys):
    """Item 8: counts with 2e9 samples per position failed in the split-half noise floor
    ("sum(colors) must be less than 1000000000")."""
    rng = np.random.default_rng(0)
    c = rng.integers(1, 10, size=(6, 20)).astype(np.int64)
    c = c * (2_000_000_000 // c.sum(axis=1, keepdims=True))
    m = sp.csr_matrix(c)
    totals = np.asarray(m.sum(axis=1)).ravel()
    counts = PositionCounts(
        counts=m, totals=totals, n_sequences=int(totals.max()), n_tokens=int(totals.sum())
    )
    path = counts.save(tmp_path / "big.npz")
    assert (
        cli(capsys, "geometry", path, "-d", 4, "--estimator", "plugin", "-o", tmp_path / "g")[0]
        == 0
    )
    from posgeom.geometry.split_half import _split_rows

    half, other = _split_rows(m, np.random.default_rng(1))
    share = np.asarray(half.sum(axis=1)).ravel() / totals
    assert np.all(np.abs(share - 0.5) < 1e-3)  # halves of 1e9 samples: 1/sqrt(total) apart
    assert (half + other != m).nnz == 0 and half.data.min() >= 0
