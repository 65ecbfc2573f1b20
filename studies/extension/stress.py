"""Issue 17 item 4, as far as the CPU allowed: the stress of each trained encoding against the
corpus's lag geometry, against the loss of the Track B model trained with it.

Corpus geometry: :func:`posgeom.lags.lag_geometry` (recommended estimator) of the training bytes
(first 90% of War and Peace), ``top:30`` byte classes, lags :func:`posgeom.lags.default_lags`
up to 127 (the trained length less one). Encoding vectors per lag (:mod:`posgeom.lags.kernels`)
from each trained checkpoint: RoPE ``(cos k w, sin k w)`` (base 10,000, head width 32), ALiBi
slopes, the trained T5 bucket table, the learned table's lag products, the sinusoidal table's,
NoPE zeros. Scores: :func:`posgeom.analysis.pipeline.score_encoding`. Writes ``training_stress.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def corpus_geometry() -> Any:
    from posgeom.lags import count_lags, default_lags, lag_geometry, top_classes
    from studies.extension import track_b as B

    data = B.split_train()[0].astype(np.int64)
    classes = top_classes(np.bincount(data, minlength=256), 30)
    counts = count_lags([data], classes, lags=default_lags(B.L0 - 1))
    return lag_geometry(counts)


def lag_vectors(model: Any, encoding: str, lags: np.ndarray) -> np.ndarray:
    from posgeom.lags import kernels as K

    pos = model.position
    if encoding == "rope":
        return K.rope_lag_vectors(pos.inv_freq.double().numpy(), lags)
    if encoding == "alibi":
        return K.alibi_lag_vectors(pos.slopes.double().numpy(), lags)
    if encoding == "t5":
        bias = pos.bias.weight.detach().double().numpy()
        return K.t5_lag_vectors(
            lags,
            bias=bias,
            num_buckets=pos.num_buckets,
            max_distance=pos.max_distance,
            bidirectional=pos.bidirectional,
        )
    if encoding == "nope":
        return K.nope_lag_vectors(lags)
    table = pos.table().detach().double().numpy()
    return K.learned_lag_vectors(table, lags)


def run(out: Path, ckpt_dir: Path) -> None:
    from posgeom.analysis.pipeline import score_encoding
    from studies._common import read_jsonl
    from studies.extension import track_b as B

    geo = corpus_geometry()
    records = read_jsonl(out / "track_b.jsonl")
    rows = []
    for seed in B.SEEDS:
        for enc in B.ENCODINGS:
            model = B.load(enc, seed, ckpt_dir)
            if model is None:
                continue
            s = score_encoding(lag_vectors(model, enc, geo.lags), geo.distances)
            loss = {
                f"{r['text']} L={r['length']}": r["loss_all"]
                for r in records
                if r["encoding"] == enc and r["seed"] == seed
                and r["strategy"] == B.STRATEGIES[enc][0]
            }  # fmt: skip
            rows.append(
                {
                    "encoding": enc,
                    "seed": seed,
                    "scale_optimal": float(s["scale_optimal"]),
                    "paper": float(s["paper"]),
                    "violation_rate": float(s["violation_rate"]),
                    "loss": loss,
                }
            )
    dep = geo.dependence
    result = {
        "lags": [int(k) for k in geo.lags],
        "longest_signal_lag": int(dep.longest_signal_lag) if dep.longest_signal_lag else None,
        "rows": rows,
    }
    (out / "training_stress.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out / 'training_stress.json'} ({len(rows)} models)")
