"""Can a lower-variance estimator meet issue 16's Spearman target at 1,000 sequences?

    python -m studies.estimation.variance_reduction [tokenizer ... | stationary | sizes | coverage]
    # writes docs/estimation/variance_reduction.json

:mod:`studies.estimation.resolution_rule` showed that no ``top:K`` rule reaches Spearman 0.9 between the
estimated and the true distances at m = 1,000 sequences: the default (corrected, Euclidean)
estimate sits within 0.02-0.06 of its own noise ceiling ``sqrt(retest)``. This script tries
estimators with less variance per pair, on the same populations, positions, subsamples and
truths (:mod:`studies.estimation.real_population`; truth = the population's Hellinger chords on the estimate's
classes, the auto resolution of the subsample), 3 subsamples of 1,000 sequences each:

* **rank**: the Euclidean estimate truncated to exactly its top ``r`` eigen-directions of
  ``B~`` (``r = 1 .. 24``, also past the noise edge); only the oracle ``r`` (the best against
  the truth, which no rule can know).
* **smoothing over positions** (:mod:`posgeom.estimators.smoothing`): the Euclidean estimate of
  ``J W B~ W^T J``, ``W`` a local-linear kernel over positions with bandwidth ``h_i = a i``;
  the oracle ``a`` of the grid, and ``estimate_geometry(counts, smooth="auto")`` (``a`` by
  split-half cross-validation on the counts alone), scored against the unsmoothed truth.
* the bias-only ceiling of smoothing: the truth smoothed the same way (``J W G W^T J``, ``G``
  the population's centred root Gram) against the truth.

Stationary check (:func:`studies.estimation.real_population.stationary_cases`: one distribution at every position,
samples decaying 10x): per slope the kept rank and median ``D``; for the CV's choice the share
of pairs whose 95% half-sample interval (bias-aware, 100 replicates on the point estimate's
classes and slope) excludes 0, and the Spearman of ``D_ij`` with ``|log T_i - log T_j|``.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

from benchmarks.harness import names
from studies.estimation import real_population as real
from studies.estimation.common import OUT, encodings, quality, spearman
from studies.estimation.real_population import (
    CUT_POPULATIONS,
    SUBSAMPLES,
    M,
    cut_population,
    kept_population,
)

SLOPES = (0.0, 0.03, 0.05, 0.08, 0.12, 0.18, 0.25, 0.35, 0.5)
RANKS = tuple(range(1, 25))


# ----------------------------------------------------------------------------- estimators
def raw_gram(c: sp.csr_matrix) -> np.ndarray:
    """``B~`` of the corrected estimator (posgeom's, dense)."""
    from posgeom import estimate_geometry

    return estimate_geometry(c, resolution="full", euclidean=False).gram.dense()


def null_grams(c: sp.csr_matrix, seed: int = 0) -> list[np.ndarray]:
    """The split-half null Grams ``N0_j`` of the default noise edge (one per draw), dense."""
    from posgeom.estimators.euclidean import null_roots, null_seeds

    out = []
    for s in null_seeds(seed):
        d = null_roots(c, s).toarray()
        g = d @ d.T
        g[np.diag_indices_from(g)] -= np.sum(d * d, axis=1)
        out.append(g)
    return out


def project(
    b: np.ndarray, nulls: list[np.ndarray], rank: int | None = None
) -> tuple[np.ndarray, int]:
    """``(D+, K')``: the eigen-directions of ``b`` above ``max(|λ_min(b)|, max_j λ_1(N0_j))``
    (the default rule), or exactly the top ``rank`` positive ones."""
    vals, vecs = np.linalg.eigh(b)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    if rank is None:
        top = max(np.linalg.eigvalsh(g)[-1] for g in nulls)
        edge = max(-min(vals[-1], 0.0), top, 0.0)
        keep = max(int(np.sum(vals > edge)), 1)
    else:
        keep = max(min(rank, int(np.sum(vals > 0))), 1)
    x = vecs[:, :keep] * np.sqrt(np.maximum(vals[:keep], 0.0))
    sq = np.sum(x * x, axis=1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0))
    np.fill_diagonal(d, 0.0)
    return d, keep


def chords(b: np.ndarray) -> np.ndarray:
    """Clipped chords ``sqrt(max(B_ii + B_jj - 2 B_ij, 0))`` of a (raw) Gram."""
    q = np.diag(b)
    return np.sqrt(np.clip(q[:, None] + q[None, :] - 2.0 * b, 0.0, 2.0))


# ----------------------------------------------------------------------------- one population
def _truth_gram(pop, class_map) -> np.ndarray:
    from posgeom.estimators.transforms import apply_classes

    p = apply_classes(pop, class_map).astype(np.float64)
    p = sp.diags(1.0 / np.asarray(p.sum(axis=1)).ravel()) @ p
    p.data = np.sqrt(p.data)
    return (p @ p.T).toarray()


def _score(d, truth, encs) -> dict:
    q = quality(np.asarray(d), truth, encs)
    return {"spearman": q["rank_corr"], "tau": q["kendall_tau"], "rmse": q["rmse"]}


def _subsample(a: sp.csr_matrix, pop, n: int) -> dict:
    from posgeom import estimate_geometry
    from posgeom.estimators.smoothing import position_smoother, smoothed_gram

    est = estimate_geometry(a)  # the default: corrected, auto resolution, Euclidean
    truth = real.population_truth(pop, est.class_map)
    encs = encodings(n, truth)
    c = est.class_counts
    b, null = raw_gram(c), null_grams(c)
    t0 = time.process_time()
    auto = estimate_geometry(a, smooth="auto")
    out = {
        "resolution": est.resolution,
        "default": _score(est.distances, truth, encs),
        "default_rank": int(est.diagnostics["projection"]["kept_rank"]),
        "raw": _score(chords(b), truth, encs),
        "rank": [_score(project(b, null, r)[0], truth, encs) for r in RANKS],
        "auto": {
            **_score(auto.distances, truth, encs),
            "slope": auto.diagnostics["smoothing"]["slope"],
            "rank": int(auto.diagnostics["projection"]["kept_rank"]),
            "cpu_s": time.process_time() - t0,
        },
        "smooth": [],
        "bias_only": [],
    }
    g = _truth_gram(pop, est.class_map)
    for slope in SLOPES:
        w = position_smoother(n, slope)
        d, k = project(smoothed_gram(b, w), [smoothed_gram(g, w) for g in null])
        out["smooth"].append({**_score(d, truth, encs), "rank": k})
        out["bias_only"].append(_score(chords(smoothed_gram(g, w)), truth, encs)["spearman"])
    return out


def _one(label: str, corpus: str, tokenizer: str) -> dict:
    tokens, n, vocab, pop = kept_population(corpus, tokenizer)
    rng = np.random.default_rng(17)  # the subsamples of studies.estimation.resolution_rule
    subs = []
    for _ in range(SUBSAMPLES):
        pick = rng.choice(tokens.shape[0], 2 * M, replace=False)
        subs.append(_subsample(real.counts_of(tokens[np.sort(pick[:M])], vocab), pop, n))
    s = _summary(subs)
    print(
        f"[vr] {label}: default {s['default']:.3f} / {s['default_tau']:.2f}; oracle rank "
        f"{s['oracle_rank']} {s['oracle_rank_spearman']:.3f}; oracle slope {s['oracle_slope']} "
        f"{s['oracle_slope_spearman']:.3f} / {s['oracle_slope_tau']:.2f}; smooth=auto "
        f"{s['auto']:.3f} / {s['auto_tau']:.2f} (slopes {s['auto_slopes']}); bias-only "
        f"{s['bias_only_at_oracle']:.3f}",
        flush=True,
    )
    return {"n": n, "subsamples": subs, "summary": s}


def _mean(xs) -> float:
    return float(np.mean(xs))


def _summary(subs: list[dict]) -> dict:
    def curve(key: str, what: str = "spearman") -> list[float]:
        return [_mean([s[key][k][what] for s in subs]) for k in range(len(subs[0][key]))]

    rank_curve, smooth_curve = curve("rank"), curve("smooth")
    kr, ks = int(np.argmax(rank_curve)), int(np.argmax(smooth_curve))
    bias = [_mean([s["bias_only"][k] for s in subs]) for k in range(len(SLOPES))]
    return {
        "default": _mean([s["default"]["spearman"] for s in subs]),
        "default_tau": _mean([s["default"]["tau"] for s in subs]),
        "raw": _mean([s["raw"]["spearman"] for s in subs]),
        "rank_curve": rank_curve,
        "oracle_rank": RANKS[kr],
        "oracle_rank_spearman": rank_curve[kr],
        "oracle_rank_tau": curve("rank", "tau")[kr],
        "smooth_curve": smooth_curve,
        "smooth_tau_curve": curve("smooth", "tau"),
        "oracle_slope": SLOPES[ks],
        "oracle_slope_spearman": smooth_curve[ks],
        "oracle_slope_tau": curve("smooth", "tau")[ks],
        "bias_only_curve": bias,
        "bias_only_at_oracle": bias[ks],
        "auto": _mean([s["auto"]["spearman"] for s in subs]),
        "auto_tau": _mean([s["auto"]["tau"] for s in subs]),
        "auto_slopes": [s["auto"]["slope"] for s in subs],
        "auto_cpu_s": _mean([s["auto"]["cpu_s"] for s in subs]),
    }


# ----------------------------------------------------------------------------- stationary check
def stationary(replicates: int = 100) -> dict:
    """Per stationary corpus: kept rank and median D per slope; intervals for no smoothing and
    for the CV's slope."""
    from posgeom import count_positions, estimate_geometry
    from posgeom.estimators.smoothing import position_smoother, smoothed_gram
    from posgeom.synthetic import decaying_totals, sample_sequences, zipf_distributions

    cases = real.stationary_cases(cut_population("imdb", "minilm"))
    mu, totals = (
        zipf_distributions(40, 3000, structure="stationary"),
        decaying_totals(40, high=1000, low=100),
    )
    for seed in range(3):  # a smaller vocabulary, fewer samples: the default's own check is weaker
        label = (
            f"synthetic Zipf, stationary (V 3k, 1,000 -> 100 samples, 40 positions), seed {seed}"
        )
        cases[label] = (sample_sequences(mu, totals, seed=seed), totals, 3000)
    out = {}
    for label, (seqs, totals, vocab) in cases.items():
        n = len(totals)
        boot = count_positions(
            seqs, max_positions=n, vocab_size=vocab, bootstrap=replicates, bootstrap_seed=0
        )
        est = estimate_geometry(boot.base, smooth="auto")
        c = est.class_counts
        iu = np.triu_indices(n, 1)
        b, null = raw_gram(c), null_grams(c)
        rows = []
        for slope in SLOPES:
            w = position_smoother(n, slope)
            d, k = project(smoothed_gram(b, w), [smoothed_gram(g, w) for g in null])
            rows.append({"slope": slope, "rank": k, "median": float(np.median(d[iu]))})
        slope = est.diagnostics["smoothing"]["slope"]
        log_t = np.log(np.asarray(boot.base.totals, dtype=np.float64))
        out[label] = {
            "resolution": est.resolution,
            "auto_slope": slope,
            "auto_rank": int(est.diagnostics["projection"]["kept_rank"]),
            "auto_resolved": bool(est.diagnostics["projection"]["resolved"]),
            "default_resolved": bool(
                estimate_geometry(boot.base).diagnostics["projection"]["resolved"]
            ),
            "rows": rows,
            "none": real.sample_size_structure(boot, "auto", "corrected", log_t),
            "smoothed": real.sample_size_structure(boot, "auto", "corrected", log_t, smooth=slope),
        }
        print(f"[vr stationary] {label}: {out[label]}", flush=True)
    return out


def sizes(ms=(300, 3000, 10000)) -> dict:
    """Default vs ``smooth="auto"`` at other subsample sizes (3 subsamples each): Spearman and
    tau against the truth, the chosen slopes."""
    from posgeom import estimate_geometry

    out: dict = {}
    for label, corpus, tokenizer in CUT_POPULATIONS:
        tokens, n, vocab, pop = kept_population(corpus, tokenizer)
        rng = np.random.default_rng(29)
        for m in ms:
            rows = []
            for _ in range(SUBSAMPLES):
                a = real.counts_of(
                    tokens[np.sort(rng.choice(tokens.shape[0], m, replace=False))], vocab
                )
                plain, smooth = estimate_geometry(a), estimate_geometry(a, smooth="auto")
                truth = real.population_truth(pop, plain.class_map)
                encs = encodings(n, truth)
                rows.append(
                    {
                        "resolution": plain.resolution,
                        "default": _score(plain.distances, truth, encs),
                        "auto": _score(smooth.distances, truth, encs),
                        "slope": smooth.diagnostics["smoothing"]["slope"],
                    }
                )
            cell = {
                f"{k}_{w}": _mean([r[k][w] for r in rows])
                for k in ("default", "auto")
                for w in ("spearman", "tau")
            }
            cell["slopes"] = [r["slope"] for r in rows]
            cell["resolution"] = sorted({r["resolution"] for r in rows})
            out.setdefault(label, {})[str(m)] = cell
            print(f"[vr sizes] {label} m={m}: {cell}", flush=True)
    return out


def coverage(replicates: int = 40) -> dict:
    """Coverage of the exact (unsmoothed) chords by the 95% half-sample intervals (bias-aware),
    default vs the CV's slope pinned, in the coverage study's regime (V 30k, 48 positions,
    3,050 -> 336 samples), 3 seeds per truth; and the intervals' median half-width."""
    from posgeom import count_positions, estimate_geometry
    from posgeom.synthetic import decaying_totals, sample_sequences, zipf_distributions
    from posgeom.uncertainty._intervals import _bounds
    from posgeom.uncertainty.replicates import replicate_geometry

    n, totals = 48, decaying_totals(48)
    iu = np.triu_indices(n, 1)
    out: dict = {}
    for structure, exponent in (("drift", 1.05), ("drift", 1.1), ("three_regimes", 1.1)):
        mu = zipf_distributions(n, 30_000, exponent=exponent, structure=structure)
        rows = []
        for seed in range(3):
            seqs = sample_sequences(mu, totals, seed=seed)
            boot = count_positions(
                seqs, max_positions=n, vocab_size=30_000, bootstrap=replicates, bootstrap_seed=seed
            )
            slope = estimate_geometry(boot.base, smooth="auto").diagnostics["smoothing"]["slope"]
            row = {"slope": slope}
            for name, opts in (("default", {}), ("smoothed", {"smooth": slope})):
                geo = replicate_geometry(boot, estimator_options=opts)
                cmap = estimate_geometry(boot.base, **opts).class_map
                truth = chords(_truth_gram(sp.csr_matrix(mu), cmap))[iu]
                point = geo.estimate[iu]
                low, high, _, _ = _bounds(point, geo.replicates, point, 0.95, "bias_aware")
                row[name] = {
                    "coverage": float(np.mean((low <= truth) & (truth <= high))),
                    "half_width": float(np.median(high - low) / 2),
                }
            rows.append(row)
            print(f"[vr coverage] {structure} {exponent} seed {seed}: {row}", flush=True)
        out[f"{structure}, Zipf {exponent}"] = rows
    return out


# ----------------------------------------------------------------------------- known truths
def known_truths() -> dict:
    """Synthetic Zipf corpora (V 5,000, 48 positions, 300 samples each, 3 seeds): Spearman of
    the default and of ``smooth="auto"`` with the exact chords (on the estimate's classes)."""
    from posgeom import estimate_geometry
    from posgeom.synthetic import sample_counts, zipf_distributions

    out = {}
    iu = np.triu_indices(48, 1)
    for structure in ("drift", "three_regimes", "blocks", "frequent_only"):
        mu = zipf_distributions(48, 5000, structure=structure, seed=1)
        rows = []
        for seed in range(3):
            c = sample_counts(mu, np.full(48, 300), seed=seed)
            plain, smooth = estimate_geometry(c), estimate_geometry(c, smooth="auto")
            truth = chords(_truth_gram(sp.csr_matrix(mu), plain.class_map))[iu]
            rows.append(
                {
                    "default": spearman(np.asarray(plain.distances)[iu], truth),
                    "auto": spearman(np.asarray(smooth.distances)[iu], truth),
                    "slope": smooth.diagnostics["smoothing"]["slope"],
                }
            )
        out[structure] = rows
        print(f"[vr known truth] {structure}: {rows}", flush=True)
    return out


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", message="B has negative eigenvalues")
    t0 = time.perf_counter()
    only = names(__doc__, sys.argv[1:], help="tokenizers, stationary, sizes or coverage")
    res: dict = {"populations": {}, "setup": {"m": M, "subsamples": SUBSAMPLES, "ranks": RANKS}}
    res["setup"]["slopes"] = SLOPES
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    res["load_before"] = os.getloadavg()
    if "coverage" in only:
        res["coverage"] = coverage()
        only = [t for t in only if t != "coverage"] or ["-"]
    if "sizes" in only:
        res["sizes"] = sizes()
        only = [t for t in only if t != "sizes"] or ["-"]
    if not only or "stationary" in only:
        res["known_truths"] = known_truths()
        res["stationary"] = stationary()
        only = [t for t in only if t != "stationary"] or (["-"] if only else [])
    for label, corpus, tokenizer in CUT_POPULATIONS:
        if only and tokenizer not in only:
            continue
        res["populations"][label] = _one(label, corpus, tokenizer)
    res["cpu_seconds"] = time.process_time()
    res["seconds"] = time.perf_counter() - t0
    path = OUT / "variance_reduction.json"
    old = json.loads(path.read_text()) if path.exists() else {"populations": {}}
    res["populations"] = {**old["populations"], **res["populations"]}
    res.setdefault("stationary", old.get("stationary"))
    res.setdefault("known_truths", old.get("known_truths"))
    res.setdefault("sizes", old.get("sizes"))
    res.setdefault("coverage", old.get("coverage"))
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {path} in {res['seconds']:.0f} s ({res['cpu_seconds']:.0f} s CPU)")


if __name__ == "__main__":
    main()
