"""Sharded, resumable counting: a corpus cut into shards, each counted and recorded on its own.

**Shards.** A shard is a whole file, or (with ``shard_lines=m``, for the line formats ``text``,
``jsonl``, ``csv``, ``tsv``, optionally ``.gz``) the data records ``[k*m, (k+1)*m)`` of one file,
stored as the byte range ``[start, stop)`` of those records in the (decompressed) file. A record is
one line, except in ``csv`` where a newline inside quotes continues the record (a newline ends a
record when the number of ``"`` seen so far is even, which is exact for RFC 4180 quoting). The
header line of ``csv``/``tsv`` is not data. Other formats (Parquet, saved datasets, token ids) are
one shard per file. Shard ``k`` of a plan is named ``"<path> lines a-b"`` (1-based file lines).

**Counts add up.** For shards ``S_1 .. S_K`` of a corpus, ``C = sum_k C(S_k)`` entry by entry
(``C[i, t]`` as in :mod:`posgeom.corpus.counting`), and so do ``totals``, ``n_sequences`` and
``n_tokens``: merging the shard counts (``PositionCounts.merge``, in shard-index order) is exactly
the one-pass count of the whole corpus. Only the fingerprint differs: it is the chain of merge
fingerprints ``sha256("merge:" + a + ":" + b)`` in shard order, deterministic but not the one-pass
stream hash. ``max_sequences`` and ``limit`` are global and are refused here.

**Job folder** (``job_dir``)::

    manifest.json            arguments (sources with size/mtime, tokenizer identity, count options,
                             shard_lines) and the shard plan; written once, atomically
    tokenizer.json           the word vocabulary fitted by the job (tokenizer="word" only)
    shard-00012.npz (+.json) counts of shard 12 (a PositionCounts artifact, written atomically)
    counts.npz (+.json)      the merged counts, written when every shard is done

Run again with the same arguments, a job loads the recorded shards and counts only the missing
ones; with different arguments it refuses and names the argument that differs.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import json
import logging
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain, pairwise
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from posgeom._errors import ArtifactError, PosgeomError
from posgeom.artifacts import atomic_write_text, canonical_json
from posgeom.corpus.counting import PositionCounts, count_corpus
from posgeom.corpus.readers import (
    TOKEN_FORMATS,
    _lines,
    _open_binary,
    _read_jsonl,
    detect_format,
    read_texts,
)
from posgeom.corpus.tokenize import WordLevelTokenizer, load_tokenizer

__all__ = [
    "LINE_FORMATS",
    "CountJob",
    "Shard",
    "count_resumable",
    "count_shard",
    "plan_shards",
    "shard_texts",
]

LINE_FORMATS = ("text", "jsonl", "csv", "tsv")
MANIFEST = "manifest.json"
_JOB_KIND = "posgeom-count-job"
log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- shard plan
@dataclass(frozen=True)
class Shard:
    """One unit of work: a whole file (``start is None``) or a byte range of its records."""

    index: int
    path: str
    format: str
    start: int | None = None  # byte offset of the first record (decompressed stream)
    stop: int | None = None  # byte offset just past the last record
    first_line: int = 0  # 1-based file line of the first record (0 for whole files)
    last_line: int = 0

    @property
    def name(self) -> str:
        if self.start is None:
            return self.path
        return f"{self.path} lines {self.first_line}-{self.last_line}"


def _record_bounds(path: Path, fmt: str, m: int, chunk: int = 1 << 24) -> list[tuple[int, int]]:
    """``(byte offset, lines before it)`` at the data start, every ``m``-th record end, and EOF."""
    header = fmt in ("csv", "tsv")
    bounds = [] if header else [(0, 0)]
    records = -1 if header else 0  # data records completed so far (the header is record -1)
    base = nlines = quotes = 0
    try:
        with _open_binary(path) as fh:
            while block := fh.read(chunk):
                a = np.frombuffer(block, dtype=np.uint8)
                nl = np.flatnonzero(a == 10)
                lines = nlines + np.arange(1, nl.size + 1)
                nlines += nl.size
                if fmt == "csv":  # a newline inside quotes does not end the record
                    q = quotes + np.cumsum(a == 34)
                    quotes = int(q[-1])
                    even = q[nl] % 2 == 0
                    nl, lines = nl[even], lines[even]
                rec = records + np.arange(1, nl.size + 1)
                cut = (rec >= 0) & (rec % m == 0)
                bounds += zip((nl[cut] + base + 1).tolist(), lines[cut].tolist(), strict=True)
                records += nl.size
                base += len(block)
                last = block[-1:]
    except (OSError, EOFError, zlib.error) as exc:
        raise PosgeomError(f"{path}: cannot read the file to plan shards ({exc})") from exc
    if base and last != b"\n":
        nlines += 1  # a last line without newline
    if bounds and bounds[-1][0] < base:
        bounds.append((base, nlines))
    return bounds


def _source_paths(sources: Any) -> list[Path]:
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    paths = [Path(s).expanduser().resolve() for s in sources]
    if not paths:
        raise PosgeomError("no sources given; pass one or more corpus files")
    for p in paths:
        if not p.exists():
            raise PosgeomError(f"corpus file {p} does not exist; check the path")
    return paths


def _format(path: Path, fmt: str | None) -> str:
    fmt = fmt or detect_format(path)
    if fmt == "hf-hub" or fmt not in (*LINE_FORMATS, "parquet", "hf-disk", *TOKEN_FORMATS):
        raise PosgeomError(f"{path}: format {fmt!r} cannot be sharded; pass local files")
    return fmt


def _check_shard_lines(shard_lines: Any) -> None:
    if shard_lines is not None and (not isinstance(shard_lines, int) or shard_lines < 1):
        raise PosgeomError(f"shard_lines must be a positive integer or None, got {shard_lines!r}")


def plan_shards(
    sources: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    shard_lines: int | None = None,
    format: str | None = None,
) -> list[Shard]:
    """Cut ``sources`` into shards (see the module docstring); one pass over each line file.

    ``shard_lines=None`` makes one shard per file. Files without data records give no shard.
    """
    _check_shard_lines(shard_lines)
    shards: list[Shard] = []
    for path in _source_paths(sources):
        fmt = _format(path, format)
        if shard_lines is None or fmt not in LINE_FORMATS:
            shards.append(Shard(len(shards), str(path), fmt))
            continue
        bounds = _record_bounds(path, fmt, shard_lines)
        for (b0, l0), (b1, l1) in pairwise(bounds):
            shards.append(Shard(len(shards), str(path), fmt, b0, b1, l0 + 1, l1))
    return shards


# ----------------------------------------------------------------------------- reading a shard
def _delimited_texts(shard: Shard, lines: Iterable[tuple[int, str]], column: str) -> Iterator[str]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    opts: dict[str, Any] = (
        {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
        if shard.format == "tsv"
        else {"delimiter": ","}
    )
    header_lines = (line for _, line in _lines(shard.path, 0, float("inf"), 1))
    header = next(csv.reader(header_lines, **opts), [])
    if column not in header:
        raise PosgeomError(
            f"{shard.path}: no column {column!r}; columns present: {header}; "
            "pass text_column= one of them"
        )
    idx, current = header.index(column), [shard.first_line]

    def feed() -> Iterator[str]:
        for n, line in lines:
            current[0] = n
            yield line

    try:
        for row in csv.reader(feed(), **opts):
            if not row:
                continue
            if idx >= len(row):
                raise PosgeomError(
                    f"{shard.path}, line {current[0]}: {len(row)} fields, expected "
                    f"{len(header)}; check the delimiter and quoting"
                )
            yield row[idx]
    except csv.Error as exc:
        raise PosgeomError(f"{shard.path}, line {current[0]}: malformed {exc}") from None


def shard_texts(shard: Shard, text_column: str | None = None) -> Iterator[str]:
    """The texts of a line-range shard, as :func:`~posgeom.corpus.readers.read_texts` gives them."""
    if shard.start is None or shard.stop is None:
        raise PosgeomError(f"{shard.name} is a whole-file shard; read it with read_texts")
    lines = _lines(shard.path, shard.start, shard.stop, shard.first_line)
    if shard.format == "text":
        return (line.rstrip("\r\n") for _, line in lines)
    if shard.format == "jsonl":
        return _read_jsonl(shard.path, text_column or "text", lines)
    return _delimited_texts(shard, lines, text_column or "text")


# ----------------------------------------------------------------------------- counting a shard
@functools.lru_cache(maxsize=4)
def _worker_tokenizer(spec: tuple[str, str] | None) -> Any:
    """Load a tokenizer spec: ``("word", vocabulary JSON)`` or ``("load", path or name)``."""
    if spec is None:
        return None
    kind, value = spec
    if kind == "word":
        doc = json.loads(value)
        return WordLevelTokenizer(
            doc["vocab"], lowercase=doc["lowercase"], unk_token=doc["unk_token"], name=doc["name"]
        )
    return load_tokenizer(value)


def _empty(tok: Any, options: dict[str, Any]) -> PositionCounts:
    """Counts of a shard without a single counted sequence (options as counting records them)."""
    n = options["max_positions"]
    vocab = (
        options["vocab_size"]
        if options["vocab_size"] is not None or tok is None
        else tok.vocab_size
    )
    specials = options["special_ids"]
    if specials is None:
        specials = tok.special_ids if tok is not None else ()
    opts = {
        "max_positions": n,
        "vocab_size": vocab,
        "include_special": options["include_special"],
        "special_ids": sorted({int(i) for i in specials}),
        "align": options["align"],
        "min_length": options["min_length"],
        "max_sequences": None,
    }
    return PositionCounts(
        sp.csr_matrix((n, vocab or 0), dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        0,
        0,
        opts,
        None if tok is None else tok.identity,
        hashlib.sha256().hexdigest(),
    )


def count_shard(
    shard: Shard, tokenizer: tuple[str, str] | None, options: dict[str, Any]
) -> PositionCounts:
    """Count one shard (runs in the worker); an empty shard gives zero counts, not an error."""
    tok = _worker_tokenizer(tokenizer)
    kw = {
        k: options[k]
        for k in (
            "max_positions",
            "vocab_size",
            "include_special",
            "special_ids",
            "align",
            "min_length",
            "batch_size",
        )
    }
    if shard.start is None:
        source: Any = shard.path
        kw.update(
            {
                k: options[k]
                for k in ("text_column", "split", "pad_id", "separator_id", "token_dtype")
            },
            format=shard.format,
        )
    else:
        source = shard_texts(shard, options["text_column"])
    if options.get("bootstrap") is not None:  # Poisson bootstrap: the shard index is the stream
        kw.update(
            bootstrap=options["bootstrap"],
            bootstrap_seed=options["bootstrap_seed"],
            bootstrap_stream=shard.index,
            bootstrap_scheme=options["bootstrap_scheme"],
        )
    try:
        return count_corpus(source, tok, progress=False, **kw)
    except PosgeomError as exc:
        if str(exc).startswith("no sequences to count"):
            if options.get("bootstrap") is not None:
                from posgeom.corpus.bootstrap import BootstrapCounts

                return BootstrapCounts.empty(
                    _empty(tok, options),
                    options["bootstrap"],
                    options["bootstrap_seed"],
                    shard.index,
                )
            return _empty(tok, options)
        raise


# ----------------------------------------------------------------------------- the job
def _canonical(obj: Any) -> Any:
    return json.loads(canonical_json(obj))


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        return {
            k: v
            for key, val in obj.items()
            for k, v in _flat(val, f"{prefix}.{key}" if prefix else key).items()
        }
    if isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        out = {f"{prefix}.count": len(obj)}
        for i, val in enumerate(obj):
            out.update(_flat(val, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


def _file_state(path: Path) -> dict[str, Any]:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    stats = [p.stat() for p in files]
    return {
        "size": sum(s.st_size for s in stats),
        "mtime_ns": max((s.st_mtime_ns for s in stats), default=0),
    }


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _word_doc(tok: Any) -> str:
    tokens = sorted(tok.vocab, key=tok.vocab.__getitem__)
    return json.dumps(
        {"vocab": tokens, "lowercase": tok.lowercase, "unk_token": tok.unk_token, "name": tok.name},
        ensure_ascii=False,
    )


def _tokenizer_record(tokenizer: Any) -> tuple[dict[str, Any], Any, tuple[str, str] | None]:
    """(what the manifest compares, the tokenizer here, the spec workers load it from or None
    for a word tokenizer, whose vocabulary workers receive)."""
    if tokenizer is None:
        return {"none": True}, None, None
    if isinstance(tokenizer, (str, os.PathLike)) and os.fspath(tokenizer) in ("word", "whitespace"):
        tokenizer = WordLevelTokenizer()
    if isinstance(tokenizer, WordLevelTokenizer):
        if not tokenizer.fitted:
            return {"fit": "word", "lowercase": tokenizer.lowercase}, tokenizer, None
        return (
            {"identity": {k: v for k, v in tokenizer.identity.items() if k != "name"}},
            tokenizer,
            None,
        )
    if not isinstance(tokenizer, (str, os.PathLike)):
        raise PosgeomError(
            f"pass the tokenizer as a path, a folder, a model name or 'word' (workers load it "
            f"themselves), not a {type(tokenizer).__name__} object"
        )
    tok = load_tokenizer(tokenizer)
    path = Path(tokenizer).expanduser()
    spec = ("load", os.fspath(path.resolve()) if path.exists() else os.fspath(tokenizer))
    path = path / "tokenizer.json" if (path / "tokenizer.json").is_file() else path
    record = {
        "identity": {k: v for k, v in tok.identity.items() if k != "name"},
        "file_sha256": _sha256_file(path) if path.is_file() else None,
    }
    return record, tok, spec


def _say(message: str, progress: bool) -> None:
    log.info(message)
    if progress:
        print(f"[posgeom] {message}", file=sys.stderr, flush=True)


@dataclass
class CountJob:
    """A planned counting job: its shards, how workers load the tokenizer, the count options, the
    shards already done, and the running merge (folded in shard-index order)."""

    shards: list[Shard]
    tokenizer: tuple[str, str] | None
    options: dict[str, Any]
    job_dir: Path | None = None
    progress: bool = True
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
        *,
        max_positions: int,
        job_dir: str | os.PathLike | None = None,
        shard_lines: int | None = None,
        overwrite: bool = False,
        progress: bool = True,
        format: str | None = None,
        text_column: str | None = None,
        split: str | None = None,
        pad_id: int | None = None,
        separator_id: int | None = None,
        token_dtype: str | None = None,
        vocab_size: int | None = None,
        include_special: bool = True,
        special_ids: Iterable[int] | None = None,
        align: str = "start",
        min_length: int = 1,
        batch_size: int = 1024,
        max_sequences: int | None = None,
        limit: int | None = None,
        bootstrap: int | None = None,
        bootstrap_seed: int = 0,
        bootstrap_scheme: str = "half",
    ) -> CountJob:
        """Check the arguments, plan the shards (or read the plan of ``job_dir``) and load the
        shards recorded there. Arguments as in :func:`count_resumable`."""
        if max_sequences is not None or limit is not None:
            raise PosgeomError(
                "max_sequences and limit are global limits that a sharded count cannot apply; "
                "count a prefix with count_corpus(..., max_sequences=...) or pass fewer files"
            )
        if not isinstance(max_positions, int) or max_positions < 1:
            raise PosgeomError(f"max_positions must be a positive integer, got {max_positions!r}")
        if align not in ("start", "end") or min_length < 0 or batch_size < 1:
            raise PosgeomError(
                f"need align 'start' or 'end', min_length >= 0, batch_size >= 1; "
                f"got {align!r}, {min_length}, {batch_size}"
            )
        _check_shard_lines(shard_lines)
        paths = _source_paths(sources)
        fmts = [_format(p, format) for p in paths]
        if tokenizer is None and any(f not in ("npy", "npz", "bin") for f in fmts):
            raise PosgeomError(
                "a text corpus needs a tokenizer: pass a tokenizer.json, a folder, "
                "'word', or a transformers model name"
            )
        options = {
            "max_positions": max_positions,
            "vocab_size": vocab_size,
            "include_special": bool(include_special),
            "special_ids": None if special_ids is None else sorted(map(int, special_ids)),
            "align": align,
            "min_length": int(min_length),
            "format": format,
            "text_column": text_column,
            "split": split,
            "pad_id": pad_id,
            "separator_id": separator_id,
            "token_dtype": token_dtype,
        }
        if bootstrap is not None:  # only then: manifests of plain jobs stay as they were
            from posgeom.corpus.bootstrap import check_replicates, check_scheme

            check_replicates(bootstrap)
            options.update(
                bootstrap=bootstrap,
                bootstrap_seed=bootstrap_seed,
                bootstrap_scheme=check_scheme(bootstrap_scheme),
            )
        tok_record, tok, spec = _tokenizer_record(tokenizer)
        args = _canonical(
            {
                "sources": [
                    {"path": str(p), "format": f, **_file_state(p)}
                    for p, f in zip(paths, fmts, strict=True)
                ],
                "tokenizer": tok_record,
                "options": options,
                "shard_lines": shard_lines,
            }
        )
        jd = None if job_dir is None else Path(job_dir).expanduser()
        if jd is not None and (jd / MANIFEST).exists() and not overwrite:  # resume
            manifest = _read_manifest(jd)
            _compare(jd, manifest["arguments"], args)
            shards = [Shard(**s) for s in manifest["shards"]]
            if "fit" in tok_record:
                tok = WordLevelTokenizer.load(jd / "tokenizer.json")
                tok.name = "word"
        else:
            if jd is not None and jd.exists():
                _clear(jd)  # overwrite=True, or files of a job that never wrote its manifest
            shards = plan_shards(paths, shard_lines=shard_lines, format=format)
            if "fit" in tok_record:
                tok.fit(
                    chain.from_iterable(
                        read_texts(p, format=f, text_column=text_column, split=split)
                        for p, f in zip(paths, fmts, strict=True)
                    )
                )
            if jd is not None:
                if "fit" in tok_record:
                    tok.save(jd / "tokenizer.json")
                doc = {
                    "kind": _JOB_KIND,
                    "format_version": 1,
                    "arguments": args,
                    "tokenizer_identity": None if tok is None else tok.identity,
                    "shards": [asdict(s) for s in shards],
                }
                atomic_write_text(jd / MANIFEST, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        if spec is None and tok is not None:  # a word tokenizer: workers get its vocabulary
            spec = ("word", _word_doc(tok))
        job = cls(shards, spec, {**options, "batch_size": batch_size}, jd, progress)
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
            if not path.exists():
                continue
            try:
                counts = PositionCounts.load(path)
            except ArtifactError as exc:  # interrupted write: count it again
                _say(
                    f"shard {shard.index} ({shard.name}) is unreadable ({exc}); counting it again",
                    self.progress,
                )
                continue
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
        if self.job_dir is not None:
            counts.save(self.shard_path(shard))
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
        if self.job_dir is not None:
            acc.save(self.job_dir / "counts.npz")
        _say(
            f"done: {len(self.shards)} shards ({self.loaded} loaded, {self.counted} counted), "
            f"{acc.n_sequences} sequences, {acc.n_tokens} tokens",
            self.progress,
        )
        return acc


def _read_manifest(jd: Path) -> dict[str, Any]:
    try:
        doc = json.loads((jd / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PosgeomError(
            f"cannot read {jd / MANIFEST} ({exc}); start fresh with a new job_dir or overwrite=True"
        ) from exc
    if not isinstance(doc, dict) or doc.get("kind") != _JOB_KIND:
        raise PosgeomError(f"{jd / MANIFEST} is not a posgeom counting job; pick another job_dir")
    return doc


def _compare(jd: Path, recorded: dict[str, Any], now: dict[str, Any]) -> None:
    old, new = _flat(recorded), _flat(now)
    diff = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if diff:
        detail = "; ".join(f"{k}: {old.get(k)!r} recorded, {new.get(k)!r} now" for k in diff[:6])
        raise PosgeomError(
            f"job_dir {jd} was started with different arguments ({detail}); run again with the "
            "recorded arguments to resume, or start fresh with a new job_dir or overwrite=True (CLI: --restart-job)"
        )


def _clear(jd: Path) -> None:
    """Remove the files a job writes (and nothing else) from ``jd``."""
    for pattern in (
        MANIFEST,
        "tokenizer.json",
        "counts.npz*",
        "shard-*.npz*",
        ".shard-*.tmp",
        ".counts.npz*.tmp",
    ):
        for p in jd.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


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
    (None: one shard per file). ``overwrite``: delete a recorded job in ``job_dir`` and start
    over. ``progress``: one line per shard on stderr (always also logged at INFO).
    ``options``: ``format``, ``text_column``, ``split``, ``pad_id``, ``separator_id``,
    ``token_dtype``, ``vocab_size``, ``include_special``, ``special_ids``, ``align``,
    ``min_length``, ``batch_size`` as in ``count_corpus`` (``max_sequences`` and ``limit`` are
    refused: they are global); ``bootstrap=B``, ``bootstrap_seed`` and ``bootstrap_scheme`` count
    bootstrap replicates, shard ``k`` with ``bootstrap_stream=k`` (see :mod:`posgeom.corpus.bootstrap`). Returns the merged :class:`PositionCounts`, equal in counts,
    totals, ``n_sequences`` and ``n_tokens`` to one ``count_corpus`` pass over the same corpus.
    """
    job = CountJob.prepare(
        sources,
        tokenizer,
        max_positions=max_positions,
        job_dir=job_dir,
        shard_lines=shard_lines,
        overwrite=overwrite,
        progress=progress,
        **options,
    )
    for shard in job.missing:
        job.add(shard, count_shard(shard, job.tokenizer, job.options))
    return job.result()
