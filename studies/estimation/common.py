"""What the estimation study's scripts share: the synthetic regimes and the encodings scored on
them, the estimate at the study's resolution, and the quality of an estimate against a truth
(RMSE, Spearman, Procrustes of the rank-8 MDS, Kendall tau of the 8 encodings' ranking).
"""

from __future__ import annotations

import numpy as np

from studies._common import DATA, DOCS

#: the data files of docs/ESTIMATION.md
OUT = DOCS / "estimation"
IMDB = DATA / "imdb" / "train.jsonl.gz"

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
    from posgeom.uncertainty.replicates import estimate_distances

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
    from posgeom.encodings import rope_heads

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


# ----------------------------------------------------------------------------- coverage
DEFAULT_RESOLUTION = "default (auto resolution)"  # the default estimate's coverage row


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of ``a`` and ``b`` (``scipy.stats.spearmanr``), 0 when either is constant."""
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic) if a.std() > 0 and b.std() > 0 else 0.0
