"""The statistics of the pretraining study, from the grid's records (one dict per run).

Per corpus and objective (a *cell*), over the arms (encodings) with records for the same seeds:

- :func:`score_correlations`: Spearman rho between each score computed before training (and the
  scale-optimal stress after training) and the validation loss, over the arms' means, with a 95%
  percentile interval from a bootstrap that resamples the seeds within every arm and a two-sided
  permutation p-value (:func:`posgeom.training.rank_correlation`). A positive rho means: the lower
  the stress, the lower the loss, which is what the paper's claim predicts;
- :func:`paired_difference`: validation loss of the MDS-initialised learned table minus the default
  learned table, per seed (the same data order and body weights), mean and a t interval (df =
  seeds - 1) and a seed bootstrap interval;
- :func:`first_choice`: the arm of lowest mean stress (ties listed) and its rank by mean loss;
- :func:`length_correlation`: over the arms that run at any length, rho between the lag stress at
  ``4 L`` and the validation loss of the positions past ``L`` in ``4 L`` windows.

Statistics in float64.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from posgeom.encodings.mds import MDSFamily
from posgeom.training import rank_correlation

#: (label, path into a record) of the scores correlated with the loss
SCORES = (
    ("paper stress", ("before", "recommended", "paper")),
    ("scale-optimal stress", ("before", "recommended", "scale_optimal")),
    ("paper stress (plug-in)", ("before", "plugin", "paper")),
    ("scale-optimal stress (plug-in)", ("before", "plugin", "scale_optimal")),
    ("lag stress, paper", ("before", "lag", "paper")),
    ("lag stress, scale-optimal", ("before", "lag", "scale_optimal")),
    ("worst per-position stress", ("before", "recommended", "per_position_max")),
    ("monotonicity violation rate", ("before", "recommended", "violation_rate")),
    ("scale-optimal stress after training", ("after", "recommended", "scale_optimal")),
)
HEADLINE = "scale-optimal stress"
#: arms outside the correlations: the control (the MDS table at the token embeddings' scale)
CONTROLS = ("mds_scaled",)
N_BOOT = 2000


def get(record: dict[str, Any], path: tuple[str, ...]) -> float:
    out: Any = record
    for key in path:
        out = out[key]
    return float(out)


def cells(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """``(corpus, objective) -> arm -> records sorted by seed``."""
    out: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        out[r["corpus"], r["objective"]][r["arm"]].append(r)
    for arms in out.values():
        for runs in arms.values():
            runs.sort(key=lambda r: r["seed"])
    return {k: dict(v) for k, v in out.items()}


def complete(arms: dict[str, list[dict]]) -> tuple[dict[str, list[dict]], list[int]]:
    """The arms that hold every seed any arm holds fully, restricted to the common seeds."""
    seeds = sorted({r["seed"] for runs in arms.values() for r in runs})
    have = {a: {r["seed"] for r in runs} for a, runs in arms.items()}
    common = [s for s in seeds if sum(s in h for h in have.values()) == len(arms)]
    kept = {a: [r for r in runs if r["seed"] in common] for a, runs in arms.items()}
    return {a: v for a, v in kept.items() if v}, common


def score_correlations(
    arms: dict[str, list[dict]], loss: str = "validation_loss", n_boot: int = N_BOOT
) -> dict:
    names = list(arms)
    losses = [[r[loss] for r in arms[a]] for a in names]
    out = {}
    for label, path in SCORES:
        vals = [[get(r, path) for r in arms[a]] for a in names]
        out[label] = rank_correlation(vals, losses, n_boot=n_boot, seed=0).as_dict()
    return out


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    from scipy.stats import t

    if d.size < 2:
        return float("nan"), float("nan")
    half = float(t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return float(d.mean() - half), float(d.mean() + half)


def paired_difference(arms: dict[str, list[dict]], a: str, b: str) -> dict[str, Any] | None:
    """Validation loss of ``a`` minus ``b`` on the seeds both hold (module docstring)."""
    if a not in arms or b not in arms:
        return None
    la = {r["seed"]: r["validation_loss"] for r in arms[a]}
    lb = {r["seed"]: r["validation_loss"] for r in arms[b]}
    seeds = sorted(set(la) & set(lb))
    d = np.array([la[s] - lb[s] for s in seeds], dtype=np.float64)
    rng = np.random.default_rng(0)
    boots = d[rng.integers(0, d.size, (N_BOOT, d.size))].mean(axis=1)
    lo, hi = _t_interval(d)
    return {
        "seeds": seeds,
        "differences": d.tolist(),
        "mean": float(d.mean()),
        "t_low": lo,
        "t_high": hi,
        "boot_low": float(np.quantile(boots, 0.025)),
        "boot_high": float(np.quantile(boots, 0.975)),
    }


def means(arms: dict[str, list[dict]], path: tuple[str, ...] | str) -> dict[str, float]:
    if isinstance(path, str):
        return {a: float(np.mean([r[path] for r in runs])) for a, runs in arms.items()}
    return {a: float(np.mean([get(r, path) for r in runs])) for a, runs in arms.items()}


def first_choice(arms: dict[str, list[dict]]) -> dict[str, Any]:
    """The arms of lowest mean scale-optimal stress (within 1e-9) and where they rank by loss."""
    stress = means(arms, ("before", "recommended", "scale_optimal"))
    loss = means(arms, "validation_loss")
    low = min(stress.values())
    chosen = sorted(a for a, s in stress.items() if s <= low + 1e-9)
    order = sorted(loss, key=loss.get)
    return {
        "by_stress": chosen,
        "best_by_loss": order[0],
        "ranks_by_loss": {a: order.index(a) + 1 for a in chosen},
        "n_arms": len(order),
    }


def length_correlation(arms: dict[str, list[dict]], n_boot: int = N_BOOT) -> dict[str, Any] | None:
    ext = {a: runs for a, runs in arms.items() if "loss_4x_beyond" in runs[0]}
    if len(ext) < 3:
        return None
    names = list(ext)
    losses = [[r["loss_4x_beyond"] for r in ext[a]] for a in names]
    beyond = means(ext, "loss_4x_beyond")
    out: dict[str, Any] = {"arms": names, "best": min(beyond, key=beyond.get)}
    for kind in ("paper", "scale_optimal"):
        vals = [[r["before"]["lag_4x"][kind] for r in ext[a]] for a in names]
        out[kind] = rank_correlation(vals, losses, n_boot=n_boot, seed=0).as_dict()
    return out


def analyse(
    records: list[dict[str, Any]], n_boot: int = N_BOOT
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every statistic of the module docstring, per cell with >= 3 arms; ``n_boot`` bootstrap
    replicates per interval."""
    out = {}
    for key, every in sorted(cells(records).items()):
        arms_all = {a: v for a, v in every.items() if a not in CONTROLS}
        arms, seeds = complete(arms_all)
        if len(arms) < 3 or not seeds:
            continue
        out[key] = {
            "arms": arms,
            "seeds": seeds,
            "correlations": score_correlations(arms, n_boot=n_boot),
            "test_correlation": score_correlations(arms, "test_loss", n_boot)[HEADLINE],
            "mds_init_vs_learned": paired_difference(arms, "learned_mds_init", "learned"),
            "first_choice": first_choice(arms),
            "length": length_correlation(arms, n_boot),
            "control": _control(every, arms),
        }
    return out


def _control(every: dict[str, list[dict]], arms: dict[str, list[dict]]) -> dict[str, Any] | None:
    """The control arm against the fixed tables (paired by seed) and its rank by loss."""
    if "mds_scaled" not in every:
        return None
    both = {**arms, "mds_scaled": every["mds_scaled"]}
    loss = means(both, "validation_loss")
    order = sorted(loss, key=loss.get)
    return {
        "vs": {
            b: paired_difference(both, "mds_scaled", b)
            for b in (MDSFamily.name, "sinusoidal", "nope")
        },
        "rank": order.index("mds_scaled") + 1,
        "n_arms": len(order),
        "loss": loss["mds_scaled"],
    }
