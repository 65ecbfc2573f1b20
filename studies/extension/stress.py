"""Issue 17 item 4, as far as the CPU allowed: the stress of each trained encoding against the
corpus's lag geometry, against the loss of the Track B model trained with it.

Corpus geometry: :func:`posgeom.lags.lag_geometry` (recommended estimator) of the training bytes
(first 90% of War and Peace), ``top:30`` byte classes, lags :func:`posgeom.lags.default_lags`
up to 127 (the trained length less one). Encoding vectors per lag from each trained checkpoint,
each family's own kernel read through the registry (:func:`lag_vectors`; the families are
:func:`studies.extension.track_b.encodings`): RoPE ``(cos k w, sin k w)`` (base 10,000, head
width 32), ALiBi slopes, the trained T5 bucket table, the learned table's lag products, the
sinusoidal formula's (float64), NoPE zeros. Scores: :func:`posgeom.scores.table.score_encoding`. Writes ``training_stress.json``.
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


def lag_vectors(
    position: Any, family_name: str, lags: np.ndarray, trained_length: int
) -> np.ndarray:
    """``(m, k)`` float64 lag vectors of a trained ``position`` module of the registered family
    ``family_name`` (a posgeom decoder's or a tiny encoder's), as trained: the family reads its
    parameters from the module (``extension_from_decoder``) and gives its kernel of
    ``Strategy("none")`` at ``trained_length`` (:func:`posgeom.extension.scoring.lag_vectors`).
    A new family with a decoder module and a lag kernel is scored here with no change."""
    from posgeom.encodings import extension_of
    from posgeom.encodings._extension import Strategy
    from posgeom.extension.model import ExtensionModel
    from posgeom.extension.scoring import lag_vectors as family_lag_vectors

    params = extension_of(family_name).extension_from_decoder(position)
    model = ExtensionModel(family_name, family_name, int(trained_length), params, "posgeom decoder")
    none = Strategy("none", family_name, "none")
    return family_lag_vectors(model, none, lags, int(trained_length))


def run(out: Path, ckpt_dir: Path) -> None:
    from posgeom.scores.table import score_encoding
    from studies._common import read_jsonl
    from studies.extension import track_b as B

    geo = corpus_geometry()
    records = read_jsonl(out / "track_b.jsonl")
    rows = []
    for seed in B.SEEDS:
        for enc in B.encodings():
            model = B.load(enc, seed, ckpt_dir)
            if model is None:
                continue
            vectors = lag_vectors(model.position, model.config.position, geo.lags, B.L0)
            s = score_encoding(vectors, geo.distances)
            loss = {
                f"{r['text']} L={r['length']}": r["loss_all"]
                for r in records
                if r["encoding"] == enc
                and r["seed"] == seed
                and r["strategy"] == B.strategies(enc)[0]
            }
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
