"""Settings of the paper reproduction: corpora, the paper's numbers, the choice of n."""

from __future__ import annotations

import numpy as np

from posgeom.corpus.lengths import QUANTILE as LENGTH_QUANTILE
from posgeom.corpus.lengths import suggest_n

MODEL_DIM = 768
SYNTH = {"n": 32, "d": 128, "vocab": 64, "sequences": 10_000, "kind": "three_regimes"}
CORPORA = (  # key, title, path under --data, counting cap
    (
        "sst2_glue",
        "SST-2 (GLUE train, 67,349 phrases and sentences)",
        "sst2/glue/train.tsv.gz",
        128,
    ),
    (
        "sst2_sentence",
        "SST-2 (sentence-level train, 6,920 sentences)",
        "sst2/sentence/train.tsv.gz",
        128,
    ),
    ("imdb", "IMDB (train, 25,000 reviews)", "imdb/train.jsonl.gz", 512),
)
PAPER = {
    "alibi_sst2": 0.563,
    "sinusoidal_sst2": 272.0,
    "rope_sst2": 279.0,
    "rank3_stress_cut": 0.998,
    "rank3_param_cut": 0.88,
    "sst2_low_rank_param_cut": 0.90,
    "violation_mds": 0.22,
    "violation_random": 0.50,
    "violation_pretrained": 0.254,
}
NEAR_ZERO = 0.01  # "near-zero" paper stress


def choose_n(
    totals: np.ndarray,
    n_sequences: int,
    *,
    quantile: float = LENGTH_QUANTILE,
    cap: int | None = None,
) -> int:
    """Positions reached by at least ``(1 - quantile)`` of the sequences (``totals[i]`` = number
    of sequences longer than ``i``), i.e. the ``quantile`` of sequence lengths, at least 3: the
    rule of ``posgeom lengths`` (:func:`posgeom.corpus.lengths.suggest_n`), capped at ``cap``."""
    totals = np.asarray(totals)
    return suggest_n(totals if cap is None else totals[:cap], n_sequences, quantile=quantile)
