"""The one output rule (issue 18, items 1-4, 16 and 17): reports, reproduce's pages, counts and
results folders never replace what posgeom did not write or what changed since it wrote it,
never write over an input, are checked before any work and resolve symlinks first."""

from __future__ import annotations

import os

import pytest
from fault_helpers import cli, one_line, temporaries

from posgeom._errors import PosgeomError


@pytest.fixture(scope="module")
def runs(small_corpus, tmp_path_factory):
    """rA, rB: ``run small.txt -n 12 -d 8`` and ``-n 8`` (the issue's fixtures)."""
    from posgeom.cli.main import main

    base = tmp_path_factory.mktemp("runs")
    for name, n in (("rA", 12), ("rB", 8)):
        assert (
            main(["-q", "run", str(small_corpus), "-n", str(n), "-d", "8", "-o", str(base / name)])
            == 0
        )
    return base


def _copy(runs, tmp_path, name):
    import shutil

    return shutil.copytree(runs / name, tmp_path / name)


def test_report_never_replaces_a_users_file(runs, tmp_path, capsys):
    """Item 1: `report rB -o userfile.txt` replaced any file; a hand-written report.html too."""
    rb = _copy(runs, tmp_path, "rB")
    for name in ("userfile.txt", "thesis.md"):
        user = tmp_path / name
        user.write_text("my thesis\n")
        for extra in ([], ["--overwrite"], ["--no-figures", "--overwrite"]):
            code, err = cli(capsys, "report", rb, "-o", user, *extra)
            assert code == 2 and str(user) in one_line(err)
            assert user.read_text() == "my thesis\n"
    (rb / "report.html").write_text("<p>my own report</p>\n")
    code, err = cli(capsys, "report", rb, "--overwrite")
    assert code == 2 and "not written by posgeom" in one_line(err)
    assert (rb / "report.html").read_text() == "<p>my own report</p>\n"


def test_report_replaces_its_own_report_only_with_overwrite(runs, tmp_path, capsys):
    from posgeom.io._claims import stamped_kind

    rb = _copy(runs, tmp_path, "rB")
    assert cli(capsys, "report", rb, "--no-figures")[0] == 0
    assert stamped_kind(rb / "report.html") == "report"
    code, err = cli(capsys, "report", rb, "--no-figures")
    assert code == 2 and "--overwrite" in one_line(err)
    assert cli(capsys, "report", rb, "--overwrite", "--no-figures")[0] == 0
    with open(rb / "report.html", "a") as fh:  # an edit: no longer posgeom's page
        fh.write("<p>my notes</p>\n")
    code, err = cli(capsys, "report", rb, "--overwrite", "--no-figures")
    assert code == 2 and "changed since" in one_line(err)
    assert (rb / "report.html").read_text().endswith("<p>my notes</p>\n")


@pytest.mark.parametrize("target", ["rB/summary.json", "rA/arrays.npz", "rB/table.md"])
def test_report_never_writes_over_a_results_file(runs, tmp_path, capsys, target):
    """Item 2: `report rR -o rR/summary.json --no-figures` wrote HTML over the folder's files."""
    _copy(runs, tmp_path, "rA")
    rb = _copy(runs, tmp_path, "rB")
    path = tmp_path / target
    before = path.read_bytes()
    code, err = cli(capsys, "report", rb, "-o", path, "--no-figures", "--overwrite")
    assert code == 2 and str(path) in one_line(err)
    assert path.read_bytes() == before


def test_reproduce_never_replaces_a_users_pages(tmp_path, capsys):
    """Item 3: `reproduce ... -o mydocs --report` replaced a user's REPRODUCTION.md and
    reproduction.html; refused now before any work (nothing counted, no cache made)."""
    data, docs = tmp_path / "data", tmp_path / "mydocs"
    data.mkdir()
    docs.mkdir()
    (docs / "REPRODUCTION.md").write_text("# my notes\n")
    for extra in ([], ["--overwrite"]):
        code, err = cli(capsys, "reproduce", "--data", data, "-o", docs, *extra)
        assert code == 2 and "REPRODUCTION.md" in one_line(err)
    assert (docs / "REPRODUCTION.md").read_text() == "# my notes\n"
    assert not (docs / "reproduction").exists()
    (docs / "REPRODUCTION.md").unlink()
    (docs / "reproduction.html").write_text("<p>mine</p>")
    code, err = cli(capsys, "reproduce", "--data", data, "-o", docs, "--report", "--overwrite")
    assert code == 2 and "reproduction.html" in one_line(err)
    assert (docs / "reproduction.html").read_text() == "<p>mine</p>"
    (docs / "reproduction.html").unlink()
    (docs / "reproduction").mkdir()
    (docs / "reproduction" / "sst2_glue.json").write_text("{}")  # not listed in a manifest
    code, err = cli(capsys, "reproduce", "--data", data, "-o", docs, "--overwrite")
    assert code == 2 and "sst2_glue.json" in one_line(err)


def test_reproduce_pages_are_stamped(tmp_path):
    from posgeom.io._claims import stamp, stamped_kind

    page = stamp("# Reproduction\n\ntext\n", "reproduction")
    path = tmp_path / "REPRODUCTION.md"
    path.write_text(page)
    assert stamped_kind(path) == "reproduction"
    path.write_text(page.replace("text", "edited"))
    assert stamped_kind(path) is None


def test_overwrite_keeps_a_users_edit_of_a_results_file(runs, small_corpus, tmp_path, capsys):
    """Item 4: --overwrite deleted edits appended to table.md although the manifest's hash
    showed the change."""
    ra = _copy(runs, tmp_path, "rA")
    with open(ra / "table.md", "a") as fh:
        fh.write("\nmy conclusion\n")
    code, err = cli(capsys, "run", small_corpus, "-n", 12, "-d", 8, "-o", ra, "--overwrite")
    assert code == 2 and "table.md changed since" in one_line(err)
    assert (ra / "table.md").read_text().endswith("my conclusion\n")


def test_resumed_job_sees_a_same_size_same_mtime_edit(small_corpus, tmp_path, capsys):
    """Item 4: a job resumed after a same-size, same-mtime edit of the corpus mixed old and new
    data."""
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(small_corpus.read_bytes())
    job = tmp_path / "job"
    argv = ["count", corpus, "-n", 6, "--job-dir", job, "--shard-lines", 100]
    assert cli(capsys, *argv, "-o", tmp_path / "a.npz")[0] == 0
    st = corpus.stat()
    data = bytearray(corpus.read_bytes())
    data[:2] = b"zz"  # same size
    corpus.write_bytes(bytes(data))
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    code, err = cli(capsys, *argv, "-o", tmp_path / "b.npz")
    assert code == 2 and "--restart-job" in one_line(err)
    assert not (tmp_path / "b.npz").exists()


def test_symlinked_outputs(small_corpus, tmp_path, capsys):
    """Item 17: a dangling symlink as -o counted everything and then failed; a symlink to an
    empty folder ran the pipeline and then failed; --overwrite through a symlink left the old
    folder and a `.link_...old` symlink behind."""
    dangling = tmp_path / "dangling.npz"
    dangling.symlink_to(tmp_path / "nowhere" / "x.npz")
    code, err = cli(capsys, "count", small_corpus, "-n", 6, "-o", dangling)
    assert code == 2 and "dangling symbolic link" in one_line(err)
    empty = tmp_path / "empty"
    empty.mkdir()
    link = tmp_path / "link"
    link.symlink_to(empty)
    for extra in ([], ["--overwrite"]):
        assert cli(capsys, "run", small_corpus, "-n", 6, "-d", 4, "-o", link, *extra)[0] == 0
        assert link.is_symlink() and (empty / "summary.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.npz", "empty", "link"]
    assert temporaries(tmp_path) == []
    counts = tmp_path / "counts-link.npz"
    counts.symlink_to(empty / "counts.npz")
    assert cli(capsys, "count", small_corpus, "-n", 6, "-o", counts, "--overwrite")[0] == 0
    assert counts.is_symlink()


def test_missing_inputs_are_named_as_inputs(tmp_path, capsys):
    """Item 16 (and issue 16, item 6): `run nofile.txt` and `compare --counts nonexist.npz` said
    "cannot write ...; check the output path" about a missing input, and made the folder."""
    code, err = cli(capsys, "run", tmp_path / "nofile.txt", "-n", 4, "-o", tmp_path / "res" / "x")
    line = one_line(err)
    assert code == 2 and "does not exist" in line and "cannot write" not in line
    assert not (tmp_path / "res").exists()
    code, err = cli(capsys, "compare", "--counts", tmp_path / "nonexist.npz", "-o", tmp_path / "c")
    line = one_line(err)
    assert code == 2 and "nonexist.npz does not exist" in line and "output" not in line


def test_long_output_name_is_refused_before_the_work(small_corpus, tmp_path, capsys):
    """Item 16: a 230-character -o failed on the hidden temporary's name after counting."""
    out = tmp_path / ("a" * 226 + ".npz")
    code, err = cli(capsys, "count", small_corpus, "-n", 4, "-o", out)
    assert code == 2 and "at most 215" in one_line(err)
    with pytest.raises(PosgeomError, match="at most 215"):
        from posgeom.io.outputs import results_directory

        with results_directory(tmp_path / ("r" * 230)):
            pass
