"""Results folders and counts files: complete or absent, and nothing of the user's is touched.

Regression tests of issue 10: defect 1 (``--overwrite`` deleted inputs and unrelated files),
defect 4 (``count -o`` replaced a file silently), defect 9 (write errors were tracebacks, ``run``
counted before finding out it could not write), and the file modes (umask).
"""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from posgeom import PositionCounts, count_positions
from posgeom._errors import PosgeomError
from posgeom.cli.main import main
from posgeom.io._atomic import check_writable
from posgeom.io._results import RESULTS_MANIFEST
from posgeom.io.outputs import results_directory


def _counts(tmp_path, name="val.npz", seed=0):
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(0, 20, size=rng.integers(4, 9)) for _ in range(200)]
    return count_positions(seqs, max_positions=6).save(tmp_path / name)


def _cli(capsys, *argv):
    code = main(["-q", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("posgeom: error:"), err
    return lines[0]


def test_overwrite_keeps_inputs_and_user_files(tmp_path, capsys):
    """Defect 1: `geometry src/val.npz -o src --overwrite` emptied src."""
    src = tmp_path / "src"
    src.mkdir()
    counts = _counts(src)
    (src / "sub").mkdir()
    (src / "sub" / "keep.txt").write_text("keep")
    code, _, err = _cli(capsys, "geometry", counts, "-d", 4, "-o", src, "--overwrite")
    assert code == 2 and "inside the output folder" in _one_line(err)
    assert (src / "sub" / "keep.txt").read_text() == "keep" and counts.exists()
    # a folder without the posgeom manifest is never replaced, even without inputs inside
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = _cli(capsys, "geometry", counts, "-d", 4, "-o", other, "--overwrite")
    assert code == 2 and "not written by posgeom" in _one_line(err)
    assert (other / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_only_posgeom_folders(tmp_path, capsys):
    counts = _counts(tmp_path)
    out = tmp_path / "res"
    assert _cli(capsys, "geometry", counts, "-d", 4, "-o", out)[0] == 0
    manifest = json.loads((out / RESULTS_MANIFEST).read_text())
    assert manifest["kind"] == "posgeom-results"
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {RESULTS_MANIFEST}
    code, _, err = _cli(capsys, "geometry", counts, "-d", 4, "-o", out)  # no --overwrite
    assert code == 2 and "--overwrite" in _one_line(err)
    (out / "my-notes.txt").write_text("mine")  # a user's file inside a posgeom folder
    code, _, err = _cli(capsys, "geometry", counts, "-d", 4, "-o", out, "--overwrite")
    assert code == 2 and "my-notes.txt" in _one_line(err)
    (out / "my-notes.txt").unlink()
    before = (out / "summary.json").stat().st_ino
    assert _cli(capsys, "geometry", counts, "-d", 5, "-o", out, "--overwrite")[0] == 0
    assert (out / "summary.json").stat().st_ino != before
    assert json.loads((out / "summary.json").read_text())["options"]["model_dim"] == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries


def test_count_refuses_an_existing_file(tmp_path, capsys):
    """Defect 4: `count -o` replaced an existing counts file silently."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\nb c d e\n" * 20)
    out = tmp_path / "c.npz"
    assert _cli(capsys, "count", corpus, "-n", 4, "-o", out)[0] == 0
    first = out.read_bytes()
    code, _, err = _cli(capsys, "count", corpus, "-n", 3, "-o", out)
    assert code == 2 and "--overwrite" in _one_line(err) and out.read_bytes() == first
    assert _cli(capsys, "count", corpus, "-n", 3, "-o", out, "--overwrite")[0] == 0
    assert PositionCounts.load(out).max_positions == 3
    mine = tmp_path / "mine.npz"  # a user's file is not a posgeom artifact: never replaced
    np.savez(mine, x=np.arange(3))
    code, _, err = _cli(capsys, "count", corpus, "-n", 3, "-o", mine, "--overwrite")
    assert code == 2 and "not written by posgeom" in _one_line(err)
    np.testing.assert_array_equal(np.load(mine)["x"], np.arange(3))


def test_unwritable_outputs_are_found_before_the_work(tmp_path, capsys, monkeypatch):
    """Defect 9: a file where a folder should be, a read-only folder: one line, before counting."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n" * 10)
    (tmp_path / "afile").write_text("x")
    code, _, err = _cli(capsys, "count", corpus, "-n", 3, "-o", tmp_path / "afile" / "c.npz")
    assert code == 2 and "is a file, not a folder" in _one_line(err)
    import posgeom.cli.corpus_commands as cc

    def never(*a, **k):
        raise AssertionError("counted before checking the output")

    monkeypatch.setattr(cc, "counts_from_args", never)
    code, _, err = _cli(capsys, "run", corpus, "-n", 3, "-o", tmp_path / "afile" / "res")
    assert code == 2 and "is a file, not a folder" in _one_line(err)
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(os, "open", _refusing_open(os.open, ro))
    code, _, err = _cli(capsys, "run", corpus, "-n", 3, "-o", ro / "res")
    assert code == 2 and "Read-only file system" in _one_line(err)


def _refusing_open(real, folder):
    """``os.open`` that fails like a read-only filesystem for new files inside ``folder``."""

    def fake(path, flags, *args, **kwargs):
        if os.path.dirname(os.fspath(path)) == os.fspath(folder) and flags & os.O_CREAT:
            raise OSError(30, "Read-only file system", os.fspath(path))
        return real(path, flags, *args, **kwargs)

    return fake


def test_results_directory_contract(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(RuntimeError), results_directory(out) as tmp:
        (tmp / "a.txt").write_text("partial")
        raise RuntimeError("boom")
    assert not out.exists() and not list(tmp_path.iterdir())
    with results_directory(out, content="demo") as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.txt").write_text("done")
    manifest = json.loads((out / RESULTS_MANIFEST).read_text())
    assert manifest["content"] == "demo" and list(manifest["files"]) == ["sub/a.txt"]
    with pytest.raises(PosgeomError, match="inside the output folder"):
        with results_directory(out, overwrite=True, inputs=[out / "sub" / "a.txt"]):
            pass
    with pytest.raises(PosgeomError, match="exists and is not a folder"):
        check_writable(out / RESULTS_MANIFEST, folder=True)


def test_modes_follow_the_umask(tmp_path, capsys):
    """Lesser: results were 0600 files in 0700 folders whatever the umask."""
    counts = _counts(tmp_path)
    old = os.umask(0o022)
    try:
        assert _cli(capsys, "geometry", counts, "-d", 4, "-o", tmp_path / "res")[0] == 0
        c2 = _counts(tmp_path, "c2.npz")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "res").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "res" / "summary.json").stat().st_mode) == 0o644
    assert stat.S_IMODE(c2.stat().st_mode) == 0o644


def test_extract_never_replaces_a_users_file(tmp_path, capsys):
    """`extract -o` is checked before the model is loaded; a file posgeom did not write stays."""
    mine = tmp_path / "mine.npz"
    np.savez(mine, x=np.arange(3))
    code, _, err = _cli(capsys, "extract", tmp_path / "no-model", "-n", 4, "-o", mine)
    assert code == 2 and "not written by posgeom" in _one_line(err)
    np.testing.assert_array_equal(np.load(mine)["x"], np.arange(3))
