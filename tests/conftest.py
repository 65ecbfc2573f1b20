"""Shared fixtures: the real corpora under /work/shared/data (tests skip when they are absent).

Hypothesis runs derandomized (the same examples on every run), so a test run is reproducible and
CI cannot turn red on a new random draw; widen ``max_examples`` locally to explore further."""

from __future__ import annotations

import os
from pathlib import Path

if os.environ.get("PYTEST_XDIST_WORKER"):  # workers share the cores: one BLAS/OpenMP thread each
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest
from hypothesis import settings

settings.register_profile("posgeom", derandomize=True)
settings.load_profile("posgeom")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (``<repo>/../shared/data``); skips the test if it is missing."""
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is not available")
    return path
