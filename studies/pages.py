"""Run a docs page's shell blocks as written: ``python -m studies.pages EXPERIMENTS.md``.

Every shell block of the page, in order, in one ``bash`` (variables carry over), in a fresh copy
of the checkout's tracked files beside ``../shared`` (as a fresh clone sees them), with this
interpreter's ``posgeom`` on the path and Hugging Face offline. ``pip install`` lines are left
out (``tests/project/test_readme.py`` checks that what they name is installed) and so is the
bare ``pytest`` of the install block. Each block is announced on stderr (``### block K at S s``).

The README and REPRODUCTION.md run this way in CI's end-to-end job
(``tests/project/test_readme.py::test_page_runs_as_written``). The study recipes of
:data:`STUDY_PAGES` take hours (24 + 24 training runs, the whole extension study, seven models
and MPNet's 404 MB of wheels): they are studies, run by hand with this module, not tests.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from studies._common import ROOT

#: the pages whose shell blocks are a study: page -> wall-time budget (s) on 2 busy cores
STUDY_PAGES = {
    "EXPERIMENTS.md": 4 * 3600,  # 24 + 24 training runs and two tracking runs
    "EXTENSION.md": 48 * 3600,  # the whole extension study
    "MODEL_ANALYSIS.md": 4 * 3600,  # seven models x corpora, MPNet's wheels
}
SHELL = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", flags=re.S)


def page_path(name: str) -> Path:
    """``README.md`` at the root, any other page under ``docs/``."""
    return ROOT / name if name == "README.md" else ROOT / "docs" / name


def shell_blocks(page: Path) -> list[str]:
    """The page's fenced ``bash``/``sh``/``shell`` blocks, in order."""
    return SHELL.findall(page.read_text())


def fresh_checkout(work: Path) -> Path:
    """The tracked files of this checkout, copied to ``work/repo``, beside a link to the shared
    data folder (``work/shared`` -> ``../shared``), as a fresh clone sees them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    repo = work / "repo"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    (work / "shared").symlink_to(ROOT.parent / "shared", target_is_directory=True)
    return repo


def page_script(page: Path) -> str:
    """The page's shell blocks as one script: pip lines checked (by the install test) instead of
    run, the bare ``pytest`` of the install block left to CI, each block announced."""
    parts = ["set -euo pipefail"]
    for k, block in enumerate(shell_blocks(page)):
        parts.append(f'echo "### block {k + 1} at $SECONDS s" >&2')
        for line in block.splitlines():
            if re.match(r"\s*pip install", line):
                line = ": checked by test_install_lines_name_extras_and_packages_that_are_installed"
            elif line.strip() == "pytest":
                line = ": the test command itself"
            parts.append(line)
    return "\n".join(parts) + "\n"


def run_page(page: Path, work: Path, budget: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``page``'s shell blocks in a fresh checkout under ``work`` (at most ``budget``
    seconds: ``subprocess.TimeoutExpired`` past it); the finished process and its wall time."""
    repo = fresh_checkout(work)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(repo / "src"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    start = time.monotonic()
    out = subprocess.run(
        ["bash", "-c", page_script(page)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=budget,
    )
    return out, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.pages", description=__doc__)
    parser.add_argument("page", choices=sorted(STUDY_PAGES), help="the docs page to run")
    parser.add_argument("--work", type=Path, help="folder of the fresh checkout (default: a temp)")
    args = parser.parse_args(argv)
    if not (ROOT / ".git").exists() or not (ROOT.parent / "shared" / "data").is_dir():
        print("studies.pages: needs a git checkout beside ../shared/data", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="posgeom-page-"))
    work.mkdir(parents=True, exist_ok=True)
    page = page_path(args.page)
    out, took = run_page(page, work, STUDY_PAGES[args.page])
    sys.stderr.write(out.stderr[-3000:])
    blocks = len(re.findall(r"### block \d+", out.stderr))
    print(f"{args.page}: {blocks} of {len(shell_blocks(page))} blocks in {took:.0f} s")
    return out.returncode


if __name__ == "__main__":
    raise SystemExit(main())
