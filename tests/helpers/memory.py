"""Peak memory of a call or of a child process, for the tests that bound what code holds.

:func:`peak_allocation`: peak Python allocation of a call (tracemalloc). :func:`child_peak_mib`:
the kernel's high-water mark of resident memory (``VmHWM`` of ``/proc/self/status``, Linux only)
of a fresh Python process that runs ``code``: what a command really costs, native memory
(torch, the allocator) included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIB = 1 << 20
_REPORT = (
    "\nfor _line in open('/proc/self/status'):\n"
    "    if _line.startswith('VmHWM:'):\n"
    "        print('VmHWM', int(_line.split()[1]) / 1024)\n"
)


def peak_allocation(fn: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """(the exception ``fn()`` raised, or None; peak Python allocation in bytes while it ran)."""
    tracemalloc.start()
    try:
        fn()
        raised = None
    except BaseException as exc:  # returned to the test
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


def child_peak_mib(code: str, *, cwd: Path | None = None) -> float:
    """VmHWM (MiB) of a fresh ``python -c code`` process, read when ``code`` has run (it must
    not exit); the child imports posgeom from this checkout, offline."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    out = subprocess.run(
        [sys.executable, "-c", code + _REPORT],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    if out.returncode != 0:
        raise AssertionError(f"child failed: {out.stderr[-2000:]}")
    line = [s for s in out.stdout.splitlines() if s.startswith("VmHWM ")][-1]
    return float(line.split()[1])
