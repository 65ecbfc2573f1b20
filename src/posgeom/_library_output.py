"""What a library prints while posgeom calls it, held until the call has succeeded.

A failing library call becomes one posgeom error line; the library's own output about the same
failure (transformers' table of mismatched weights, distributed's tracebacks, a Rust panic
written to file descriptor 2) would otherwise reach the terminal before it. Both holders pass
the output on when the call succeeds and drop it when it raises (``replay=False``: always):

- :func:`held_logs`: records of the loggers under a name (``"distributed"``);
- :func:`held_stderr`: everything written to file descriptor 2, Python's or native code's.

:func:`quiet_library` drops everything a model or tokenizer load writes (unless posgeom's logger
is at DEBUG, ``posgeom -v``). Nothing stays changed after the block.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator

__all__ = ["held_logs", "held_stderr", "quiet_library"]

_FD_LOCK = threading.RLock()  # one holder of file descriptor 2 at a time


@contextlib.contextmanager
def held_logs(prefix: str, *, replay: bool = True) -> Iterator[list[logging.LogRecord]]:
    """Hold the records of the loggers named ``prefix`` or ``prefix.*`` (those that exist, and
    through the handlers of ``prefix`` itself those made during the block); yield the list
    (read it to explain a failure); on success they are handled as if never held (dropped when
    not ``replay``)."""
    names = [prefix, *(n for n in logging.root.manager.loggerDict if n.startswith(prefix + "."))]
    targets: list[logging.Logger | logging.Handler] = [logging.getLogger(n) for n in names]
    targets += logging.getLogger(prefix).handlers  # a library's own handler (propagate off)
    held: list[tuple[logging.Logger | logging.Handler, logging.LogRecord]] = []
    records: list[logging.LogRecord] = []

    def holder(target: logging.Logger | logging.Handler) -> Callable[[logging.LogRecord], bool]:
        def hold(record: logging.LogRecord) -> bool:  # a callable filter: record held, not passed
            held.append((target, record))
            records.append(record)
            return False

        return hold

    filters = [holder(target) for target in targets]
    for target, hold in zip(targets, filters, strict=True):
        target.addFilter(hold)
    try:
        yield records
    finally:
        for target, hold in zip(targets, filters, strict=True):
            target.removeFilter(hold)
    for target, record in held if replay else ():  # reached only when the block did not raise
        target.handle(record)


@contextlib.contextmanager
def held_stderr(*, replay: bool = True) -> Iterator[list[str]]:
    """Redirect file descriptor 2 to a temporary file for the block; yield a list that holds the
    captured text afterwards. On success the text is written to the real stderr (unless not
    ``replay``); when the block raises it is dropped. Without a usable descriptor 2 the block runs
    as it is."""
    captured: list[str] = []
    with _FD_LOCK:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):
            yield captured
            return
        with tempfile.TemporaryFile() as spool:
            os.dup2(spool.fileno(), 2)
            ok = False
            try:
                yield captured
                ok = True
            finally:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                spool.seek(0)
                text = spool.read().decode("utf-8", "replace")
                captured.append(text)
                if ok and text and replay:
                    os.write(2, text.encode("utf-8"))


@contextlib.contextmanager
def quiet_library(prefix: str = "transformers") -> Iterator[list[logging.LogRecord]]:
    """Nothing a library writes during the block reaches the terminal: the records of the
    ``prefix`` loggers are held and yielded (to explain a failure), ``sys.stderr`` (tqdm's bars)
    and descriptor 2 are redirected, warnings ignored; with posgeom's logger at DEBUG the output
    is passed on instead."""
    if logging.getLogger("posgeom").isEnabledFor(logging.DEBUG):
        with held_logs(prefix) as records:
            yield records
        return
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(held_stderr(replay=False))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        yield stack.enter_context(held_logs(prefix, replay=False))
