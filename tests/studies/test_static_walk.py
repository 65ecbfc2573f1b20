"""studies.static_walk: the static walk of one parameter, on a hand-made package whose journey is
known by reading it, and on posgeom's own ``pipeline/job.py:analyze:counts``."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies import static_walk as sw

FILES = {
    "__init__.py": "",
    "_util.py": "def check(x):\n    return x\n",
    "corpus/__init__.py": "from .read import load\n",
    "corpus/read.py": "def load(path):\n    return path\n",
    "geometry/__init__.py": "",
    "geometry/dist.py": (
        "from .._util import check\n\n\n"
        "class Dist:\n"
        "    def __init__(self, counts):\n"
        "        self.c = check(counts)\n\n"
        "    def squares(self, k):\n"
        "        return k\n"
    ),
    "pipeline/__init__.py": "",
    "pipeline/job.py": (
        "from .. import _util\n"
        "from ..corpus import load\n"
        "from ..geometry.dist import Dist\n\n\n"
        "def analyze(counts, *, seed=0):\n"
        "    c = load(counts)\n"
        "    d = Dist(c)\n"
        "    again = _stage(data=d)\n"
        "    _util.check(seed)\n"
        "    return again\n\n\n"
        "def _stage(data):\n"
        "    return data.squares(data)\n"
    ),
}


def _package(root: Path, extra: dict[str, str] | None = None) -> dict[str, sw.Module]:
    for name, text in {**FILES, **(extra or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return sw.read_package(root)


def test_a_hand_made_journey(tmp_path):
    run = sw.walk("pipeline/job.py:analyze:counts", _package(tmp_path))
    journey = [(fn.module, fn.qualname, name) for fn, name in run.entries]
    # analyze passes counts to load (through corpus/__init__'s re-export), the loaded value to
    # Dist (its __init__, which hands it to the root helper), then Dist to _stage by keyword,
    # which calls the one method named squares; seed is another parameter: not followed.
    assert journey == [
        ("pipeline.job", "analyze", "counts"),
        ("corpus.read", "load", "path"),
        ("geometry.dist", "Dist.__init__", "counts"),
        ("_util", "check", "x"),
        ("pipeline.job", "_stage", "data"),
        ("geometry.dist", "Dist.squares", "k"),
    ]
    # folders without the root helpers: pipeline corpus geometry pipeline geometry; floors
    # corpus < geometry < pipeline, so corpus -> geometry and geometry -> pipeline climb
    assert run.folders() == ["pipeline", "corpus", "geometry", "pipeline", "geometry"]
    assert run.figures() == {
        "moves": 4,
        "climbs": 2,
        "re-entries": 2,
        "rooms": 4,
        "folders": 3,
        "functions": 6,
        "open doors": 0,
    }


def test_a_method_name_two_classes_define_is_an_open_door(tmp_path):
    other = "class Other:\n    def squares(self, k):\n        return k\n"
    run = sw.walk("pipeline/job.py:analyze:counts", _package(tmp_path, {"corpus/other.py": other}))
    assert [fn.qualname for fn, _ in run.entries][-1] == "_stage"
    assert run.open_doors == {"squares"}


def test_carriers_follow_changes_of_form_to_a_fixpoint(tmp_path):
    body = "def f(a, b):\n    y = z\n    z = g(a)\n    w = b\n    return y\n"
    mods = _package(tmp_path, {"corpus/forms.py": body})
    fn = mods["corpus.forms"].functions["f"]
    assert sw.carriers(fn, "a") == {"a", "z", "y"}
    assert sw.carriers(fn, "b") == {"b", "w"}


def test_an_unknown_parameter_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no parameter 'x'"):
        sw.walk("pipeline/job.py:analyze:x", _package(tmp_path))


def test_posgeoms_own_walk_reaches_the_stages():
    run = sw.walk("pipeline/job.py:analyze:counts")
    assert run.entries[0][0].qualname == "analyze"
    # every entry binds a real parameter of the function it enters
    assert all(name in fn.params for fn, name in run.entries)
    assert {"geometry", "estimators", "embed", "scores"} <= set(run.folders())
    figures = run.figures()
    assert 0 < figures["climbs"] <= figures["moves"]
