"""Distance matrices are validated once and carry it in their type: a DistanceMatrix is made by
``validated`` (checked) or ``derived`` (valid by construction), an object that builds its
distances keeps its typed form, and a bare array is checked every time (nothing is remembered by
identity)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import posgeom._distance_matrix as dm
from posgeom import PosgeomError, count_positions, synthetic_corpus
from posgeom._distance_matrix import DistanceMatrix, as_distances
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
    # the target and the plug-in D beside it, once each: every encoding and the MDS rows are
    # derived from vectors (valid by construction), the stages after the scorer read its typed
    # target (202 validations before issue 25, 26 with identity caches, 2 now)
    assert len(result.table) > 5 and len(validations) == 2
    ids = [id(v) for v in validations]
    assert len(set(ids)) == 2


def test_a_typed_matrix_carries_its_validity_and_arrays_are_always_checked(validations):
    """A DistanceMatrix is itself (no check); an array, whoever made it, is checked every time
    (nothing is remembered by identity); an encoding builds its own once, valid by
    construction (its vectors' Euclidean distances: no check at all)."""
    enc = sinusoidal(8, d=16)
    typed = as_distances(enc)
    assert typed is enc.typed_distances and as_distances(enc) is typed
    assert validations == []  # derived from the vectors: valid by construction
    user = np.array(enc.distances)  # writable: a user may change it
    first = as_distances(user)
    assert not first.distances.flags.writeable and as_distances(first) is first
    as_distances(first.distances)  # a bare array is checked again: the type carries validity
    assert len(validations) == 2
    np.testing.assert_array_equal(first.distances, enc.distances)
    user[0, 1] = 5.0  # made asymmetric: caught
    with pytest.raises(PosgeomError, match="not symmetric"):
        as_distances(user)


def test_validated_checks_and_derived_trusts():
    d = sinusoidal(6, d=8).distances
    with pytest.raises(PosgeomError, match="negative"):
        DistanceMatrix.validated(-np.ones((3, 3)) + np.eye(3))
    with pytest.raises(PosgeomError, match="NaN or Inf"):
        DistanceMatrix.validated(np.full((3, 3), np.nan))
    nearly = np.array(d)
    nearly[0, 1] += 1e-12  # asymmetric within round-off: symmetrised
    fixed = DistanceMatrix.validated(nearly)
    np.testing.assert_array_equal(fixed.distances, fixed.distances.T)
    kept = DistanceMatrix.derived(d, positions=np.arange(10, 16))
    assert kept.distances is not d and np.shares_memory(kept.distances, d)  # a view, no copy
    np.testing.assert_array_equal(kept.positions, np.arange(10, 16))
    assert not kept.distances.flags.writeable
    np.testing.assert_array_equal(DistanceMatrix.derived(d, positions=[1, 2]).positions, range(6))


def test_an_encoding_from_a_user_matrix_is_validated_once(validations):
    from posgeom.encodings._base import PositionEncoding

    d = sinusoidal(8, d=16).distances
    enc = PositionEncoding("user", None, {}, np.array(d))
    as_distances(enc)
    as_distances(enc)
    assert len(validations) == 1  # built once, kept as its typed distances
