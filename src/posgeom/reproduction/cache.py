"""The reproduction's cache of token counts, keyed by what the counts were computed from.

A cached file is named ``<corpus>_<special|nospecial>_n<cap>_limit<L|all>[_boot<B>_seed<S>]_<key>
.npz`` with ``key`` the first 16 hex digits of::

    SHA-256( canonical JSON of {corpus file SHA-256, tokenizer identity (vocabulary hash),
                                count options (cap, limit, special tokens, replicates, seed)} )

so counts are reused only for the very bytes, tokenizer and options they were counted from; a
loaded file is checked once more against them (one renamed into the cache by hand is recounted).
The folder is a work folder of kind ``count-cache`` (:class:`posgeom.io.workfolders.WorkFolder`,
checked before the work by :func:`check_cache`), made with its ``.gitignore`` when the first counts
are saved."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.io.artifacts import canonical_sha256

log = logging.getLogger("posgeom")

__all__ = ["cache_key", "cached_counts", "check_cache"]

CACHE_KIND = "count-cache"


def check_cache(cache: Path, inputs: Any = ()) -> None:
    """Refuse, before the work, a cache folder posgeom may not write in (nothing is created)."""
    _folder(cache, inputs, create=False)


def _folder(cache: Path, inputs: Any = (), *, create: bool = True) -> Any:
    from posgeom.io.workfolders import WorkFolder

    return WorkFolder.open(
        cache,
        kind=CACHE_KIND,
        inputs=inputs,
        option="count cache",
        self_checked=True,
        create=create,
    )


def cache_key(path: Path, tokenizer: Any, options: dict[str, Any]) -> str:
    """16 hex digits naming the counts of ``path`` (its bytes) by ``tokenizer`` with ``options``
    (module docstring)."""
    from posgeom.io._results import sha256_file

    identity = {
        k: v for k, v in (getattr(tokenizer, "identity", None) or {}).items() if k != "name"
    }
    record = {"corpus_sha256": sha256_file(path), "tokenizer": identity, "options": options}
    return canonical_sha256(record)[:16]


def _matches(counts: Any, tokenizer: Any, options: dict[str, Any]) -> str | None:
    """What differs between loaded counts and the key's options and tokenizer (None: nothing)."""
    replicates = getattr(counts, "n_replicates", None)
    seed = getattr(counts, "seed", None) if replicates else None
    found = {
        "max_positions": counts.max_positions,
        "include_special": counts.options.get("include_special"),
        "bootstrap": replicates,
        "bootstrap_seed": seed,
    }
    wanted = {**dict.fromkeys(found), **options}
    if not wanted["bootstrap"]:
        wanted["bootstrap"] = wanted["bootstrap_seed"] = None
    for name, value in found.items():
        if value != wanted[name]:
            return f"{name} {value!r}, not {wanted[name]!r}"
    try:
        counts.check_tokenizer(tokenizer)
    except PosgeomError as exc:
        return str(exc)
    return None


def cached_counts(
    path: Path, name: str, tokenizer: Any, cache: Path, options: dict[str, Any], progress: bool
) -> Any:
    """The counts of corpus ``path`` from ``cache`` when its key matches, else counted (with
    ``count_corpus(path, tokenizer, progress=progress, **options)``) and saved there."""
    from posgeom.corpus.counting import PositionCounts, count_corpus

    if not path.is_file():
        raise PosgeomError(
            f"corpus {path} does not exist; pass --data the folder holding sst2/ and imdb/"
        )
    file = cache / f"{name}_{cache_key(path, tokenizer, options)}.npz"
    if file.exists():
        try:
            counts = PositionCounts.load(file)
            problem = _matches(counts, tokenizer, options)
        except PosgeomError as exc:
            problem = str(exc)
        if problem is None:
            return counts
        log.warning("cached counts %s unusable (%s); recounting", file, problem)
    log.info("counting %s", path)
    counts = count_corpus(path, tokenizer, progress=progress, **options)
    folder = _folder(cache, [path])
    if not folder.listed(".gitignore"):
        folder.write_text(".gitignore", "*\n")
    with folder.atomic(file.name) as tmp:
        counts.save(tmp, format="npz")
    return counts
