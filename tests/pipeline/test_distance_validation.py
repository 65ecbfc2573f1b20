"""Distance matrices are validated once: an array validated here (read-only, owned) and an object
holding read-only distances are recognised, not checked again; anything a user can still write to
is checked every time."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import posgeom._distance_matrix as dm
from posgeom import PosgeomError, count_positions, synthetic_corpus
from posgeom._distance_matrix import as_distances, validated
from posgeom.encodings import sinusoidal
from posgeom.pipeline import GeometryConfig, analyze


@pytest.fixture
def validations(monkeypatch):
    """Every check_distance_matrix call, as the object validated (what ``as_distances`` was given,
    else the array itself); the objects are kept, so their ids are not reused."""
    seen: list[object] = []
    original = dm.check_distance_matrix

    def counted(d, name="distances"):
        caller = sys._getframe(1)
        seen.append(caller.f_locals.get("obj", d) if caller.f_code.co_name == "as_distances" else d)
        return original(d, name)

    monkeypatch.setattr(dm, "check_distance_matrix", counted)
    import posgeom.scores._encoding as enc

    monkeypatch.setattr(enc, "check_distance_matrix", counted)
    return seen


def test_a_comparison_validates_each_object_once(validations):
    seqs = synthetic_corpus(400, 16, 24, kind="three_regimes", seed=0)
    counts = count_positions(seqs, max_positions=16, vocab_size=24)
    result = analyze(counts, GeometryConfig(model_dim=16, max_rank=4, seed=0), kind="compare")
    assert len(result.table) > 5 and len(validations) > 5
    ids = [id(v) for v in validations]
    twice = [type(v).__name__ for v in validations if ids.count(id(v)) > 1]
    assert not twice, f"validated more than once: {twice}"  # the target and encodings: 101 -> 26


def test_owned_arrays_are_recognised_and_user_arrays_always_checked(validations):
    d = sinusoidal(8, d=16).distances
    user = np.array(d)  # writable: a user may change it, so it is checked every time
    first = as_distances(user)
    assert validated(first.distances) is not None and not first.distances.flags.writeable
    assert validated(user) is None and validated(np.array(first.distances)) is None
    as_distances(user)
    assert len(validations) == 2
    as_distances(first.distances)  # owned and read-only: not checked again
    assert len(validations) == 2
    np.testing.assert_array_equal(as_distances(first.distances).distances, d)
    user[0, 1] = 5.0  # made asymmetric after validation: still caught
    with pytest.raises(PosgeomError, match="not symmetric"):
        as_distances(user)


def test_an_object_is_revalidated_when_its_distances_change(validations):
    enc = sinusoidal(8, d=16)
    as_distances(enc)
    as_distances(enc)
    assert len(validations) == 1  # read-only held distances: once per object

    class Holder:
        def __init__(self, distances):
            self.distances = distances

    h = Holder(np.array(enc.distances))  # writable held distances: every call checks
    as_distances(h)
    as_distances(h)
    assert len(validations) == 3
    h.distances = -np.ones((8, 8))
    with pytest.raises(PosgeomError):
        as_distances(h)
