"""The files of a counting job (see :mod:`posgeom.corpus.jobs`): its manifest, the argument
comparison that decides whether a job resumes and the tokenizer record workers load (the job
folder itself is a :class:`posgeom.io.workfolders.WorkFolder`)."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.corpus.options import BOOTSTRAP, COUNT, READER, CountOptions, option_fields
from posgeom.corpus.shards import Shard
from posgeom.corpus.tokenize import load_tokenizer
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.io._atomic import canonical_json
from posgeom.io._results import sha256_file
from posgeom.io.jsonfiles import json_text

MANIFEST = "manifest.json"
JOB_KIND = "posgeom-count-job"


# ----------------------------------------------------------------------------- count options
#: what a job cannot apply per shard: global limits, and the replicate stream (the shard's index)
_NOT_PER_SHARD = ("max_sequences", "limit", "bootstrap_stream")
_BOOT = tuple(f.name for f in option_fields(BOOTSTRAP))


def manifest_record(options: CountOptions) -> dict[str, Any]:
    """What a job's manifest compares: every option but ``batch_size`` and those a job does not
    apply; the bootstrap and decoding keys only when set."""
    skip = {"batch_size", *_NOT_PER_SHARD, *(_BOOT if options.bootstrap is None else ())}
    plain = {"text_encoding": "utf-8", "encoding_errors": "strict", "text_field": 1}
    skip |= {k for k, v in plain.items() if getattr(options, k) == v}  # recorded when set
    out = {k: v for k, v in asdict(options).items() if k not in skip}
    out["special_ids"] = None if options.special_ids is None else list(options.special_ids)
    return out


def shard_kwargs(options: CountOptions, shard: Shard) -> dict[str, Any]:
    """Keyword options of ``count_corpus`` for ``shard``: the reader's for whole files only (a
    line range is read by the job), and the shard's index as the bootstrap stream."""
    groups = (COUNT, BOOTSTRAP) if shard.start is not None else (READER, COUNT, BOOTSTRAP)
    kw = {f.name: getattr(options, f.name) for f in option_fields(*groups)}
    if shard.start is None:
        kw["format"] = shard.format
    kw["bootstrap_stream"] = shard.index  # Poisson bootstrap: independent weights per shard
    return kw


def count_options(**options: Any) -> CountOptions:
    """:class:`~posgeom.corpus.options.CountOptions` of a sharded job from keyword arguments; the
    global limits ``max_sequences`` and ``limit``, ``bootstrap_stream`` (set per shard) and
    unknown names are refused with a one-line error."""
    if any(options.get(k) is not None for k in ("max_sequences", "limit")):
        raise PosgeomError(
            "max_sequences and limit are global limits that a sharded count cannot apply; "
            "count a prefix with count_corpus(..., max_sequences=...) or pass fewer files"
        )
    if options.get("bootstrap_stream", 0) != 0:
        raise PosgeomError(
            "a sharded count sets bootstrap_stream itself (the shard index); leave it out"
        )
    for name in _NOT_PER_SHARD:
        options.pop(name, None)
    known = {f.name for f in option_fields()} - set(_NOT_PER_SHARD)
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
    """Size, mtime and ctime of a source (its newest file for a folder; the ctime catches an
    edit whose mtime was restored)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    stats = [p.stat() for p in files]
    return {
        "size": sum(s.st_size for s in stats),
        "mtime_ns": max((s.st_mtime_ns for s in stats), default=0),
        "ctime_ns": max((s.st_ctime_ns for s in stats), default=0),
    }


def word_doc(tok: Any) -> str:
    tokens = sorted(tok.vocab, key=tok.vocab.__getitem__)
    return json_text(
        {"vocab": tokens, "lowercase": tok.lowercase, "unk_token": tok.unk_token, "name": tok.name},
        ensure_ascii=False,
        indent=None,
    )


def _unnamed(identity: dict[str, Any]) -> dict[str, Any]:
    """A tokenizer identity without its ``name`` (the same file may sit at another path)."""
    return {k: v for k, v in identity.items() if k != "name"}


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
        return {"identity": _unnamed(tokenizer.identity)}, tokenizer, None
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
        "identity": _unnamed(tok.identity),
        "file_sha256": sha256_file(path) if path.is_file() else None,
    }
    return record, tok, spec


def read_manifest(jd: Path) -> dict[str, Any]:
    from posgeom.io.jsonfiles import read_json

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
