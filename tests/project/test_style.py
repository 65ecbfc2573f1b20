"""The design guards that run with the tests: ruff's lint (complexity <= 15 included, from
pyproject.toml), ruff's formatter, and the size of the package's modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ["src", "tests", "benchmarks", "studies"]
MAX_MODULE_LINES = 400


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (it is in the test extra)")
    return subprocess.run([exe, *args, *TREES], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    out = _ruff("check", "--output-format", "concise")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_clean():
    out = _ruff("format", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_module_is_small():
    sizes = {
        str(p.relative_to(ROOT)): sum(1 for _ in p.open(encoding="utf-8"))
        for p in (ROOT / "src").rglob("*.py")
    }
    large = {k: v for k, v in sizes.items() if v > MAX_MODULE_LINES}
    assert not large, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {large}"
