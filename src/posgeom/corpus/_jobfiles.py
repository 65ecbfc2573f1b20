"""The files of a counting job (see :mod:`posgeom.corpus.jobs`): its manifest, the argument
comparison that decides whether a job resumes, the tokenizer record workers load, and the clean-up
of a job folder (only the files a job writes)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.corpus.shards import Shard
from posgeom.corpus.tokenize import WordLevelTokenizer, load_tokenizer
from posgeom.io.artifacts import canonical_json

MANIFEST = "manifest.json"
JOB_KIND = "posgeom-count-job"


# ----------------------------------------------------------------------------- count options
@dataclass(frozen=True)
class CountOptions:
    """How every shard is read and counted: the options of ``count_corpus`` a sharded job applies.

    Reader options: ``format``, ``text_column``, ``split``, ``pad_id``, ``separator_id``,
    ``token_dtype``. Count options: ``max_positions``, ``vocab_size``, ``include_special``,
    ``special_ids``, ``align``, ``min_length``, ``batch_size``; ``bootstrap`` (replicates ``B``)
    ``bootstrap_seed`` and ``bootstrap_scheme``. Checked on construction.
    """

    max_positions: int
    format: str | None = None
    text_column: str | None = None
    split: str | None = None
    pad_id: int | None = None
    separator_id: int | None = None
    token_dtype: str | None = None
    vocab_size: int | None = None
    include_special: bool = True
    special_ids: tuple[int, ...] | None = None
    align: str = "start"
    min_length: int = 1
    batch_size: int = 1024
    bootstrap: int | None = None
    bootstrap_seed: int = 0
    bootstrap_scheme: str = "half"

    def __post_init__(self) -> None:
        check_int(self.max_positions, "max_positions", 1)
        if self.align not in ("start", "end") or self.min_length < 0 or self.batch_size < 1:
            raise PosgeomError(
                f"need align 'start' or 'end', min_length >= 0, batch_size >= 1; "
                f"got {self.align!r}, {self.min_length}, {self.batch_size}"
            )
        if self.special_ids is not None:
            object.__setattr__(self, "special_ids", tuple(sorted(map(int, self.special_ids))))
        if self.bootstrap is not None:
            from posgeom.corpus.bootstrap import check_replicates, check_scheme

            check_replicates(self.bootstrap)
            object.__setattr__(self, "bootstrap_scheme", check_scheme(self.bootstrap_scheme))

    def record(self) -> dict[str, Any]:
        """What the manifest compares (``batch_size`` does not change counts; the bootstrap keys
        only when set, so manifests of plain jobs stay as they were)."""
        boot = ("bootstrap", "bootstrap_seed", "bootstrap_scheme")
        out = {k: v for k, v in asdict(self).items() if k != "batch_size" and k not in boot}
        out["special_ids"] = None if self.special_ids is None else list(self.special_ids)
        if self.bootstrap is not None:
            out.update({k: getattr(self, k) for k in boot})
        return out

    def count_kwargs(self, shard: Shard) -> dict[str, Any]:
        """Keyword arguments of ``count_corpus`` for ``shard`` (reader options for whole files)."""
        kw = {k: getattr(self, k) for k in _COUNT_KEYS}
        kw["special_ids"] = None if self.special_ids is None else list(self.special_ids)
        if shard.start is None:
            kw.update({k: getattr(self, k) for k in _READER_KEYS}, format=shard.format)
        if self.bootstrap is not None:  # Poisson bootstrap: the shard index is the stream
            kw.update(
                bootstrap=self.bootstrap,
                bootstrap_seed=self.bootstrap_seed,
                bootstrap_stream=shard.index,
                bootstrap_scheme=self.bootstrap_scheme,
            )
        return kw


_COUNT_KEYS = (
    "max_positions",
    "vocab_size",
    "include_special",
    "special_ids",
    "align",
    "min_length",
    "batch_size",
)
_READER_KEYS = ("text_column", "split", "pad_id", "separator_id", "token_dtype")


def count_options(**options: Any) -> CountOptions:
    """:class:`CountOptions` from keyword arguments; the global limits ``max_sequences`` and
    ``limit`` and unknown names are refused with a one-line error."""
    if options.get("max_sequences") is not None or options.get("limit") is not None:
        raise PosgeomError(
            "max_sequences and limit are global limits that a sharded count cannot apply; "
            "count a prefix with count_corpus(..., max_sequences=...) or pass fewer files"
        )
    options.pop("max_sequences", None)
    options.pop("limit", None)
    known = {f.name for f in dataclasses.fields(CountOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise PosgeomError(f"unknown count options {unknown}; use some of {sorted(known)}")
    return CountOptions(**options)


@functools.lru_cache(maxsize=4)
def worker_tokenizer(spec: tuple[str, str] | None) -> Any:
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


def canonical(obj: Any) -> Any:
    return json.loads(canonical_json(obj))


def flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        return {
            k: v
            for key, val in obj.items()
            for k, v in flat(val, f"{prefix}.{key}" if prefix else key).items()
        }
    if isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        out = {f"{prefix}.count": len(obj)}
        for i, val in enumerate(obj):
            out.update(flat(val, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


def file_state(path: Path) -> dict[str, Any]:
    """Size, mtime and ctime of a source (its newest file for a folder). The ctime changes with
    every write and cannot be set back, so an edit that keeps the size and restores the mtime
    (``touch -r``) still differs."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    stats = [p.stat() for p in files]
    return {
        "size": sum(s.st_size for s in stats),
        "mtime_ns": max((s.st_mtime_ns for s in stats), default=0),
        "ctime_ns": max((s.st_ctime_ns for s in stats), default=0),
    }


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def word_doc(tok: Any) -> str:
    tokens = sorted(tok.vocab, key=tok.vocab.__getitem__)
    return json.dumps(
        {"vocab": tokens, "lowercase": tok.lowercase, "unk_token": tok.unk_token, "name": tok.name},
        ensure_ascii=False,
    )


def tokenizer_record(tokenizer: Any) -> tuple[dict[str, Any], Any, tuple[str, str] | None]:
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
        "file_sha256": sha256_file(path) if path.is_file() else None,
    }
    return record, tok, spec


def read_manifest(jd: Path) -> dict[str, Any]:
    from posgeom._jsonfiles import read_json

    try:
        doc = read_json(jd / MANIFEST)
    except PosgeomError as exc:
        raise PosgeomError(
            f"cannot read {jd / MANIFEST} ({exc}); start fresh with a new job_dir or overwrite=True"
        ) from exc
    if not isinstance(doc, dict) or doc.get("kind") != JOB_KIND:
        raise PosgeomError(f"{jd / MANIFEST} is not a posgeom counting job; pick another job_dir")
    return doc


def compare(jd: Path, recorded: dict[str, Any], now: dict[str, Any]) -> None:
    old, new = flat(recorded), flat(now)
    diff = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if diff:
        detail = "; ".join(f"{k}: {old.get(k)!r} recorded, {new.get(k)!r} now" for k in diff[:6])
        raise PosgeomError(
            f"job_dir {jd} was started with different arguments ({detail}); run again with the "
            "recorded arguments to resume, or start fresh with a new job_dir or overwrite=True (CLI: --restart-job)"
        )


def clear(jd: Path) -> None:
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
