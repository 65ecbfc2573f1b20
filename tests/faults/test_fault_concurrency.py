"""Two writers of the same counts file and the same results folder, 20 rounds each (issue 10,
defect 2: a mismatched .npz/.json pair in about 2 rounds of 30): every output loads, at every
moment it is read, and comes wholly from one writer."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
from fault_helpers import SRC, temporaries

from posgeom import PositionCounts, count_corpus
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.io._results import RESULTS_MANIFEST
from posgeom.io.artifacts import load_artifact

ROUNDS = 20
WRITER = """
import sys
from posgeom.cli.main import main
corpus, counts, fixed, res, n, d, rounds = sys.argv[1:]
for _ in range(int(rounds)):
    assert main(["-q", "count", corpus, "-n", n, "-o", counts, "--overwrite"]) == 0
    argv = ["-q", "geometry", fixed, "-d", d, "--noise", "none", "--no-refine"]
    assert main([*argv, "-o", res, "--overwrite"]) == 0
"""


def _check_results(res):
    """A results folder is complete and from one writer: its manifest lists exactly its files
    with their hashes, and its summary says which writer (model_dim 4 or 5)."""
    manifest = json.loads((res / RESULTS_MANIFEST).read_text())
    listed = set(manifest["files"])
    assert listed == {p.name for p in res.iterdir()} - {RESULTS_MANIFEST}
    for name, info in manifest["files"].items():
        assert hashlib.sha256((res / name).read_bytes()).hexdigest() == info["sha256"]
    d = json.loads((res / "summary.json").read_text())["options"]["model_dim"]
    arrays, _ = load_artifact(res / "arrays.npz")
    assert d in (4, 5) and arrays["mds_embedding"].shape[1] == d
    return d


def _sample(res):
    """Check ``res`` while writers replace it; a sample that straddles a replacement (the
    folder's inode changed while it was read) says nothing and is skipped."""
    try:
        before = os.stat(res).st_ino
    except FileNotFoundError:
        return
    try:
        _check_results(res)
    except (OSError, AssertionError, ValueError):
        if os.path.exists(res) and os.stat(res).st_ino == before:
            raise


def test_two_writers(small_corpus, tmp_path):
    counts, res = tmp_path / "c.npz", tmp_path / "res"
    fixed = count_corpus(small_corpus, WordLevelTokenizer(), max_positions=12)
    fixed_path = fixed.save(tmp_path / "fixed.npz")
    refs = {n: count_corpus(small_corpus, WordLevelTokenizer(), max_positions=n) for n in (15, 16)}
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                *map(str, (small_corpus, counts, fixed_path, res, n, d, ROUNDS)),
            ],
            env=env,
            stderr=subprocess.PIPE,
        )
        for n, d in (("16", "4"), ("15", "5"))
    ]
    reads = 0
    while any(p.poll() is None for p in procs):  # read while they write: never a mix
        if counts.exists():
            got = PositionCounts.load(counts)
            np.testing.assert_array_equal(
                got.counts.toarray(), refs[got.max_positions].counts.toarray()
            )
            reads += 1
        _sample(res)
    for p in procs:
        assert p.wait() == 0, p.stderr.read().decode()
        p.stderr.close()
    final = PositionCounts.load(counts)
    np.testing.assert_array_equal(
        final.counts.toarray(), refs[final.max_positions].counts.toarray()
    )
    _check_results(res)
    assert reads > 0 and not temporaries(tmp_path)
