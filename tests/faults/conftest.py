"""Fixtures of the fault suite (helpers are in fault_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_helpers import MARKER, write_corpus


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "small.txt", 400)


@pytest.fixture
def code_never_runs():
    """Fails the test when a loader ran code from a file (created fault_helpers.MARKER)."""
    MARKER.unlink(missing_ok=True)
    yield
    assert not MARKER.exists(), "a loader ran code from a file (unpickled it)"
