"""Without torch or transformers, the layers that need them say which extra to install.

Absence is simulated in a fresh interpreter by a ``sys.meta_path`` finder that refuses the
blocked packages (as if they were not installed), so the real import machinery runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

BLOCKER = textwrap.dedent(
    """
    import sys
    BLOCKED = set(sys.argv[1].split(","))

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    sys.argv = sys.argv[1:]
    """
)


def _run(blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code), blocked],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


IMPORT = """
from posgeom._errors import OptionalDependencyError
try:
    import {module}
except OptionalDependencyError as exc:
    print("ERROR", exc)
else:
    print("IMPORTED")
"""


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("posgeom.nn", "torch", "posgeom[torch]"),
        ("posgeom.models", "torch", "posgeom[torch]"),
        ("posgeom.models", "transformers", "posgeom[hf]"),
        ("posgeom.models.layerwise", "torch", "posgeom[torch]"),
    ],
)
def test_import_names_the_extra(module, blocked, extra):
    result = _run(blocked, IMPORT.format(module=module))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR"), result.stdout
    assert f"pip install '{extra}'" in lines[0]


def test_the_blocker_blocks_only_what_it_names():
    """The same code imports fine when nothing relevant is blocked (the test can fail)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    result = _run("no_such_package", IMPORT.format(module="posgeom.models"))
    assert result.stdout.strip() == "IMPORTED", result.stderr


def test_core_imports_without_torch_or_transformers():
    code = """
    import posgeom, posgeom.corpus, posgeom.geometry, posgeom.embed, posgeom.scores
    import posgeom.encodings, posgeom.pipeline.job, posgeom.pipeline.rows, posgeom._validation
    print("OK", "torch" in sys.modules, "transformers" in sys.modules)
    """
    result = _run("torch,transformers", code)
    assert result.stdout.strip() == "OK False False", result.stderr


@pytest.mark.parametrize(
    "command", [["extract", "some/model"], ["analyze-model", "m", "c", "-n", "4", "-o", "x"]]
)
def test_cli_without_torch_prints_one_line(command, tmp_path):
    code = """
    from posgeom.cli.main import main
    raise SystemExit(main(sys.argv[1:]))
    """
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c d e\n")
    args = [str(corpus) if a == "c" else str(tmp_path / "out") if a == "x" else a for a in command]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code), "torch", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "posgeom: error: 'torch' is needed for this feature but is not installed; install it "
        "with: pip install 'posgeom[torch]'"
    ]
