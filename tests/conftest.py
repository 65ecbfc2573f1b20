"""Shared fixtures: the real corpora under /work/shared/data (tests skip when they are absent)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (``<repo>/../shared/data``); skips the test if it is missing."""
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is not available")
    return path
