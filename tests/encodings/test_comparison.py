"""``posgeom.encodings.comparison``: which families make rows, and their encodings built and
restricted to the kept positions, one family at a time (checked against each family's own
``build`` and the registry)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from posgeom._errors import PosgeomError
from posgeom.encodings import families, family, get
from posgeom.encodings._registry import ComparisonContext
from posgeom.encodings.comparison import (
    built_rows,
    comparable_encodings,
    comparison_families,
    default_encodings,
)


def _ctx(model_dim: int = 16) -> ComparisonContext:
    return ComparisonContext(
        n_positions=9,
        n_kept=5,
        model_dim=model_dim,
        n_heads=4,
        rope_head_dim=4,
        rope_base=10000.0,
        seed=0,
    )


def test_the_default_rows_and_the_named_ones():
    assert list(comparison_families()) == list(default_encodings())
    assert all(families()[x].in_comparison for x in default_encodings())
    got = comparison_families(("nope", "sinusoidal"))
    assert list(got) == ["nope", "sinusoidal"] and got["nope"] is family("nope")
    assert set(default_encodings()) <= set(comparable_encodings())
    with pytest.raises(PosgeomError, match="known encodings"):
        comparison_families(("bogus",))


def test_built_rows_restrict_to_the_kept_positions_one_family_at_a_time():
    positions = np.array([0, 2, 4, 6, 8])
    rows = comparison_families(("sinusoidal", "alibi"))
    built = built_rows(rows, _ctx(), positions)
    assert not isinstance(built, (list, tuple))  # a generator: each family built when asked
    first = next(built)
    assert first.name == "sinusoidal" and first.family is rows["sinusoidal"]
    full = get("sinusoidal", 9, d=16).vectors
    np.testing.assert_allclose(first.kept["sinusoidal"].vectors, full[positions], rtol=1e-15)
    heads = next(built)
    assert heads.name == "alibi" and len(heads.made) == 4  # one encoding per head
    assert all(m.head is not None for m in heads.made.values())
    assert all(e.n_positions == 5 for e in heads.kept.values())
    assert next(built, None) is None


def test_an_unbuildable_family_is_skipped_with_its_reason_or_raises(caplog):
    rows = comparison_families(("sinusoidal", "nope"))
    with caplog.at_level(logging.WARNING, logger="posgeom"):
        got = [b.name for b in built_rows(rows, _ctx(15), np.arange(9), skip_unbuildable=True)]
    assert got == ["nope"] and "sinusoidal skipped" in caplog.text  # odd width
    with pytest.raises(PosgeomError):
        list(built_rows(rows, _ctx(15), np.arange(9)))
