"""Counting on a Dask cluster: one task per shard, merged in shard order on the client.

The shards of :func:`posgeom.corpus.shards.plan_shards` are counted on workers by
:func:`posgeom.corpus.jobs.count_shard` and merged in shard-index order, whatever order the
workers finish in: the result equals a single-process ``count_corpus`` pass (:mod:`jobs`).
Workers load the tokenizer from its path or model name (readable on the workers, like the corpus
files); a word tokenizer fitted here travels as its vocabulary. With ``job_dir`` every finished
shard is recorded, so an interrupted or failed run resumes where it stopped.

Requires the ``dask`` extra (``dask.distributed``), imported only when a cluster is used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from posgeom._errors import PosgeomError, require
from posgeom._library_output import held_logs
from posgeom._validation import check_int
from posgeom.corpus import jobs
from posgeom.corpus._jobfiles import count_options
from posgeom.corpus.counting import PositionCounts
from posgeom.corpus.shards import Shard

__all__ = ["count_distributed"]

RETRIES = 2


def _check_workers(n_workers: Any, threads: Any) -> None:
    if n_workers is not None:
        check_int(n_workers, "n_workers", 1)
    check_int(threads, "threads_per_worker", 1)


def _probe(address: str, timeout: float) -> None:
    """Refuse, within ``timeout`` seconds, an address where no Dask scheduler answers: a Dask
    server speaks first, 8 bytes of little-endian frame size (a few hundred bytes)."""
    import socket
    import struct
    import time
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        port = parts.port
    except ValueError as exc:
        raise PosgeomError(
            f"scheduler address {address!r} is malformed ({exc}); pass tcp://HOST:PORT, such as "
            "tcp://127.0.0.1:8786, or 'local'"
        ) from None
    if parts.scheme != "tcp" or parts.hostname is None:
        return  # tls://, inproc://, ...: left to distributed
    deadline = time.monotonic() + timeout
    fail = f"cannot connect to the Dask scheduler at {address!r} within {timeout:g} s"
    fix = (
        "; check that the scheduler runs and the address is right, or pass scheduler='local' "
        "to start a local cluster"
    )
    try:
        with socket.create_connection((parts.hostname, port or 8786), timeout=timeout) as s:
            head = b""
            while len(head) < 8:
                s.settimeout(max(deadline - time.monotonic(), 0.01))
                block = s.recv(8 - len(head))
                if not block:
                    raise PosgeomError(f"{fail} (the connection was closed){fix}")
                head += block
    except TimeoutError:
        raise PosgeomError(f"{fail} (it accepted the connection but sent nothing){fix}") from None
    except OSError as exc:
        raise PosgeomError(f"{fail} ({exc.strerror or exc}){fix}") from None
    (size,) = struct.unpack("<Q", head)
    if not 0 < size < 1 << 20:
        raise PosgeomError(f"{fail}: the service there does not speak the Dask protocol{fix}")


def _worker_log_level() -> int:
    """Workers' own log lines only with --verbose (a DEBUG root logger); a task's failure
    reaches the client as its exception either way."""
    import logging

    return logging.WARNING if logging.getLogger().isEnabledFor(logging.DEBUG) else logging.CRITICAL


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while worker processes start (a child keeps an ignored SIGINT)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def _client(
    scheduler: Any,
    n_workers: int | None,
    threads_per_worker: int,
    connect_timeout: float,
    progress: bool,
) -> Iterator[Any]:
    """A ``distributed.Client``: given, connected to ``scheduler``, or on a new LocalCluster."""
    distributed = require("distributed", "dask")
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    if scheduler is None or scheduler == "local":
        with _sigint_ignored():  # worker processes inherit it: Ctrl-C stops only this process,
            cluster = distributed.LocalCluster(  # which then closes the cluster quietly
                n_workers=n_workers,
                processes=True,
                threads_per_worker=threads_per_worker,
                dashboard_address=None,
                silence_logs=_worker_log_level(),
            )
        jobs._say(f"started a local Dask cluster with {len(cluster.workers)} workers", progress)
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    if not isinstance(scheduler, str):
        raise PosgeomError(
            f"scheduler must be None, 'local', an address such as "
            f"'tcp://host:8786' or a distributed.Client, got {scheduler!r}"
        )
    _probe(scheduler, connect_timeout)
    try:  # distributed logs a garbled handshake with a traceback: held, the error line says it
        with held_logs("distributed"):
            client = distributed.Client(scheduler, timeout=f"{connect_timeout}s")
    except Exception as exc:  # OSError, TimeoutError, msgpack's errors, AssertionError, ...
        reason = f"{type(exc).__name__}: {exc}".rstrip(": .")
        raise PosgeomError(
            f"cannot connect to the Dask scheduler at {scheduler!r} within {connect_timeout:g} s "
            f"({reason}; is it a Dask scheduler?); check that the scheduler runs and the address "
            "is right, or pass scheduler='local' to start a local cluster"
        ) from exc
    try:
        yield client
    finally:
        client.close()


def count_distributed(
    sources: str | os.PathLike | Sequence[str | os.PathLike],
    tokenizer: Any = None,
    *,
    max_positions: int,
    scheduler: Any = None,
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    shard_lines: int | None = None,
    job_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool = True,
    connect_timeout: float = 5.0,
    **options: Any,
) -> PositionCounts:
    """Count ``sources`` on a Dask cluster, one task per shard; result as one ``count_corpus``.

    ``scheduler``: None (a LocalCluster of ``n_workers`` processes when ``n_workers > 1``, else
    the shards are counted in this process by :func:`~posgeom.corpus.jobs.count_resumable`),
    ``"local"`` (a LocalCluster, closed afterwards), an address ``"tcp://host:8786"`` (connected
    within ``connect_timeout`` seconds or a :class:`PosgeomError`), or a ``distributed.Client``.
    ``threads_per_worker`` applies to a LocalCluster. A failing shard is retried twice, then
    reported by name; finished shards stay recorded in ``job_dir``. Other arguments: those of
    :func:`~posgeom.corpus.jobs.count_resumable`.
    """
    _check_workers(n_workers, threads_per_worker)
    where = dict(job_dir=job_dir, shard_lines=shard_lines, overwrite=overwrite, progress=progress)
    if scheduler is None and (n_workers or 1) <= 1:
        return jobs.count_resumable(
            sources, tokenizer, max_positions=max_positions, **where, **options
        )
    job_options = count_options(max_positions=max_positions, **options)
    distributed = require("distributed", "dask")
    failed: list[tuple[Shard, BaseException]] = []
    with _client(scheduler, n_workers, threads_per_worker, connect_timeout, progress) as client:
        job = jobs.CountJob.prepare(sources, tokenizer, job_options, **where)
        todo = job.missing
        tok = (
            None
            if job.tokenizer is None or not todo
            else client.scatter([job.tokenizer], broadcast=True)[0]
        )
        futures = client.map(
            jobs.count_shard, todo, tokenizer=tok, options=job.options, retries=RETRIES, pure=False
        )
        shard_of = {f.key: s for f, s in zip(futures, todo, strict=True)}
        for future in distributed.as_completed(futures):
            shard = shard_of[future.key]
            try:
                counts = future.result()
            except Exception as exc:
                failed.append((shard, exc))
            else:
                job.add(shard, counts)
            future.release()
    if failed:
        failed.sort(key=lambda f: f[0].index)
        names = "; ".join(f"{s.name}: {exc}" for s, exc in failed[:5])
        more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
        done = len(job.shards) - len(failed)
        kept = (
            f"the {done} finished shards are recorded in {job.job_dir}: run again with "
            "the same arguments to count only the missing ones (if an input file must "
            "change, start over with overwrite=True)"
            if job.job_dir is not None
            else "pass job_dir= to keep finished shards across runs"
        )
        raise PosgeomError(
            f"{len(failed)} of {len(job.shards)} shards failed after {RETRIES} "
            f"retries: {names}{more}; {kept}"
        )
    return job.result()
