"""A new family is one file: KERPLE-log (``family_example.py``) dropped into a copy of the package.

The copy of ``src/posgeom`` gets ``encodings/kerple.py`` and nothing else; the CLI of that copy
runs ``geometry``, ``compare`` and ``extend kerple_log:...`` on a small synthetic corpus, and each
output's KERPLE numbers are checked against a direct numpy computation of its kernel
(``D_ij = r1 log(1 + r2 |i - j|)`` for the positions, ``v_k = r1 log(1 + r2 k)`` for the lags)
and the stress definitions (paper stress ``sum_{i<j} (delta - D)^2 / sum_{i<j} D^2``,
scale-optimal stress: the same of ``alpha* delta``, ``alpha* = sum delta D / sum delta^2``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import posgeom

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
SPEC = "kerple_log:r1=2,r2=0.5,max_position_embeddings=16"
SEP = "\x1f"  # joins one command's arguments on the child's command line
_RUN = f"""
import sys
import posgeom
from posgeom.cli.main import main
assert posgeom.__file__.startswith(sys.argv[1]), posgeom.__file__  # the copy, not the checkout
for argv in sys.argv[2:]:
    assert main(["-q", *argv.split({SEP!r})]) == 0, argv
"""


def _stresses(delta: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """``(paper, scale_optimal)`` of the ``(n, n)`` distances ``delta`` against ``target``."""
    upper = np.triu_indices(target.shape[0], 1)
    e, d = delta[upper], target[upper]
    paper = float(np.sum((e - d) ** 2) / np.sum(d**2))
    alpha = float(e @ d / (e @ e))
    return paper, float(np.sum((alpha * e - d) ** 2) / np.sum(d**2))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    """A copy of the package with ``encodings/kerple.py`` added (no other change), whose CLI (one
    process: ``count``, ``geometry``, ``compare``, ``extend``) ran on token ids with a positional
    structure (a drifting walk from a random start)."""
    root = tmp_path_factory.mktemp("drop_in")
    package = root / "package"
    source = Path(posgeom.__file__).parent
    shutil.copytree(source, package / "posgeom", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(next(TESTS.rglob("family_example.py")), package / "posgeom/encodings/kerple.py")
    rng = np.random.default_rng(0)
    walks = np.stack([np.cumsum(rng.integers(0, 3, 64)) % 40 for _ in range(300)])
    np.save(root / "ids.npy", walks)
    ids, counts = str(root / "ids.npy"), str(root / "counts.npz")
    extend = ["extend", SPEC, ids, "--target-length", "32", "--replicates", "0"]
    commands = [
        ["count", ids, "-n", "16", "-o", counts],
        ["geometry", counts, "-d", "16", "-o", str(root / "g")],
        ["compare", "--counts", counts, "-d", "16", "-o", str(root / "c")],
        [*extend, "--classes", "top:8", "-o", str(root / "e")],
    ]
    env = dict(os.environ, PYTHONPATH=str(package), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    argv = [sys.executable, "-c", _RUN, str(package), *(SEP.join(c) for c in commands)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return root


def test_geometry_and_compare_score_the_new_family(outputs):
    geometry = json.loads((outputs / "g/summary.json").read_text())["scores"]["kerple_log"]
    row = json.loads((outputs / "c/comparison.json").read_text())["scores"]["kerple_log"]
    for folder, scores in (("g", geometry), ("c", row)):
        arrays = np.load(outputs / folder / "arrays.npz")
        pos = arrays["positions"].astype(np.float64)
        delta = np.log1p(np.abs(pos[:, None] - pos[None, :]))  # r1 = r2 = 1 in a comparison
        paper, scale_optimal = _stresses(delta, arrays["hellinger"])
        assert scores["paper"] == pytest.approx(paper, rel=1e-9)
        assert scores["scale_optimal"] == pytest.approx(scale_optimal, rel=1e-9)
        assert 0 < scale_optimal < 1  # a real score, neither perfect nor NoPE's


def test_extend_scores_the_new_family_by_its_lag_kernel(outputs):
    summary = json.loads((outputs / "e/summary.json").read_text())
    model = {"family": "kerple_log", "name": SPEC, "trained_length": 16, "r1": 2.0, "r2": 0.5}
    assert summary["model"] == model
    (row,) = summary["strategies"]  # the family has no extension strategy: "none" only
    assert (row["name"], row["family"], row["kind"]) == ("none", "kerple_log", "none")
    arrays = np.load(outputs / "e/arrays.npz")
    lags = arrays["positions"].astype(np.float64)
    assert lags.max() == 31  # the lag geometry reaches the target length
    v = 2.0 * np.log1p(0.5 * lags)
    paper, scale_optimal = _stresses(np.abs(v[:, None] - v[None, :]), arrays["hellinger"])
    assert row["scores"]["paper"] == pytest.approx(paper, rel=1e-9)
    assert row["scores"]["scale_optimal"] == pytest.approx(scale_optimal, rel=1e-9)
