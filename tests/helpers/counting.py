"""Helpers shared by the sharded-counting tests."""

import csv
import gzip
import io

import numpy as np

from posgeom.corpus.counting import PositionCounts


def assert_same_counts(a: PositionCounts, b: PositionCounts) -> None:
    assert a.counts.shape == b.counts.shape and (a.counts != b.counts).nnz == 0
    np.testing.assert_array_equal(a.totals, b.totals)
    assert (a.n_sequences, a.n_tokens) == (b.n_sequences, b.n_tokens)
    assert a.options == b.options


def write_sst2_head(shared_data, path, n_lines):
    """The header and first ``n_lines`` rows of SST-2 sentence train; returns the texts."""
    with gzip.open(
        shared_data / "sst2" / "sentence" / "train.tsv.gz", "rt", encoding="utf-8", newline=""
    ) as fh:
        lines = [next(fh) for _ in range(n_lines + 1)]
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as fh:
        fh.writelines(lines)
    rows = csv.DictReader(io.StringIO("".join(lines)), delimiter="\t", quoting=csv.QUOTE_NONE)
    return [r["text"] for r in rows]
