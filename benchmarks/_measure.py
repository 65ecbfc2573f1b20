"""Run one measurement in a fresh process: wall time and peak resident memory above baseline.

The peak is read from the kernel's high-water mark (``VmHWM``), reset just before the measured
call (``/proc/self/clear_refs`` with ``5``), so it covers everything the call allocates: numpy,
scipy, LAPACK/BLAS work space, threads. Inputs are loaded before the reset and not counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _vm(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def measure_here(fn, *args, **kwargs) -> dict:
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
    """Run ``module.TASKS[task](**params)`` in a subprocess; returns its JSON or a timeout note."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import {module} as m; "
        f"print('@@' + json.dumps(m.run_task({task!r}, json.loads({json.dumps(params)!r}))))"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ.copy(),
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
