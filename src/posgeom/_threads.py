"""BLAS thread control for solvers that make many small BLAS calls.

ARPACK's Lanczos iterations call BLAS level 2 on ``n x ncv`` blocks thousands of times; a
multi-threaded BLAS synchronises its threads on every call, which costs more than it gains
(4.6 s with one BLAS thread against 32 s on a loaded 2-core machine, n = 8192). The solver runs
BLAS on one thread (``threadpoolctl``, when installed); :class:`Background` runs one long stage
on the second core beside the others.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def blas_threads(limit: int = 1) -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield


class Background:
    """``fn()`` run on a daemon thread while the caller goes on; :meth:`result` waits for it and
    returns its value or raises its exception. ``inline``: ``fn()`` runs here and now instead."""

    def __init__(self, fn: Callable[[], Any], *, name: str, inline: bool = False) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if inline:
            self._run(fn)
            return
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
