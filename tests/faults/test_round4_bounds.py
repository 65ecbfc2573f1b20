"""Decoded sizes and work bounded, fourth round (issue 36, items 2, 3, 5 and 6).

Every bomb is a real one, built small in ``tmp_path`` (zeros deflated at up to 1000 : 1, a
dictionary-encoded column, a genuine tokenizers file); the peak memory of the refusal is measured
(tracemalloc for Python's allocations, a child process's peak RSS for the libraries' own), so a
test fails when the declared size is allocated. The issue's full-size bombs are ``e2e``.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from fault_helpers import SRC, cli, one_line

from posgeom._errors import PosgeomError
from posgeom.io._arrayfiles import read_npz
from posgeom.io._inflate import inflation_limit

MIB = 1 << 20


def _peak(fn) -> tuple[BaseException | None, int]:
    """(the exception ``fn()`` raised, peak Python allocation in bytes while it ran)."""
    tracemalloc.start()
    try:
        fn()
        raised = None
    except BaseException as exc:  # returned to the test
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


def _child_peak(code: str, *args: str) -> tuple[int, str, int, float]:
    """Run ``code`` in a fresh Python: (exit status, stderr, peak RSS in bytes, seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={"PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return proc.returncode, proc.stderr, peak, seconds


CLI_PEAK = "import sys; from posgeom.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _npz_of_zeros(path, members: int, member_bytes: int) -> None:
    """A genuine compressed ``.npz``: ``members`` int64 arrays of ``member_bytes`` zeros each."""
    zeros = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for k in range(members):
            with zf.open(f"ids_{k}.npy", "w", force_zip64=True) as fh:
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header,
                    {"descr": "<i8", "fortran_order": False, "shape": (member_bytes // 8,)},
                )
                fh.write(header.getvalue())
                for _ in range(member_bytes // MIB):
                    fh.write(zeros)


def test_item2_npz_members_bounded_together(tmp_path, capsys):
    """Each member under the 64 MiB floor, three of them 120 MiB from a few hundred KB: each
    passed its own bound and all were inflated. The members' declared total is bounded by the
    limit of the whole file's size, from the zip directory, before any allocation."""
    bomb = tmp_path / "many.npz"
    _npz_of_zeros(bomb, 3, 40 * MIB)
    assert bomb.stat().st_size < MIB
    with zipfile.ZipFile(bomb) as zf:  # every member is under its own limit
        assert all(i.file_size <= inflation_limit(i.compress_size) for i in zf.infolist())
    raised, peak = _peak(lambda: read_npz(bomb))
    assert isinstance(raised, PosgeomError), raised
    assert "3 members declare" in str(raised) and "more than 64 MiB" in str(raised)
    assert "numpy.savez (uncompressed)" in str(raised)
    assert peak < 2 * MIB, peak
    # every command reading an .npz goes through the one reader: one line, exit 2
    counts = tmp_path / "c.npz"
    for argv in (
        ["score", "--target", bomb, bomb],
        ["probe", bomb, "-o", tmp_path / "p"],
        ["count", bomb, "-n", 4, "-o", counts],
    ):
        code, err = cli(capsys, *argv)
        assert code == 2 and "members declare" in one_line(err), (argv, err)
    assert not (tmp_path / "p").exists() and not counts.exists()
    # one member read alone (only=) counts alone; a genuine archive reads as numpy reads it
    assert read_npz(bomb, only="absent") == {}
    rng = np.random.default_rng(0)
    arrays = {f"a{k}": rng.normal(size=(50, 30)) for k in range(5)}
    np.savez_compressed(tmp_path / "ok.npz", **arrays)
    got = read_npz(tmp_path / "ok.npz")
    with np.load(tmp_path / "ok.npz") as ref:
        assert sorted(got) == sorted(ref.files)
        assert all(np.array_equal(got[k], ref[k]) for k in ref.files)


@pytest.mark.e2e
def test_item2_issue_npz_of_90_members_refused_in_seconds_under_1gb(tmp_path):
    """The issue's file: 90 members of 60 MiB (each under the floor), 5.3 GiB declared. The
    `probe` and `count` processes' peak RSS stays under 1 GB and each answers in seconds."""
    bomb = tmp_path / "ninety.npz"
    _npz_of_zeros(bomb, 90, 60 * MIB)
    assert bomb.stat().st_size < 30 * MIB
    for argv in (["probe", bomb], ["count", bomb, "-n", 4, "-o", tmp_path / "c.npz"]):
        code, err, peak, seconds = _child_peak(CLI_PEAK, "-q", *map(str, argv))
        assert code == 2 and "90 members declare" in one_line(err), err
        assert peak < 1 << 30 and seconds < 20, (peak, seconds)


def test_item5_rope_head_dim_that_does_not_fit_the_width_is_refused(tmp_path, capsys):
    """`--rope-head-dim` odd, not dividing `-d`, or 2**70 was accepted and the RoPE row dropped
    with a log line (the default rows skip a family they cannot build). The rule is the RoPE
    family's (posgeom.encodings.rope.check_rope_head_dim), checked by GeometryConfig before
    any work: one line naming both flags, exit 2, nothing written."""
    from posgeom import GeometryConfig, count_corpus
    from posgeom.encodings import rope_heads

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"a b c d e f g h {k}" for k in range(60)) + "\n")
    counts = count_corpus(corpus, "word", max_positions=8).save(tmp_path / "c.npz")
    t0 = time.perf_counter()
    for value in (3, 6, 2**70, 32):
        code, err = cli(
            capsys, "geometry", counts, "-d", 16, "--rope-head-dim", value, "-o", tmp_path / "g"
        )
        line = one_line(err)
        assert code == 2, err
        assert f"--rope-head-dim {value} does not fit --model-dim 16" in line, line
    assert time.perf_counter() - t0 < 10 and not (tmp_path / "g").exists()
    for value in (5, 12, 2**70):
        with pytest.raises(PosgeomError, match=f"rope_head_dim={value} does not fit"):
            GeometryConfig(model_dim=16, rope_head_dim=value)
    # the same rule as the family's own builder, and a fitting head width is taken
    with pytest.raises(PosgeomError, match="head_dim=6 does not fit model_dim=16"):
        rope_heads(8, 16, 6)
    assert GeometryConfig(model_dim=16, rope_head_dim=8).rope_head_dim == 8
    code, _ = cli(capsys, "geometry", counts, "-d", 16, "--rope-head-dim", 4, "-o", tmp_path / "ok")
    table = (tmp_path / "ok" / "table.md").read_text()
    assert code == 0 and "4 heads x head_dim 4" in table
