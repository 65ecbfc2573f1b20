"""Probes of absolute position from per-token hidden states, layer by layer (Haviv et al. 2022,
"Transformer Language Models without Positional Encodings Still Learn Positional Information",
arXiv 2203.16634: a probe per layer, tested on held-out sequences).

On the token sample of :mod:`posgeom.probes.corpus_pass` (uniform over positions), for every layer
``l`` and every fold of ``K`` held-out sequence groups (:func:`~posgeom.probes.fitting.group_kfold`):

* **linear**: features standardised on the training fold, ``Ridge(alpha=1)``
  (:func:`~posgeom.probes.fitting.least_squares`), prediction of the position ``i``;
* **mlp**: the linear probe plus a small MLP fitted to its residual: the standardised training
  fold's first ``min(64, d)`` principal components (scaled by the first one's spread), one
  hidden layer of 32 GELU units (float32), squared error on the residual scaled to unit
  variance, full-batch Adam (lr 0.01, at most 200 steps, torch seeded with ``seed``), early
  stopped on a fifth of the training sequences held out (every 10 steps); when no step beats the
  linear probe there, the MLP adds nothing;

each scored by the rounded MAE on the held-out fold, in positions. ``chance``: the MAE of always
predicting the training fold's median position. The interval is over the folds
(:func:`~posgeom.probes.estimate.interval_over_seeds` with one seed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.probes.estimate import interval_dict, interval_over_seeds
from posgeom.probes.fitting import group_kfold, least_squares, rounded_mae
from posgeom.uncertainty._intervals import Interval

__all__ = ["PROBE_KINDS", "LayerProbes", "check_kinds", "probe_layers"]

PROBE_KINDS = ("linear", "mlp")
MLP_WIDTH = 32
MLP_COMPONENTS = 64
MLP_STEPS = 200


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, sd = train.mean(axis=0), train.std(axis=0)
    sd = np.where(sd > 1e-12 * max(1.0, float(sd.max(initial=0.0))), sd, 1.0)
    return (train - mean) / sd, (test - mean) / sd


def linear_probe(x_train, y_train, x_test) -> np.ndarray:
    """Ridge(alpha=1) on standardised features; predictions ``(m_test,)``."""
    a, b = _standardise(x_train, x_test)
    return least_squares(a, y_train, alpha=1.0).predict(b)


def _train_mlp(xt, yt, xv, yv, seed: int) -> Any:
    """Full-batch Adam on ``(xt, yt)``; the weights of the step with the lowest validation
    loss on ``(xv, yv)`` (checked every 10 steps), or ``None`` when no step beats predicting 0."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(xt.shape[1], MLP_WIDTH), torch.nn.GELU(), torch.nn.Linear(MLP_WIDTH, 1)
        )
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    best, best_state = float(torch.mean(yv**2)), None  # predicting 0: the linear probe alone
    with torch.enable_grad():
        for step in range(MLP_STEPS):
            opt.zero_grad()
            torch.mean((net(xt) - yt) ** 2).backward()
            opt.step()
            if step % 10 == 9:
                with torch.no_grad():
                    val = float(torch.mean((net(xv) - yv) ** 2))
                if val < best:
                    best, best_state = val, {k: v.clone() for k, v in net.state_dict().items()}
    if best_state is None:
        return None
    net.load_state_dict(best_state)
    return net


def mlp_probe(x_train, y_train, x_test, *, seed: int = 0, groups=None) -> np.ndarray:
    """The small MLP of the module docstring, on top of the linear probe; predictions
    ``(m_test,)`` in positions. ``groups``: the training rows' sequences (the early-stopping
    split holds out whole sequences)."""
    import torch

    a, b = _standardise(x_train, x_test)
    linear = least_squares(a, y_train, alpha=1.0)
    lam, vectors = np.linalg.eigh(a.T @ a)  # principal directions of the standardised fold
    k = min(MLP_COMPONENTS, a.shape[1])
    project = vectors[:, ::-1][:, :k] / np.sqrt(max(float(lam[-1]), 1e-12) / len(a))
    residual = np.asarray(y_train, dtype=np.float64) - linear.predict(a)
    spread = max(float(residual.std()), 1e-12)
    groups = np.arange(len(a)) if groups is None else np.asarray(groups)
    held = np.zeros(len(a), dtype=bool)
    held[group_kfold(groups, 5, seed + 7)[0]] = True  # a fifth of the sequences
    x32 = torch.from_numpy((a @ project).astype(np.float32))
    y32 = torch.from_numpy((residual / spread).astype(np.float32))[:, None]
    keep, val = torch.from_numpy(~held), torch.from_numpy(held)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: extra threads only wait (20x slower when loaded)
    try:
        net = _train_mlp(x32[keep], y32[keep], x32[val], y32[val], seed)
    finally:
        torch.set_num_threads(threads)
    if net is None:
        return linear.predict(b)
    with torch.no_grad():
        out = net(torch.from_numpy((b @ project).astype(np.float32)))
    return linear.predict(b) + out[:, 0].numpy().astype(np.float64) * spread


_FITS: dict[str, Callable[..., np.ndarray]] = {"linear": linear_probe, "mlp": mlp_probe}


@dataclass(frozen=True, eq=False)
class LayerProbes:
    """Per layer and probe kind: the MAE interval and the ``(1, K)`` fold values; the chance
    MAE per layer (the same for every layer: it depends on the positions only)."""

    mae: dict[str, list[Interval]]
    values: dict[str, np.ndarray]  # kind -> (L+1, K)
    chance: float
    protocol: dict[str, Any]

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for layer in range(next(iter(self.values.values())).shape[0]):
            row: dict[str, Any] = {"layer": layer}
            for kind, intervals in self.mae.items():
                row[f"{kind}_mae"] = interval_dict(intervals[layer], self.values[kind][layer][None])
            out.append(row)
        return out


def check_kinds(kinds: Any) -> tuple[str, ...]:
    """``kinds`` as a tuple of layer probes: a list (not one string) of distinct names of
    :data:`PROBE_KINDS`, at least one; one-line refusals naming the names."""
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, (list, tuple)):
        raise PosgeomError(
            f"kinds must be a list of layer probes such as ['linear'] (of {list(PROBE_KINDS)}), "
            f"not a {type(kinds).__name__} {kinds!r}"
        )
    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        raise PosgeomError(
            f"kinds must be distinct layer probes of {', '.join(PROBE_KINDS)}, at least one, "
            f"got {', '.join(map(str, kinds)) or 'none'}"
        )
    return tuple(kinds)


def probe_layers(
    states: np.ndarray,
    positions: np.ndarray,
    sequences: np.ndarray,
    *,
    kinds: tuple[str, ...] = PROBE_KINDS,
    folds: int = 5,
    seed: int = 0,
    level: float = 0.95,
    progress: bool = False,
) -> LayerProbes:
    """Every probe of ``kinds`` on every layer of ``states`` ``(L+1, R, d)`` (module docstring)."""
    from posgeom._progress import progress_bar  # whole lines when not a terminal

    y = np.asarray(positions, dtype=np.float64)
    groups = np.asarray(sequences)
    tests = group_kfold(groups, folds, seed)
    trains = [np.setdiff1d(np.arange(y.size), t, assume_unique=True) for t in tests]
    split = zip(tests, trains, strict=True)  # chance: the training fold's median, every fold
    chance = float(
        np.mean([rounded_mae(y[t], np.full(t.size, np.median(y[tr]))) for t, tr in split])
    )
    layers = states.shape[0]
    values = {kind: np.empty((layers, folds)) for kind in kinds}
    bar = progress_bar(
        total=layers * len(kinds), disable=not progress, unit="probe", desc="layer probes"
    )
    try:
        for layer in range(layers):
            x = np.asarray(states[layer], dtype=np.float64)
            for kind in kinds:
                for f, (test, train) in enumerate(zip(tests, trains, strict=True)):
                    extra = {"seed": seed + f, "groups": groups[train]} if kind == "mlp" else {}
                    pred = _FITS[kind](x[train], y[train], x[test], **extra)
                    values[kind][layer, f] = rounded_mae(y[test], pred)
                bar.update()
    finally:
        bar.close()
    mae = {
        kind: [interval_over_seeds(v[None], level=level) for v in values[kind]] for kind in kinds
    }
    protocol = {
        "sample": "per position, min(per_position, sequences reaching it) sequences drawn "
        "without replacement; the tokens at that position",
        "tokens": int(y.size),
        "folds": int(folds),
        "held_out": "whole sequences (group K-fold)",
        "linear": "standardised features, Ridge(alpha=1)",
        "mlp": f"linear probe + MLP on its residual: PCA to min({MLP_COMPONENTS}, d), {MLP_WIDTH} GELU "
        f"units, Adam lr 0.01, <= {MLP_STEPS} full-batch steps, early stopped on held-out sequences",
        "error": "mean |round(prediction) - position| on held-out sequences",
        "chance": "always the training fold's median position",
        "seed": int(seed),
        "level": float(level),
        "interval": "t over folds",
    }
    return LayerProbes(mae=mae, values=values, chance=chance, protocol=protocol)
