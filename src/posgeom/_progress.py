"""Progress bars: tqdm on a terminal, plain lines in a pipe or a log file (bottom layer).

tqdm redraws its bar with carriage returns, which a log file keeps as one endless line:
:func:`progress_bar` gives tqdm's bar only on a terminal, else a :class:`LineProgress` (one
complete line at most every ``interval`` seconds and one at the end), with the same interface.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from posgeom._errors import printable

__all__ = ["LineProgress", "progress_bar"]


class LineProgress:
    """A progress report in whole lines: ``desc: done[ of total] unit (t s)[, postfix]``.

    ``done`` counts the ``update`` increments (or the items iterated); a line is written when
    ``interval`` seconds have passed since the last one, and at ``close`` (when anything was done).
    """

    def __init__(
        self,
        iterable: Iterable[Any] | None = None,
        *,
        total: int | None = None,
        desc: str = "",
        unit: str = "it",
        disable: bool = False,
        stream: TextIO | None = None,
        interval: float = 30.0,
    ) -> None:
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.disable, self.interval = disable, float(interval)
        self.stream = stream
        self.n, self.postfix = 0, ""
        self.start = self.last = time.monotonic()
        self.closed = False

    def _line(self, now: float, final: bool) -> str:
        total = f" of {self.total:,}" if self.total is not None else ""
        when = f"in {now - self.start:.1f} s" if final else f"({now - self.start:.0f} s)"
        tail = f", {self.postfix}" if self.postfix else ""
        return f"{self.desc}: {self.n:,}{total} {self.unit} {when}{tail}"

    def _write(self, final: bool = False) -> None:
        now = time.monotonic()
        if self.disable or (not final and now - self.last < self.interval):
            return
        self.last = now
        stream = self.stream if self.stream is not None else sys.stderr
        print(printable(self._line(now, final)), file=stream, flush=True)  # a file name in desc

    def update(self, k: int = 1) -> None:
        self.n += int(k)
        self._write()

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())

    def close(self) -> None:
        if not self.closed and self.n:
            self._write(final=True)
        self.closed = True

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable if self.iterable is not None else ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    stream: TextIO | None = None,
    **options: Any,
) -> Any:
    """A tqdm bar when ``stream`` (default ``sys.stderr``) is a terminal, else a
    :class:`LineProgress`; ``options``: ``total``, ``desc``, ``unit``, ``disable`` (and, for tqdm
    only, ``leave``)."""
    out = stream if stream is not None else sys.stderr
    isatty = getattr(out, "isatty", None)
    if callable(isatty) and isatty():
        from tqdm.auto import tqdm

        return tqdm(iterable, file=out, **options)
    options.pop("leave", None)
    return LineProgress(iterable, stream=stream, **options)
