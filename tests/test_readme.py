"""The README's Python quickstart runs as written, and the demo command works."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks()
    assert blocks, "the README lost its Python quickstart"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_readme_names_the_test_command_used_by_ci():
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pytest" in README.read_text() and "python -m pytest" in ci
    assert 'pip install "torch==2.13.0"' in README.read_text()


def test_demo_command_prints_the_table():
    out = subprocess.run(
        [sys.executable, "-m", "posgeom.cli.main", "-q", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "| mds |" in out.stdout and "| sinusoidal |" in out.stdout
    mds_row = next(line for line in out.stdout.splitlines() if line.startswith("| mds |"))
    assert float(mds_row.split("|")[2]) < 1e-12
