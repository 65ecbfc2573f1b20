"""Shared fixtures: the real corpora under ../shared/data (tests skip when they are absent).

Hypothesis runs derandomized (the same examples on every run) and without its per-example
deadline, so a test run is reproducible and CI cannot turn red on a new random draw or a slow
machine; widen ``max_examples`` locally to explore further."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# before numpy is imported (no import above loads it): workers share the cores, one BLAS thread each
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite runs on every core (``-n auto`` in pyproject); a run of named files or tests
    stays in one process (it starts at once, and parallel runs of several people do not multiply).
    An explicit ``-n N`` is kept."""
    named = config.args_source == pytest.Config.ArgsSource.ARGS
    if named and getattr(config.option, "numprocesses", None) == "auto":
        config.option.numprocesses = 0


# deadline=None: Hypothesis's per-example wall-time limit (200 ms) is a timing assertion, which
# fails on a loaded or slower machine; the suite's timeout (pyproject) still bounds a hang
settings.register_profile("posgeom", derandomize=True, deadline=None)
settings.load_profile("posgeom")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (``<repo>/../shared/data``); skips the test if it is missing."""
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is not available")
    return path
