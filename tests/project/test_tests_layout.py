"""The tests are laid out like the package: ``tests/<subpackage>/test_<module or topic>.py``.

The folders a test may sit in are derived from the package (its subpackages, read with
``pkgutil``) plus the folders for what is not a subpackage: ``project`` (the repository's own
rules), ``faults`` (the fault sweeps across the package), ``studies`` (the research code outside
the package) and ``helpers`` (helpers shared by folders, no tests). Basenames are unique across
the tree: pytest imports each test file by its basename (no ``__init__.py``, prepend import mode)."""

from __future__ import annotations

import pkgutil
from collections import Counter
from pathlib import Path

import posgeom

TESTS = Path(__file__).resolve().parents[1]
NOT_SUBPACKAGES = {"project", "faults", "studies", "helpers"}


def _subpackages() -> set[str]:
    return {info.name for info in pkgutil.iter_modules(posgeom.__path__) if info.ispkg}


def layout_problems(files: list[str], subpackages: set[str]) -> list[str]:
    """What breaks the layout, for test files given relative to ``tests/``."""
    allowed = subpackages | NOT_SUBPACKAGES
    problems = []
    for name in sorted(files):
        parts = Path(name).parts
        if len(parts) == 1:
            problems.append(f"{name}: at the top of tests/, move it to tests/<subpackage>/")
        elif parts[0] not in allowed:
            problems.append(f"{name}: {parts[0]}/ is not a subpackage of posgeom")
        elif parts[0] == "helpers":
            problems.append(f"{name}: tests/helpers/ holds helpers, not tests")
    twice = [b for b, k in Counter(Path(n).name for n in files).items() if k > 1]
    problems += [f"{b}: the basename is used twice (pytest imports by basename)" for b in twice]
    return problems


def test_every_test_file_sits_in_its_subpackages_folder():
    files = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")]
    assert "project/test_tests_layout.py" in files and len(files) > 50
    assert {"geometry", "corpus", "scores"} <= _subpackages()
    problems = layout_problems(files, _subpackages())
    assert not problems, "\n".join(problems)


def test_the_layout_rule_refuses_what_it_must():
    subpackages = {"geometry", "scores"}
    assert layout_problems(["geometry/test_gram.py", "project/test_style.py"], subpackages) == []
    assert layout_problems(["test_gram.py"], subpackages) == [
        "test_gram.py: at the top of tests/, move it to tests/<subpackage>/"
    ]
    assert layout_problems(["geometri/test_gram.py"], subpackages) == [
        "geometri/test_gram.py: geometri/ is not a subpackage of posgeom"
    ]
    assert layout_problems(["helpers/test_mds.py"], subpackages) == [
        "helpers/test_mds.py: tests/helpers/ holds helpers, not tests"
    ]
    assert layout_problems(["geometry/test_x.py", "scores/test_x.py"], subpackages) == [
        "test_x.py: the basename is used twice (pytest imports by basename)"
    ]
