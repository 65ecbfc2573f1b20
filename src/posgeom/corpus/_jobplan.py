"""A counting job's shard plan, its checksum, and the provenance every shard file carries.

A resumed job (:mod:`posgeom.corpus.jobs`) checks what it did not just compute:

- **The plan.** The manifest stores ``plan_sha256 = SHA-256(canonical JSON of the shard list)``;
  on resume the list must hash to it, its indices must be ``0 .. K-1`` in order, every shard must
  read one of the job's sources, and a source's record ranges must follow each other.
- **The shards.** Each shard file carries ``{"plan_sha256", "shard": its record}`` in its
  metadata (``provenance``); a file whose provenance is not exactly this plan's shard is
  refused, never merged and never overwritten.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from posgeom._errors import ArtifactError, PosgeomError
from posgeom.corpus.shards import Shard
from posgeom.io.artifacts import canonical_sha256

__all__ = ["check_plan", "plan_sha256", "shard_provenance", "shard_source_problem"]

_RESTART = "start over with overwrite=True (CLI: --restart-job) or a new job_dir"


def plan_sha256(shards: list[dict[str, Any]]) -> str:
    """SHA-256 of the canonical JSON of the shard records (``asdict(Shard)`` each)."""
    return canonical_sha256(list(shards))


def shard_provenance(plan: str, shard: Shard) -> dict[str, Any]:
    """What a shard file records about where its counts come from."""
    return {"plan_sha256": plan, "shard": asdict(shard)}


def _check_ranges(where: Path, shards: list[Shard], sources: set[str]) -> None:
    last: dict[str, Shard] = {}
    for k, s in enumerate(shards):
        if s.index != k:
            raise PosgeomError(f"{where}: shard {k} of the plan has index {s.index}; {_RESTART}")
        if s.path not in sources:
            raise PosgeomError(f"{where}: shard {k} reads {s.path}, not a source; {_RESTART}")
        before = last.get(s.path)
        whole = s.start is None
        if before is not None and (whole or before.start is None or before.stop != s.start):
            raise PosgeomError(
                f"{where}: shard {k} ({s.name}) does not continue shard {before.index} "
                f"({before.name}); {_RESTART}"
            )
        if not whole and (s.stop is None or s.stop < s.start):
            raise PosgeomError(f"{where}: shard {k} has the range {s.start}..{s.stop}; {_RESTART}")
        last[s.path] = s


def check_plan(jd: Path, manifest: dict[str, Any], sources: list[str]) -> tuple[list[Shard], str]:
    """The shards of a recorded job and the plan's checksum, or a one-line refusal (module
    docstring)."""
    where = jd / "manifest.json"
    records = manifest.get("shards")
    recorded = manifest.get("plan_sha256")
    if not isinstance(records, list) or not isinstance(recorded, str):
        raise PosgeomError(f"{where} has no checksummed shard plan; {_RESTART}")
    if plan_sha256(records) != recorded:
        raise PosgeomError(f"{where}: the shard plan was edited (checksum differs); {_RESTART}")
    try:
        shards = [Shard(**s) for s in records]
    except TypeError as exc:
        raise PosgeomError(f"{where} is damaged ({exc}); {_RESTART}") from None
    _check_ranges(where, shards, set(sources))
    return shards, recorded


def shard_source_problem(path: Path, plan: str, shard: Shard) -> str | None:
    """Why the shard file at ``path`` is not this plan's ``shard`` (None: it is). Raises
    :class:`ArtifactError` when the file cannot be read (an interrupted write: count again)."""
    from posgeom.io.artifacts import read_sidecar

    header = read_sidecar(path)
    found = header.get("metadata", {}).get("provenance")
    if found == shard_provenance(plan, shard):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("shard"), dict):
        return "it records no shard of a counting job"
    try:
        other = Shard(**found["shard"]).name
    except TypeError:
        raise ArtifactError(f"{path}: its shard record is damaged") from None
    job = "this job" if found.get("plan_sha256") == plan else "another job"
    return f"it holds the counts of {other} of {job}"
