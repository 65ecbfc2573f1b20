"""Issue 36, item 1: a manifest is data to check, never a list of paths to delete.

A forged ``posgeom-manifest.json`` made ``WorkFolder.clear()`` and the results folders'
replacement delete files outside the folder (``../victim.txt``, absolute paths, ``{"folder":
kind}`` entries outside, a symlinked parent), and its "every listed file unchanged" guard passed
forged records (a ``{"symlink": ...}`` record on a regular file, a ``"was"`` record, the
victim's true size and SHA-256). ``WorkFolder.write_text('../x')`` and ``atomic()`` wrote outside
the folder. Each case: refused with one line naming the manifest and the entry, exit 2, before
anything is deleted or written; the victims outside survive byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from fault_helpers import cli, one_line

from posgeom._errors import PosgeomError
from posgeom.io._results import RESULTS_MANIFEST
from posgeom.io.outputs import results_directory
from posgeom.io.workfolders import WorkFolder


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _true_record(path: Path) -> dict:
    """The record posgeom would write for ``path``: its true size and SHA-256."""
    return {"size": path.stat().st_size, "sha256": _sha(path)}


def _forge(folder: Path, files: dict, content: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"kind": "posgeom-results", "content": content, "files": files}
    (folder / RESULTS_MANIFEST).write_text(json.dumps(doc))


@pytest.fixture
def victims(tmp_path):
    """A file, and a folder of posgeom's (a job folder of the user's) beside the folder under
    attack; returns (victim file, victim folder, snapshot function)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's thesis\n")
    job = tmp_path / "victimjob"
    job.mkdir()
    (job / "shard-00000.npz").write_bytes(b"counted for a week")
    _forge(job, {"shard-00000.npz": _true_record(job / "shard-00000.npz")}, "posgeom-count-job")

    def snapshot():
        return sorted(
            (p.relative_to(tmp_path).as_posix(), p.read_bytes() if p.is_file() else None)
            for p in tmp_path.rglob("*")
            if "attacked" not in p.relative_to(tmp_path).parts
        )

    return victim, job, snapshot


def _attacks(tmp_path: Path, victim: Path, job: Path) -> dict[str, dict]:
    """Forged entries (name -> the manifest's files) that aim outside the folder."""
    return {
        "dotdot": {"../victim.txt": _true_record(victim)},
        "absolute": {str(victim): _true_record(victim)},
        "nested dotdot": {"a/../../victim.txt": _true_record(victim)},
        "symlink record": {"../victim.txt": {"symlink": "x"}},
        "was record": {
            "../victim.txt": {"size": 1, "sha256": "0" * 64, "was": _true_record(victim)}
        },
        "folder outside": {"../victimjob": {"folder": "posgeom-count-job"}},
        "absolute folder": {str(job): {"folder": "posgeom-count-job"}},
        "nul": {"victim.txt\x00": _true_record(victim)},
        "control": {"\x1b[2Jvictim.txt": _true_record(victim)},
    }


@pytest.mark.parametrize(
    "attack",
    [
        "dotdot",
        "absolute",
        "nested dotdot",
        "symlink record",
        "was record",
        "folder outside",
        "absolute folder",
        "nul",
        "control",
    ],
)
def test_item01_restart_of_a_forged_work_folder_deletes_nothing(tmp_path, victims, attack):
    victim, job, snapshot = victims
    before = snapshot()
    folder = tmp_path / "attacked"
    _forge(folder, _attacks(tmp_path, victim, job)[attack], "posgeom-count-job")
    with pytest.raises(PosgeomError) as err:
        WorkFolder.open(folder, kind="posgeom-count-job", restart=True)
    line = str(err.value)
    assert "\n" not in line and RESULTS_MANIFEST in line and ";" in line, line
    assert snapshot() == before


@pytest.mark.parametrize("attack", ["dotdot", "absolute", "symlink record", "folder outside"])
def test_item01_replacing_a_forged_results_folder_deletes_nothing(tmp_path, victims, attack):
    victim, job, snapshot = victims
    before = snapshot()
    folder = tmp_path / "attacked"
    _forge(folder, _attacks(tmp_path, victim, job)[attack], "run")
    with pytest.raises(PosgeomError, match=r"posgeom-manifest\.json"):
        with results_directory(folder, overwrite=True, content="run") as tmp:
            (tmp / "summary.json").write_text("{}\n")
    assert snapshot() == before
    assert not (folder / "summary.json").exists()


def test_item01_symlinked_parent_is_not_followed(tmp_path, victims):
    """``sub -> ..`` listed as a symlink, and ``sub/victim.txt`` with the victim's record: the
    deletion went through the link."""
    victim, _job, snapshot = victims
    before = snapshot()
    for content, open_ in (
        ("posgeom-count-job", lambda f: WorkFolder.open(f, kind="posgeom-count-job", restart=True)),
        ("run", lambda f: results_directory(f, overwrite=True, content="run").__enter__()),
    ):
        folder = tmp_path / "attacked"
        files = {"sub": {"symlink": ".."}, "sub/victim.txt": _true_record(victim)}
        _forge(folder, files, content)
        (folder / "sub").symlink_to("..")
        with pytest.raises(PosgeomError, match="symbolic link"):
            open_(folder)
        assert snapshot() == before
        (folder / "sub").unlink()


def test_item01_records_must_match_what_stands_there(tmp_path):
    """Inside the folder too: a symlink record on a regular file, a folder record on a file or a
    symlinked folder, are refused (the guard passed them)."""
    folder = tmp_path / "attacked"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("keep\n")
    (folder / "linked").symlink_to(tmp_path / "elsewhere")
    for files in (
        {"notes.txt": {"symlink": "x"}},
        {"notes.txt": {"folder": "posgeom-count-job"}},
        {"linked": {"folder": "posgeom-count-job"}},
        {"notes.txt": "not a record"},
        {"notes.txt": {"size": "7", "sha256": _sha(folder / "notes.txt")}},
    ):
        _forge(
            folder,
            {"linked": {"symlink": str(tmp_path / "elsewhere")}, **files},
            "posgeom-count-job",
        )
        with pytest.raises(PosgeomError, match=r"posgeom-manifest\.json"):
            WorkFolder.open(folder, kind="posgeom-count-job", restart=True)
        assert (folder / "notes.txt").read_text() == "mine\n"
        assert (tmp_path / "elsewhere" / "keep.txt").read_text() == "keep\n"


def test_item01_nested_folder_manifest_is_checked_before_anything_is_deleted(tmp_path, victims):
    """A real sub-folder listed as ``{"folder": ...}`` whose own manifest aims outside: nothing
    is deleted, not even the parent's own listed files."""
    victim, _job, snapshot = victims
    folder = tmp_path / "attacked"
    (folder / "runs").mkdir(parents=True)
    (folder / "results.json").write_text("{}\n")
    _forge(folder / "runs" / "a", {"../../../victim.txt": _true_record(victim)}, "train-run")
    files = {
        "results.json": _true_record(folder / "results.json"),
        "runs/a": {"folder": "train-run"},
    }
    _forge(folder, files, "experiment")
    before = snapshot()
    with pytest.raises(PosgeomError, match=r"victim\.txt"):
        WorkFolder.open(folder, kind="experiment", restart=True)
    assert snapshot() == before and (folder / "results.json").exists()


ABSOLUTE = os.path.join(os.sep, "tmp", "x.txt")  # built: no absolute path in a committed file


@pytest.mark.parametrize("rel", ["../x.txt", "a/../../x.txt", ABSOLUTE, "x\x00y", "\x1b]0;x"])
def test_item01_work_folder_writes_stay_inside(tmp_path, rel):
    folder = WorkFolder.open(tmp_path / "work", kind="posgeom-count-job")
    rel = rel.replace("/tmp", str(tmp_path)) if rel.startswith("/") else rel
    for write in (
        lambda: folder.write_text(rel, "x"),
        lambda: folder.write_json(rel, {}),
        lambda: folder.atomic(rel).__enter__(),
        lambda: folder.sub(rel, "train-run"),
        lambda: folder.remove(rel),
    ):
        with pytest.raises(PosgeomError, match="inside"):
            write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert [p.name for p in (tmp_path / "work").iterdir()] == [RESULTS_MANIFEST]


def test_item01_work_folder_does_not_write_through_a_symlinked_folder(tmp_path):
    folder = WorkFolder.open(tmp_path / "work", kind="posgeom-count-job")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "work" / "sub").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PosgeomError, match="symbolic link"):
        folder.write_text("sub/x.txt", "x")
    assert list((tmp_path / "elsewhere").iterdir()) == []


# ----------------------------------------------------------------------------- the CLI
def test_item01_count_restart_job_refuses_a_forged_job(small_corpus, tmp_path, victims, capsys):
    victim, _job, snapshot = victims
    before = snapshot()
    folder = tmp_path / "attacked"
    _forge(folder, {"../victim.txt": _true_record(victim)}, "posgeom-count-job")
    argv = ["count", small_corpus, "-n", 6, "--job-dir", folder, "--restart-job"]
    code, err = cli(capsys, *argv, "-o", tmp_path / "c.npz")
    line = one_line(err)
    assert code == 2 and "../victim.txt" in line and RESULTS_MANIFEST in line, line
    assert snapshot() == before and not (tmp_path / "c.npz").exists()


def test_item01_run_overwrite_refuses_a_forged_results_folder(
    small_corpus, tmp_path, victims, capsys
):
    victim, _job, snapshot = victims
    before = snapshot()
    folder = tmp_path / "attacked"
    _forge(folder, {str(victim): _true_record(victim)}, "run")
    code, err = cli(capsys, "run", small_corpus, "-n", 6, "-d", 4, "-o", folder, "--overwrite")
    line = one_line(err)
    assert code == 2 and "is an absolute path" in line and RESULTS_MANIFEST in line, line
    assert snapshot() == before and not (folder / "summary.json").exists()
    assert os.path.exists(victim)


def test_item01_restart_checks_the_files_of_nested_folders_too(tmp_path):
    """An experiment's restart discards its runs: a run's file changed since posgeom wrote it (or
    one it does not list) is refused first, as in the experiment's own files."""
    folder = tmp_path / "exp"
    run = folder / "runs" / "a"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}\n")
    _forge(run, {"config.json": _true_record(run / "config.json")}, "train-run")
    _forge(folder, {"runs/a": {"folder": "train-run"}}, "experiment")
    (run / "config.json").write_text('{"edited": "by hand"}\n')
    with pytest.raises(PosgeomError, match="changed since posgeom wrote it"):
        WorkFolder.open(folder, kind="experiment", restart=True)
    assert (run / "config.json").read_text() == '{"edited": "by hand"}\n'
    (run / "config.json").write_text("{}\n")
    (run / "notes.txt").write_text("mine\n")
    with pytest.raises(PosgeomError, match=r"notes\.txt"):
        WorkFolder.open(folder, kind="experiment", restart=True)
    (run / "notes.txt").unlink()
    with WorkFolder.open(folder, kind="experiment", restart=True) as again:
        assert again.listed_files() == [] and not run.exists()


def test_item01_a_sub_folder_is_never_a_symbolic_link(tmp_path):
    """An experiment's run folder planted as a link to a folder outside: training there would
    write outside the experiment's folder."""
    folder = WorkFolder.open(tmp_path / "exp", kind="experiment")
    (tmp_path / "outside").mkdir()
    (tmp_path / "exp" / "runs").mkdir()
    (tmp_path / "exp" / "runs" / "a").symlink_to(tmp_path / "outside")
    with pytest.raises(PosgeomError, match="symbolic link"):
        folder.sub("runs/a", "train-run")
    assert list((tmp_path / "outside").iterdir()) == []
    assert "runs/a" not in json.loads((tmp_path / "exp" / RESULTS_MANIFEST).read_text())["files"]


def test_item01_report_overwrite_refuses_a_forged_figures_folder(
    small_corpus, tmp_path, victims, capsys
):
    """``report --overwrite`` replaces the page's ``<stem>_figures/`` folder: a forged one
    listing the victim is refused before the page or a figure is made."""
    victim, _job, snapshot = victims
    run = tmp_path / "attacked" / "run"
    assert cli(capsys, "run", small_corpus, "-n", 6, "-d", 4, "-o", run)[0] == 0
    figures = tmp_path / "attacked" / "page_figures"
    _forge(figures, {"../../victim.txt": _true_record(victim)}, "figures")
    before = snapshot()
    code, err = cli(capsys, "report", run, "-o", tmp_path / "attacked" / "page.html", "--overwrite")
    line = one_line(err)
    assert code == 2 and "../../victim.txt" in line, line
    assert snapshot() == before and not (tmp_path / "attacked" / "page.html").exists()
