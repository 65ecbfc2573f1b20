"""Fixtures of the fault suite (helpers are in fault_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_helpers import write_corpus


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "small.txt", 400)
