"""Issue 36, item 1: 10,000 generated manifests against a work folder beside a sentinel file and a
sentinel folder; nothing outside the folder changes, whatever the manifest says.

Each manifest mixes paths (``..`` chains, absolute paths, NUL and control characters, names
that cannot be encoded, over-long parts, paths through symbolic links the folder holds: to its
parent, to the sentinel folder, to the sentinel file), records (the sentinel's true size and
SHA-256, ``"was"`` records, ``{"symlink": ...}`` and ``{"folder": kind}`` records on what is not
a link or a folder, malformed ones) and nesting (a real sub-folder listed as a work folder with
a forged manifest of its own). Every one goes through the check and then, when it passes,
through the deletion itself, without the "unchanged since posgeom wrote it" guard (the guard
that forged records passed): the containment alone must hold. One in 20 goes through the whole
``WorkFolder.open(..., restart=True)``, one in 40 through a results folder's ``--overwrite``
commit; a handful through the CLI's commands that clear or resume. A refused manifest must
leave the folder itself untouched too (refused before anything is deleted); any other exception
than the one-line :class:`PosgeomError` fails the test.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from fault_helpers import cli, one_line

from posgeom._errors import PosgeomError
from posgeom.io._results import RESULTS_MANIFEST, _manifest, _remove_listed
from posgeom.io.outputs import results_directory
from posgeom.io.workfolders import WORK_KINDS, WorkFolder

MANIFESTS = 10_000


@pytest.fixture
def base(tmp_path):
    """A folder on a RAM filesystem when there is one (renames over a file are slow on ext4)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="posgeom-fuzz-", dir=shm))
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path


def _record(path: Path) -> dict:
    data = path.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _fingerprint(root: Path, skip: str | None = None) -> list:
    """Every entry under ``root`` (links not followed): its path, mode, inode, size and mtime,
    and a link's target (a deletion, a replacement or a write changes one of them)."""
    out, todo = [], [str(root)]
    while todo:
        here = todo.pop()
        with os.scandir(here) as entries:
            for e in entries:
                if skip is not None and here == str(root) and e.name == skip:
                    continue
                st = e.stat(follow_symlinks=False)
                link = os.readlink(e.path) if e.is_symlink() else None
                out.append((e.path, st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, link))
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
    return sorted(out)


def _contents(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class World:
    """The sentinel file and folder beside the work folder ``work/``, rebuilt for each manifest."""

    def __init__(self, base: Path) -> None:
        self.base, self.work = base, base / "work"
        (base / "sentinel.txt").write_text("the user's thesis\n")
        (base / "sentinel").mkdir()
        (base / "sentinel" / "keep.txt").write_text("the user's data\n")
        doc = {"kind": "posgeom-results", "content": "posgeom-count-job", "files": {}}
        doc["files"]["keep.txt"] = _record(base / "sentinel" / "keep.txt")
        (base / "sentinel" / RESULTS_MANIFEST).write_text(json.dumps(doc))
        self.outside = _fingerprint(base, skip="work")
        self.bytes = _contents(base)  # (before work/ exists)
        self.true = {
            "sentinel": _record(base / "sentinel.txt"),
            "keep": _record(base / "sentinel" / "keep.txt"),
            "own": {"size": 19, "sha256": hashlib.sha256(b"posgeom's own file\n").hexdigest()},
        }

    def build(self) -> None:
        if self.work.is_symlink() or self.work.is_file():
            self.work.unlink()
        shutil.rmtree(self.work, ignore_errors=True)
        (self.work / "nested").mkdir(parents=True)
        (self.work / "own.txt").write_text("posgeom's own file\n")
        (self.work / "nested" / "inner.txt").write_text("inner\n")
        (self.work / "link").symlink_to("..")
        (self.work / "abslink").symlink_to(self.base / "sentinel")
        (self.work / "flink").symlink_to(self.base / "sentinel.txt")

    def intact(self) -> bool:
        return _fingerprint(self.base, skip="work") == self.outside


PREFIXES = ["", "", "", "../", "../../", "/", "nested/", "nested/../", "nested/../../", "link/"]
PREFIXES += ["abslink/", "flink/", "./", "a//", "nested/./", "link/work/", "link/sentinel/"]
NAMES = ["sentinel.txt", "sentinel", "sentinel/keep.txt", f"sentinel/{RESULTS_MANIFEST}"]
NAMES += ["own.txt", "own.txt", "nested", "nested/inner.txt", "link", "abslink", "flink", "work"]
NAMES += ["work/own.txt", "missing.txt", "keep.txt", "x\x00y", "\x1b]0;pwned\x07", "a\nb"]
NAMES += ["tab\there", "\udcff", "\ud800", "é.txt", "n" * 300, RESULTS_MANIFEST, ".", "..", ""]
INSIDE = ["own.txt", "nested/inner.txt", "missing.txt", "nested", "link", "abslink", "flink"]
INSIDE += ["é.txt", "keep.txt", "sentinel.txt", "nested/deeper/x.txt"]


def _path(rng: random.Random, base: Path) -> str:
    prefix = rng.choice(PREFIXES)
    if prefix == "/":
        prefix = rng.choice([f"{base}/", f"{base}/work/../", "/"])
    return prefix + rng.choice(NAMES) + rng.choice(["", "", "", "/", "/..", "/x"])


def _info(rng: random.Random, world: World, plausible: bool = False) -> object:
    """A record: one of the forms posgeom writes (``plausible``: mostly), or a malformed one."""
    kind = rng.choice([*WORK_KINDS, "run", "x"])
    if plausible and rng.random() < 0.9:
        link = "symlink" if rng.random() < 0.5 else "folder"
        return rng.choice([world.true["sentinel"], world.true["keep"], {link: kind}])
    return rng.choice(
        [
            world.true["sentinel"],
            world.true["sentinel"],
            world.true["keep"],
            world.true["own"],
            {"symlink": rng.choice(["..", "x", str(world.base)])},
            {"folder": kind},
            {"folder": kind},
            {"size": 1, "sha256": "0" * 64, "was": world.true["sentinel"]},
            {**world.true["sentinel"], "was": {"size": 0}},
            {"size": True, "sha256": world.true["sentinel"]["sha256"]},
            {"size": -1, "sha256": "zz"},
            {**world.true["sentinel"], "extra": 1},
            {"folder": 3},
            None,
            1,
            "x",
            [],
        ]
    )


def _files(rng: random.Random, world: World) -> dict:
    """Paths of any kind; or (half the manifests) names inside the folder with any record,
    and now and then one path of any kind among them."""
    inside = rng.random() < 0.5
    files = {
        rng.choice(INSIDE) if inside else _path(rng, world.base): _info(rng, world, inside)
        for _ in range(rng.randint(1, 5))
    }
    if inside and rng.random() < 0.2:
        files[_path(rng, world.base)] = _info(rng, world)
    if rng.random() < 0.3:  # posgeom's own entries alongside
        files["own.txt"] = world.true["own"]
    if rng.random() < 0.3:
        files["nested"] = {"folder": rng.choice(WORK_KINDS)}
    return files


def _forge(rng: random.Random, world: World) -> str:
    """Write a generated manifest into ``work/`` (and often one into ``work/nested/``); return
    the kind it records."""
    kind = rng.choice(WORK_KINDS)
    for folder in [world.work] + ([world.work / "nested"] if rng.random() < 0.4 else []):
        doc = {"kind": "posgeom-results", "content": kind, "files": _files(rng, world)}
        if rng.random() < 0.03:
            doc = rng.choice([{"files": doc["files"]}, {**doc, "files": []}, []])
        (folder / RESULTS_MANIFEST).write_text(json.dumps(doc))
    return kind


def _apply(k: int, kind: str, world: World) -> None:
    """Check the manifest of ``work/`` and, when it passes, delete what it lists (one of the
    library's ways)."""
    if k % 40 == 39:  # a results folder replaced with --overwrite
        with results_directory(world.work, overwrite=True, content=kind) as tmp:
            (tmp / "new.txt").write_text("new\n")
        return
    if k % 20 == 19:  # a work folder restarted
        WorkFolder.open(world.work, kind=kind, restart=True).release()
        return
    if _manifest(world.work) is None:
        return
    if k % 2:
        WorkFolder(world.work, kind).clear()
    else:
        _remove_listed(world.work)


def test_item01_sentinel_survives_ten_thousand_manifests(base):
    _fuzz(base, MANIFESTS, seed=36)


@pytest.mark.e2e
def test_item01_sentinel_survives_a_hundred_thousand_manifests(base):
    _fuzz(base, 10 * MANIFESTS, seed=3636)


def _fuzz(base: Path, manifests: int, seed: int) -> None:
    world = World(base)
    rng = random.Random(seed)
    refused = passed = 0
    world.build()
    for k in range(manifests):
        (world.work / "nested" / RESULTS_MANIFEST).unlink(missing_ok=True)
        kind = _forge(rng, world)
        before = _fingerprint(world.work)
        try:
            _apply(k, kind, world)
            passed += 1
            world.build()  # (a refused manifest left the folder as it was: asserted below)
        except PosgeomError as exc:
            refused += 1
            assert "\n" not in str(exc) and ";" in str(exc), str(exc)
            assert _fingerprint(world.work) == before, (k, str(exc))  # nothing deleted first
        assert world.intact(), (k, (world.work / RESULTS_MANIFEST).read_text())
    assert refused > manifests // 3 and passed > manifests // 10, (refused, passed)
    assert all(p.read_bytes() == data for p, data in world.bytes.items())  # byte for byte


ATTACKS = [
    {"../sentinel.txt": "sentinel"},
    {"{base}/sentinel.txt": "sentinel"},
    {"link/sentinel.txt": "sentinel", "link": "symlink"},
    {"abslink/keep.txt": "keep", "abslink": "symlink"},
    {"../sentinel": "folder"},
    {"flink": "folder"},
]


def _forged_attack(world: World, attack: dict, kind: str) -> None:
    world.build()
    records = {
        "sentinel": world.true["sentinel"],
        "keep": world.true["keep"],
        "symlink": {"symlink": ".."},
        "folder": {"folder": kind},
    }
    files = {rel.format(base=world.base): records[what] for rel, what in attack.items()}
    doc = {"kind": "posgeom-results", "content": kind, "files": files}
    (world.work / RESULTS_MANIFEST).write_text(json.dumps(doc))


def test_item01_cli_commands_that_clear_refuse_forged_manifests(base, small_corpus, capsys):
    """``count`` resuming or with ``--restart-job``, ``run --overwrite``, ``train --overwrite``
    and ``experiment --overwrite`` on a forged folder (two attacks each): one line, exit 2,
    nothing outside changed."""
    world = World(base)
    order = ["--max-len", 8, "--order-samples", 64, "--eval-limit", 32, "--epochs", 1]
    commands = [
        ("posgeom-count-job", ["count", small_corpus, "-n", 6, "--job-dir"]),
        ("posgeom-count-job", ["count", small_corpus, "-n", 6, "--restart-job", "--job-dir"]),
        ("run", ["run", small_corpus, "-n", 6, "-d", 4, "--overwrite", "-o"]),
        ("train-run", ["train", "--task", "order", *order, "--overwrite", "-o"]),
        ("experiment", ["experiment", "order-necessity", *order, "--overwrite", "-o"]),
    ]
    for i, (kind, argv) in enumerate(commands):
        for attack in (ATTACKS[i], ATTACKS[(i + 3) % len(ATTACKS)]):
            _forged_attack(world, attack, kind)
            extra = ["-o", base / "c.npz"] if argv[0] == "count" else []
            code, err = cli(capsys, *argv, world.work, *extra)
            assert code == 2, err
            assert RESULTS_MANIFEST in one_line(err)
            assert world.intact() and not (base / "c.npz").exists()
