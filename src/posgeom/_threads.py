"""BLAS thread control for solvers that make many small BLAS calls.

ARPACK's Lanczos iterations call BLAS level 2 on ``n x ncv`` blocks thousands of times; a
multi-threaded BLAS synchronises its threads on every call, which costs more than it gains (and
collapses when the cores are shared: measured 4.6 s with one BLAS thread against 32 s with the
default on a loaded 2-core machine, n = 8192). posgeom parallelises the sparse products itself, so
the solver runs BLAS on one thread. Uses ``threadpoolctl`` when it is installed (it comes with
scikit-learn and the ``posgeom[all]`` extra); without it, BLAS keeps its default.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def blas_threads(limit: int = 1) -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield
