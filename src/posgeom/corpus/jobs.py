"""Sharded, resumable counting: a corpus cut into shards, each counted and recorded on its own.

**Shards** are planned by :mod:`posgeom.corpus.shards`; every shard is counted with
``count_corpus(..., allow_empty=True)`` (a shard without a counted sequence gives zero counts).
Progress goes to the ``posgeom.corpus.jobs`` logger (INFO with ``progress=True``, else DEBUG).

**Counts add up.** For shards ``S_1 .. S_K`` of a corpus, ``C = sum_k C(S_k)`` entry by entry,
and so do ``totals``, ``n_sequences`` and ``n_tokens``: merging the shard counts in shard-index
order is exactly the one-pass count of the whole corpus, fingerprint included.
``max_sequences`` and ``limit`` are global and are refused here.

**Job folder** (``job_dir``): a :class:`posgeom.io.workfolders.WorkFolder` (``overwrite``
deletes only the files the job wrote)::

    manifest.json            arguments (sources with size/mtime, tokenizer identity, count options,
                             shard_lines) and the shard plan; written once, atomically
    tokenizer.json           the word vocabulary fitted by the job (tokenizer="word" only)
    shard-00012.npz          counts of shard 12 (a PositionCounts artifact, written atomically)
    counts.npz               the merged counts, written when every shard is done

Run again with the same arguments, a job loads the recorded shards and counts only the missing
ones; with different arguments it refuses and names the argument that differs.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from posgeom._errors import ArtifactError, PosgeomError
from posgeom.corpus._jobfiles import (
    JOB_KIND,
    MANIFEST,
    canonical,
    compare,
    count_options,
    file_state,
    manifest_record,
    read_manifest,
    shard_kwargs,
    tokenizer_record,
    word_doc,
    worker_tokenizer,
)
from posgeom.corpus._jobplan import check_plan, plan_sha256, shard_provenance, shard_source_problem
from posgeom.corpus.counting import PositionCounts, count_corpus
from posgeom.corpus.options import CountOptions
from posgeom.corpus.readers import read_texts
from posgeom.corpus.shards import (
    Shard,
    check_shard_lines,
    plan_shards,
    shard_format,
    shard_texts,
    source_paths,
)
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.io.jsonfiles import json_text
from posgeom.io.workfolders import WorkFolder

__all__ = [
    "CountJob",
    "count_resumable",
    "count_shard",
]

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- counting a shard
def count_shard(
    shard: Shard, tokenizer: tuple[str, str] | None, options: CountOptions
) -> PositionCounts:
    """Count one shard (runs in the worker); a shard without a counted sequence gives zero
    counts (``count_corpus(..., allow_empty=True)``), not an error."""
    tok = worker_tokenizer(tokenizer)
    source: Any = (
        shard.path
        if shard.start is None
        else shard_texts(shard, options.text_column, **options.decoding())
    )
    return count_corpus(
        source, tok, progress=False, allow_empty=True, **shard_kwargs(options, shard)
    )


# ----------------------------------------------------------------------------- the job
def _say(message: str, progress: bool) -> None:
    """A progress line: logged at INFO with ``progress``, else at DEBUG (never printed)."""
    log.log(logging.INFO if progress else logging.DEBUG, message)


def _fit_word(tok: Any, paths: list[Path], fmts: list[str], options: CountOptions) -> None:
    how = {"text_column": options.text_column, "split": options.split, **options.decoding()}
    tok.fit(
        chain.from_iterable(
            read_texts(p, format=f, **how) for p, f in zip(paths, fmts, strict=True)
        )
    )


def _start(
    jd: WorkFolder | None, args: dict[str, Any], shards: list[Shard], fitted: bool, tok: Any
) -> str:
    """A new job in the (cleared) work folder ``jd``: write the fitted word tokenizer and the
    manifest (with the plan's checksum); returns that checksum."""
    records = [asdict(s) for s in shards]
    checksum = plan_sha256(records)
    if jd is not None:
        jd.clear()  # files of a job killed before it wrote its manifest
        if fitted:
            with jd.atomic("tokenizer.json") as tmp:
                tok.save(tmp)
        doc = {
            "kind": JOB_KIND,
            "format_version": 2,
            "arguments": args,
            "tokenizer_identity": None if tok is None else tok.identity,
            "shards": records,
            "plan_sha256": checksum,
        }
        jd.write_text(MANIFEST, json_text(doc, indent=1, sort_keys=True) + "\n")
    return checksum


@dataclass
class CountJob:
    """A planned counting job: its shards, how workers load the tokenizer, the count options, the
    shards already done, and the running merge (folded in shard-index order)."""

    shards: list[Shard]
    tokenizer: tuple[str, str] | None
    options: CountOptions
    job_dir: Path | None = None
    progress: bool = True
    plan: str = ""  # the plan's checksum, recorded in every shard file
    folder: WorkFolder | None = field(default=None, repr=False)
    loaded: int = 0
    counted: int = 0
    _pending: dict[int, PositionCounts] = field(default_factory=dict, repr=False)
    _acc: PositionCounts | None = field(default=None, repr=False)
    _next: int = 0
    _done: set[int] = field(default_factory=set, repr=False)

    @classmethod
    def prepare(
        cls,
        sources: Any,
        tokenizer: Any = None,
        options: CountOptions | None = None,
        *,
        job_dir: str | os.PathLike | None = None,
        shard_lines: int | None = None,
        overwrite: bool = False,
        progress: bool = True,
    ) -> CountJob:
        """Check the arguments, plan the shards (or read the plan of ``job_dir``) and load the
        shards recorded there; arguments as in :func:`count_resumable`."""
        if not isinstance(options, CountOptions):
            raise PosgeomError("pass the count options as CountOptions (see count_options)")
        check_shard_lines(shard_lines)
        paths = source_paths(sources)
        fmts = [shard_format(p, options.format) for p in paths]
        if tokenizer is None and any(f not in ("npy", "npz", "bin") for f in fmts):
            raise PosgeomError(
                "a text corpus needs a tokenizer: pass a tokenizer.json, a folder, "
                "'word', or a transformers model name"
            )
        tok_record, tok, spec = tokenizer_record(tokenizer)
        args = canonical(
            {
                "sources": [
                    {"path": str(p), "format": f, **file_state(p)}
                    for p, f in zip(paths, fmts, strict=True)
                ],
                "tokenizer": tok_record,
                "options": manifest_record(options),
                "shard_lines": shard_lines,
            }
        )
        folder = None
        if job_dir is not None:
            folder = WorkFolder.open(
                Path(job_dir).expanduser(),
                kind=JOB_KIND,
                inputs=[*paths, *_tokenizer_inputs(tokenizer)],
                restart=overwrite,
                option="job folder",
                self_checked=True,  # every shard and the plan verify themselves on a resume
            )
        jd = None if folder is None else folder.path
        if folder is not None and folder.listed(MANIFEST):  # resume
            manifest = read_manifest(jd)
            compare(jd, manifest.get("arguments", {}), args)
            shards, plan = check_plan(jd, manifest, [str(p) for p in paths])
            if "fit" in tok_record:
                tok = WordLevelTokenizer.load(jd / "tokenizer.json")
                tok.name = "word"
        else:
            shards = plan_shards(paths, shard_lines=shard_lines, format=options.format)
            if "fit" in tok_record:
                _fit_word(tok, paths, fmts, options)
            plan = _start(folder, args, shards, "fit" in tok_record, tok)
        if spec is None and tok is not None:  # a word tokenizer: workers get its vocabulary
            spec = ("word", word_doc(tok))
        job = cls(shards, spec, options, jd, progress, plan, folder=folder)
        job._load_recorded()
        return job

    # -------------------------------------------------------------- recording
    def shard_path(self, shard: Shard) -> Path:
        assert self.job_dir is not None
        return self.job_dir / f"shard-{shard.index:05d}.npz"

    def _load_recorded(self) -> None:
        if self.job_dir is None:
            return
        for shard in self.shards:
            path = self.shard_path(shard)
            if self.folder is None or not self.folder.listed(path.name):
                continue
            try:
                problem = shard_source_problem(path, self.plan, shard)
                counts = PositionCounts.load(path)
            except ArtifactError as exc:  # interrupted write: count it again
                _say(
                    f"shard {shard.index} ({shard.name}) is unreadable ({exc}); counting it again",
                    self.progress,
                )
                continue
            if problem is not None:  # never merged, never overwritten
                raise PosgeomError(
                    f"{path} is not shard {shard.index} ({shard.name}) of this job: {problem}; "
                    "move it away, or start over with overwrite=True (CLI: --restart-job)"
                )
            self._fold(shard, counts)
            self.loaded += 1
        _say(
            f"job {self.job_dir}: {len(self.shards)} shards, {self.loaded} loaded from earlier "
            f"runs, {len(self.missing)} to count",
            self.progress,
        )

    @property
    def missing(self) -> list[Shard]:
        """Shards not yet counted, in index order."""
        return [s for s in self.shards if s.index not in self._done]

    def _fold(self, shard: Shard, counts: PositionCounts) -> None:
        self._done.add(shard.index)
        self._pending[shard.index] = counts
        while self._next in self._pending:
            c = self._pending.pop(self._next)
            self._acc = c if self._acc is None else self._acc.merge(c)
            self._next += 1

    def add(self, shard: Shard, counts: PositionCounts) -> None:
        """Record a freshly counted shard (atomically, when there is a job_dir) and fold it in."""
        if self.folder is not None:
            with self.folder.atomic(self.shard_path(shard).name) as tmp:
                counts.save(tmp, format="npz", provenance=shard_provenance(self.plan, shard))
        self._fold(shard, counts)
        self.counted += 1
        _say(
            f"shard {shard.index + 1}/{len(self.shards)} counted ({shard.name}): "
            f"{counts.n_sequences} sequences",
            self.progress,
        )

    def result(self) -> PositionCounts:
        """The merged counts of every shard; written to ``job_dir/counts.npz`` too."""
        if self.missing:
            raise PosgeomError(f"{len(self.missing)} shards are not counted yet")
        acc = self._acc
        if acc is None or acc.n_sequences == 0:
            raise PosgeomError(
                "no sequences to count: the corpus is empty, or every sequence is "
                "shorter than min_length; check the input"
            )
        if self.folder is not None:
            with self.folder.atomic("counts.npz") as tmp:
                acc.save(tmp, format="npz")
        _say(
            f"done: {len(self.shards)} shards ({self.loaded} loaded, {self.counted} counted), "
            f"{acc.n_sequences} sequences, {acc.n_tokens} tokens",
            self.progress,
        )
        return acc


def _tokenizer_inputs(tokenizer: Any) -> list[Path]:
    """The tokenizer file or folder a job reads (a job folder may not hold it)."""
    if not isinstance(tokenizer, (str, os.PathLike)):
        return []
    path = Path(tokenizer).expanduser()
    return [path] if os.fspath(tokenizer) not in ("word", "whitespace") and path.exists() else []


def count_resumable(
    sources: str | os.PathLike | Sequence[str | os.PathLike],
    tokenizer: Any = None,
    *,
    max_positions: int,
    job_dir: str | os.PathLike | None = None,
    shard_lines: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **options: Any,
) -> PositionCounts:
    """Count ``sources`` shard by shard in this process, recording each shard in ``job_dir``.

    ``sources``: one corpus file or a list (any local format of
    :func:`~posgeom.corpus.counting.count_corpus`). ``tokenizer``: a path, a folder, a model name,
    ``"word"`` (fitted on all sources first, saved to ``job_dir/tokenizer.json``) or a
    ``WordLevelTokenizer``; None for token ids. ``shard_lines``: records per shard of line files
    (None: one shard per file). ``overwrite``: delete the files a recorded job wrote in
    ``job_dir`` (only those) and start over. ``progress``: one line per shard logged at INFO.
    ``options``: the count options of ``count_corpus`` but ``max_sequences`` and ``limit``
    (global); with ``bootstrap=B`` shard ``k`` is counted with ``bootstrap_stream=k``. Returns
    the merged :class:`PositionCounts`, equal to one ``count_corpus`` pass over the same corpus.
    """
    job = CountJob.prepare(
        sources,
        tokenizer,
        count_options(max_positions=max_positions, **options),
        job_dir=job_dir,
        shard_lines=shard_lines,
        overwrite=overwrite,
        progress=progress,
    )
    with job.folder or contextlib.nullcontext():  # the job folder's one writer until the end
        for shard in job.missing:
            job.add(shard, count_shard(shard, job.tokenizer, job.options))
        return job.result()
