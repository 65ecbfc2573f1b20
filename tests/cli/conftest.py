"""Fixtures of the command-line tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(30)]
    lines = [" ".join(rng.choice(words, size=rng.integers(6, 12))) for _ in range(300)]
    path = tmp_path / "my_corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path
