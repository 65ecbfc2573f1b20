"""What a library prints while posgeom calls it, held until the call has succeeded.

A failing library call becomes one posgeom error line; the library's own output about the same
failure (transformers' table of mismatched weights, distributed's "Failed to deserialize" with a
traceback, a Rust panic message written straight to file descriptor 2 by a tokenizer) would
otherwise reach the terminal before that line. Both holders here pass the output on unchanged when
the call succeeds and drop it when it raises (the error line says what went wrong):

- :func:`held_logs`: records of the loggers under a name (``"distributed"``);
- :func:`held_stderr`: everything written to file descriptor 2, Python's or native code's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

__all__ = ["held_logs", "held_stderr"]

_FD_LOCK = threading.RLock()  # one holder of file descriptor 2 at a time


@contextlib.contextmanager
def held_logs(prefix: str) -> Iterator[list[logging.LogRecord]]:
    """Hold the records of the loggers named ``prefix`` or ``prefix.*`` (those that exist, and
    through the handlers of ``prefix`` itself those made during the block); yield the list
    (read it to explain a failure); on success they are handled as if never held."""
    names = [prefix, *(n for n in logging.root.manager.loggerDict if n.startswith(prefix + "."))]
    targets: list[logging.Logger | logging.Handler] = [logging.getLogger(n) for n in names]
    targets += logging.getLogger(prefix).handlers  # a library's own handler (propagate off)
    held: list[tuple[logging.Logger | logging.Handler, logging.LogRecord]] = []
    records: list[logging.LogRecord] = []

    class Hold(logging.Filter):
        def __init__(self, target: logging.Logger | logging.Handler) -> None:
            super().__init__()
            self.target = target

        def filter(self, record: logging.LogRecord) -> bool:
            held.append((self.target, record))
            records.append(record)
            return False

    filters = [Hold(target) for target in targets]
    for target, hold in zip(targets, filters, strict=True):
        target.addFilter(hold)
    try:
        yield records
    finally:
        for target, hold in zip(targets, filters, strict=True):
            target.removeFilter(hold)
    for target, record in held:  # reached only when the block did not raise
        target.handle(record)


@contextlib.contextmanager
def held_stderr() -> Iterator[list[str]]:
    """Redirect file descriptor 2 to a temporary file for the block; yield a list that holds the
    captured text afterwards. On success the text is written to the real stderr; when the block
    raises it is dropped. Without a usable descriptor 2 the block runs as it is."""
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
                if ok and text:
                    os.write(2, text.encode("utf-8"))
