"""Peak Python allocation of a call (tracemalloc), for the tests that bound what a reader holds."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

MIB = 1 << 20


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
