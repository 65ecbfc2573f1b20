"""How the benchmark scripts run: their folders, a bare-word command line, and one measurement in
this process or in a fresh one (wall time and peak resident memory above baseline).

The peak is read from the kernel's high-water mark (``VmHWM``), reset just before the measured
call (``/proc/self/clear_refs`` with ``5``), so it covers everything the call allocates: numpy,
scipy, LAPACK/BLAS work space, threads. Inputs are loaded before the reset and not counted.

Scripts run from the repository root as modules (``python -m benchmarks.bench_geometry``); a fresh
process (:func:`run_isolated`) imports its module the same way, from the root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: the repository root (the folder holding ``benchmarks/``, ``docs/`` and ``src/``)
ROOT = Path(__file__).resolve().parents[1]
#: recomputable inputs (count files, token matrices), never committed
CACHE = ROOT / "benchmarks" / ".cache"
#: the shared corpora (``$POSGEOM_DATA``, default ``<root>/../shared/data``)
DATA = Path(os.environ.get("POSGEOM_DATA", ROOT.parent / "shared" / "data"))


def names(
    doc: str | None,
    argv: Sequence[str],
    *,
    metavar: str = "NAME",
    help: str = "what to run (default: everything)",
    type: Callable[[str], Any] = str,
) -> list[Any]:
    """The positional arguments of ``argv`` (converted by ``type``) of a script that takes bare
    words; ``-h``/``--help`` print ``doc`` and exit 0 (never starting a run), an unknown option
    exits 2 with argparse's message."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", metavar=metavar, type=type, help=help)
    return list(parser.parse_args(list(argv)).names)


def _vm(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def measure_here(fn, *args, **kwargs) -> dict:
    """``fn(*args, **kwargs)`` timed in this process: ``{"seconds", "peak_bytes", "result"}``
    (``peak_bytes`` None where the high-water mark cannot be reset)."""
    base = _vm("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    seconds = time.perf_counter() - t
    peak = _vm("VmHWM") - base if reset else None
    return {"seconds": seconds, "peak_bytes": peak, "result": out}


def run_isolated(module: str, task: str, params: dict, timeout: float) -> dict:
    """Run ``module.run_task(task, params)`` in a fresh process started in the repository root
    (``module`` a dotted name such as ``"benchmarks.bench_geometry"``); its JSON, or a note
    saying it timed out or failed."""
    code = (
        f"import importlib, json; m = importlib.import_module({module!r}); "
        f"print('@@' + json.dumps(m.run_task({task!r}, json.loads({json.dumps(params)!r}))))"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ.copy(),
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": None, "peak_bytes": None, "note": f"stopped at the {timeout:.0f} s cap"}
    for line in proc.stdout.splitlines():
        if line.startswith("@@"):
            return json.loads(line[2:])
    return {
        "seconds": None,
        "peak_bytes": None,
        "note": "failed: " + proc.stderr.strip().splitlines()[-1][:200],
    }
