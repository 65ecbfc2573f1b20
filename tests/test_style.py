"""The design guards that run with the tests: ruff's lint (complexity <= 15 included, from
pyproject.toml) and ruff's formatter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ["src", "tests", "benchmarks"]


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
