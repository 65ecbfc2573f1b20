"""Can any rule for ``resolution="auto"`` meet issue 16's targets at 1,000 sequences?

    python -m studies.estimation.resolution_rule          # writes docs/estimation/resolution_rule.json

Issue 16's targets for the auto resolution on subsamples of m = 1,000 sequences: Spearman >= 0.9
of the estimated D with the truth, Kendall tau >= 0.8 for the ranking of 8 encodings. The
real-population benchmark (``python -m studies.estimation --real``) measured c = 1 (today's rule) at 0.47 to
0.88. A rule of the form "keep the top K tokens" can do no better than the best K, so this script
measures, per population and subsample, the corrected (default Euclidean) estimate at every K of a
fine grid (the oracle rule: the K that is best against the truth, which no rule can know), the
thresholds c of the count rule, and two limits that no rule moves:

* *retest*: Spearman between the estimates of two disjoint subsamples of m sequences on the same
  classes. With ``estimate = truth + independent noise`` it is ``rho^2``, so ``sqrt(retest)``
  estimates the best Spearman with the truth that this much sampling noise allows (Pearson's
  reliability argument applied to ranks: an approximation, not a bound);
* *truth halves*: Spearman between the truths of the population's two halves on the same classes
  (how well the population itself pins its geometry down).

The thresholds ``c`` run with the rule's other defaults: since issue 24 those add frequency bands
of the rest and a reference position (:mod:`studies.estimation.resolution_classes` compares that rule with
the ``top:K`` rule this study measured on 2026-12-01, on the same populations and subsamples).

Populations, tokenizers, positions (the first 64 reached by >= 25% of sequences) and the truth
(the population's Hellinger chords on the estimate's classes, computed in numpy) are those of
:mod:`studies.estimation.real_population`; the texts are cut to their first 1,000 characters before tokenizing
(the first 64 tokens are unchanged: cached as ``cut_*`` next to the benchmark's own cache).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from benchmarks.harness import names
from studies.estimation import real_population as real
from studies.estimation.common import OUT, encodings, quality, spearman
from studies.estimation.real_population import CUT_POPULATIONS, SUBSAMPLES, M, kept_population

GRID = (3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)
COUNTS = (0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)


def _one(label: str, corpus: str, tokenizer: str) -> dict:
    from posgeom import estimate_geometry
    from posgeom.estimators.resolution import auto_resolution

    tokens, n, vocab, pop = kept_population(corpus, tokenizer)
    rng = np.random.default_rng(17)
    half = rng.permutation(tokens.shape[0])
    halves = [real.counts_of(tokens[half[: len(half) // 2]], vocab)]
    halves.append(real.counts_of(tokens[half[len(half) // 2 :]], vocab))
    iu = np.triu_indices(n, 1)
    rows: dict[str, list[dict]] = {}
    for _ in range(SUBSAMPLES):
        pick = rng.choice(tokens.shape[0], 2 * M, replace=False)
        a, b = (real.counts_of(tokens[np.sort(p)], vocab) for p in (pick[:M], pick[M:]))
        specs = {f"top:{k}": f"top:{k}" for k in GRID}
        specs.update({f"c={c:g}": auto_resolution(a, resolved_count=c) for c in COUNTS})
        for key, spec in specs.items():
            est = estimate_geometry(a, resolution=spec)
            truth = real.population_truth(pop, est.class_map)
            q = quality(est.distances, truth, encodings(n, truth))
            other = estimate_geometry(b, resolution=est.class_map)
            t0, t1 = (real.population_truth(h, est.class_map)[iu] for h in halves)
            rows.setdefault(key, []).append(
                {
                    "resolution": est.resolution,
                    "spearman": q["rank_corr"],
                    "tau": q["kendall_tau"],
                    "retest": spearman(est.distances[iu], np.asarray(other.distances)[iu]),
                    "truth_halves": spearman(t0, t1),
                }
            )
    out = {}
    for key, qs in rows.items():
        cell = {k: float(np.mean([q[k] for q in qs])) for k in qs[0] if k != "resolution"}
        cell["resolution"] = sorted({q["resolution"] for q in qs})
        out[key] = cell
    best = max((k for k in out if k.startswith("top:")), key=lambda k: out[k]["spearman"])
    print(
        f"[rule] {label}: best fixed {best} Spearman {out[best]['spearman']:.2f} tau "
        f"{out[best]['tau']:.2f} sqrt(retest) {np.sqrt(max(out[best]['retest'], 0)):.2f}; "
        f"c=1 {out['c=1']['resolution']} {out['c=1']['spearman']:.2f} / {out['c=1']['tau']:.2f}",
        flush=True,
    )
    return {"n": n, "N": int(tokens.shape[0]), "cells": out, "best_fixed": best}


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", message="B has negative eigenvalues")
    t0 = time.perf_counter()
    res = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "m": M,
        "subsamples": SUBSAMPLES,
        "grid": list(GRID),
        "counts": list(COUNTS),
        "populations": {},
    }
    only = names(
        __doc__, sys.argv[1:], metavar="TOKENIZER", help="populations to run (default: all)"
    )
    for label, corpus, tokenizer in CUT_POPULATIONS:
        if only and tokenizer not in only:
            continue
        res["populations"][label] = _one(label, corpus, tokenizer)
    res["seconds"] = time.perf_counter() - t0
    path = OUT / "resolution_rule.json"
    old = json.loads(path.read_text()) if path.exists() else {"populations": {}}
    res["populations"] = {**old["populations"], **res["populations"]}
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {path} in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
