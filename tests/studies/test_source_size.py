"""studies.source_size: line kinds on a hand-counted module, folders of a hand-made package, and
the same package read back from a git revision."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from studies import source_size as ss

MODULE = '''"""Module docstring,
on two lines."""

import os  # a trailing comment keeps this line code

# a comment line
TEXT = """a multi-line string
that is not a docstring"""


class Thing:
    """Class docstring."""

    def method(self):
        """Method
        docstring."""

        return os.sep
'''


def test_line_kinds_of_a_hand_counted_module():
    # doc: 2 (module) + 1 (class) + 2 (method) = 5; comment: 1; blank: 6;
    # code: import, TEXT (2 lines), class, def, return = 6
    kinds = ss.line_kinds(MODULE)
    assert dict(kinds) == {"code": 6, "doc": 5, "comment": 1, "blank": 6}
    assert sum(kinds.values()) == len(MODULE.splitlines())


FILES = {
    "src/posgeom/__init__.py": '"""Root."""\n',
    "src/posgeom/_util.py": "X = 1\n\n# note\n",
    "src/posgeom/corpus/__init__.py": "",
    "src/posgeom/corpus/read/deep.py": 'def f():\n    """Doc."""\n    return 1\n',
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_folders_of_a_hand_made_package(tmp_path):
    _write(tmp_path, FILES)
    folders = ss.by_folder(ss.working_tree(tmp_path))
    assert set(folders) == {"(root)", "corpus"}
    assert dict(folders["(root)"]) == {"code": 1, "doc": 1, "comment": 1, "blank": 1, "modules": 2}
    # a subfolder counts in its top folder; an empty module is a module of no lines
    assert dict(folders["corpus"]) == {"code": 2, "doc": 1, "comment": 0, "blank": 0, "modules": 2}
    text = ss.table(folders)
    assert text.splitlines()[-1] == "| **total** | 7 | 3 | 2 | 1 | 1 | 4 |"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_git_revision_reads_as_it_was_committed(tmp_path):
    _write(tmp_path, FILES)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    (tmp_path / "src/posgeom/corpus/read/deep.py").write_text("def f():\n    return 1\n")
    base = ss.by_folder(ss.at_revision("HEAD", tmp_path))
    now = ss.by_folder(ss.working_tree(tmp_path))
    assert base["corpus"]["doc"] == 1 and now["corpus"]["doc"] == 0
    rows = ss.table(now, base).splitlines()
    assert "| corpus | 3 -> 2 | 2 -> 2 | 1 -> 0 | 0 -> 0 | 0 -> 0 | 2 -> 2 |" in rows


MOVED = (
    "FIRST_CONSTANT_OF_THE_BASE = 'written before the base, then moved'\n"
    "SECOND_CONSTANT_OF_THE_BASE = 'written before the base, then moved'\n"
)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_attribution_follows_moved_lines_and_sets_aside_listed_commits(tmp_path):
    def git(*args: str) -> str:
        run = subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    def commit(message: str) -> str:
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
        return git("rev-parse", "HEAD")

    git("init", "-q")
    _write(tmp_path, {"src/posgeom/a.py": "KEPT = 1\n" + MOVED})
    base = commit("base")
    _write(tmp_path, {"src/posgeom/feature.py": "def other_issue():\n    return 2\n"})
    feature = commit("another issue's feature")
    # the clean-up moves the two constants to their own module and adds one line there
    _write(tmp_path, {"src/posgeom/a.py": "KEPT = 1\n", "src/posgeom/moved.py": MOVED + "X = 3\n"})
    commit("clean-up")
    set_aside = tmp_path / "aside.txt"
    set_aside.write_text(f"# other work\n{feature} another issue's feature\n")
    assert ss.read_set_aside(set_aside) == {feature}
    got = ss.attribution(base, ss.read_set_aside(set_aside), tmp_path)
    assert got == {"before base": 3, "set aside": 2, "since base": 1}
