"""The synthetic workload of the performance benchmarks: Zipfian positional counts whose head drifts
with position (``bench_geometry``, ``bench_default``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: the vocabulary size of the synthetic counts (BERT's)
VOCAB = 30522


def zipf_counts(n: int, vocab: int = VOCAB, seed: int = 0) -> sp.csr_matrix:
    """Realistic positional counts: Zipf(1.1) tokens, a head whose mix drifts with position, and
    samples per position decaying like the lengths of a document corpus (3000 at position 0)."""
    rng = np.random.default_rng(seed)
    base = 1.0 / np.arange(1, vocab + 1) ** 1.1
    base /= base.sum()
    head = 300
    mix = rng.dirichlet(np.full(head, 0.3), size=4)
    rows, cols, vals = [], [], []
    for i in range(n):
        t = i / max(1, n - 1)
        weights = np.array([1 - t, t, np.sin(np.pi * t) ** 2, 0.5]) + 1e-3
        q = base.copy()
        q[:head] = 0.5 * base[:head] + 0.5 * (weights / weights.sum()) @ mix * base[:head].sum()
        q /= q.sum()
        total = max(8, int(3000 * np.exp(-3.0 * t)))
        c = rng.multinomial(total, q)
        nz = np.flatnonzero(c)
        rows.append(np.full(nz.size, i))
        cols.append(nz)
        vals.append(c[nz])
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, vocab)
    )
