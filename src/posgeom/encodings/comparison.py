"""The families' side of a comparison: which families make rows, and their encodings built.

The pipeline asks here, once per run, which families score (:func:`comparison_families`: the
names given or the default set, each looked up in the registry once) and hands the fitted
encodings in through a :class:`~posgeom.encodings._registry.ComparisonContext`;
:func:`built_rows` builds every family's encodings
(:meth:`Family.encodings <posgeom.encodings._registry.Family.encodings>`), restricted to the kept
positions, one family at a time, so that the caller scores one family's encodings and frees them
before the next is built. Nothing here scores.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import restricted
from posgeom.encodings._registry import ComparisonContext, Family, RowEncoding, families, family

__all__ = [
    "FamilyBuild",
    "built_rows",
    "comparable_encodings",
    "comparison_families",
    "default_encodings",
]

log = logging.getLogger("posgeom")


def default_encodings() -> tuple[str, ...]:
    """The default baselines: every registered family with ``in_comparison``, in registry
    order, read from the registry at each call (a family registered later is in it)."""
    return tuple(name for name, fam in families().items() if fam.in_comparison)


def comparable_encodings() -> tuple[str, ...]:
    """The names a comparison's ``families`` accepts: every registered family with a
    comparison row."""
    return tuple(
        name
        for name, fam in families().items()
        if type(fam).encodings is not Family.encodings
        or type(fam).default_encoding is not Family.default_encoding
    )


def comparison_families(names: Sequence[str] | None = None) -> dict[str, Family]:
    """Row name -> its registered family, each looked up once: ``names``, or
    :func:`default_encodings` when None (an unknown name raises, listing the known ones)."""
    return {name: family(name) for name in (default_encodings() if names is None else names)}


@dataclass(frozen=True, eq=False)
class FamilyBuild:
    """One family's encodings for a comparison: ``name`` (its row), ``family``, ``made`` (its
    :class:`~posgeom.encodings._registry.RowEncoding` by key: the description, parameters and
    per-head fields) and ``kept`` (each encoding restricted to the kept positions, by key)."""

    name: str
    family: Family
    made: Mapping[str, RowEncoding]
    kept: Mapping[str, Any]


def built_rows(
    rows: Mapping[str, Family],
    ctx: ComparisonContext,
    positions: np.ndarray,
    *,
    skip_unbuildable: bool = False,
) -> Iterator[FamilyBuild]:
    """Each family of ``rows`` (row name -> family) built for ``ctx``, in order, one at a time:
    a :class:`FamilyBuild` with its encodings restricted to ``positions`` (the kept ones; an
    encoding built on them, ``RowEncoding.kept``, as it is). A family that cannot be built is
    skipped with a warning (``skip_unbuildable``) or raises; one with no encoding here is skipped
    with its reason."""
    for k, (name, fam) in enumerate(rows.items(), 1):
        log.info("scoring %s (%d/%d)", name, k, len(rows))
        try:
            made = fam.encodings(ctx)
        except PosgeomError as exc:
            if not skip_unbuildable:
                raise
            log.warning("%s skipped: %s", name, str(exc).splitlines()[0])
            continue
        if not made:
            log.warning("%s skipped: %s", name, fam.skip_reason)
            continue
        kept = {
            key: m.encoding if m.kept else restricted(m.encoding, positions)
            for key, m in made.items()
        }
        yield FamilyBuild(name, fam, made, kept)
