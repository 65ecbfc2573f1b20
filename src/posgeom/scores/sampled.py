"""Every registered score of an encoding at long contexts, without an ``(n, n)`` matrix.

One :class:`PairSample` is drawn per target (seeded): ``m`` uniform triples ``(i, j, k)``
(:func:`posgeom.scores.order.draw_triples`), the target's distances at ``(i, j)`` and ``(i, k)``
from its ``pairs(i, j)`` (a *blocks target*: :class:`posgeom.scores.large.DenseTarget`,
:class:`posgeom.geometry.divergences.HellingerBlocks`, or an estimate's blocks), and the same at
``(i, j)`` for targets shown beside it (the plug-in). Every encoding is then scored on the same
draws (common random numbers: differences between encodings are estimated more precisely than
each score), by each registered score's ``sampled`` form (:mod:`posgeom.scores.registry`; a
score without one is left out of sampled rows): the stress kinds as ratio estimators over the
pairs ``(i, j)`` with delta-method intervals, the violation rate over the triples with a Wilson
interval, the separation exact or an upper bound
(:func:`~posgeom.scores.order.separation_at_scale`). Encodings are read through
:func:`encoding_pairs`, never through an ``(n, n)`` matrix they do not already hold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtri

from posgeom._errors import PosgeomError
from posgeom.scores import registry
from posgeom.scores._encoding import encoding_pairs, n_positions_of
from posgeom.scores.order import (
    draw_triples,
)
from posgeom.scores.stress import stress_from_pair_sample

__all__ = [
    "DEFAULT_SAMPLE",
    "PairSample",
    "draw_pair_sample",
    "sampled_scores",
    "sampled_scores_by_target",
    "target_pairs",
]

#: the name of the target a sample's scores are about (the targets beside it have their own)
PRIMARY = "target"
DEFAULT_SAMPLE = 100_000  # triples (and so pairs) per target: intervals of a few 1e-3
_CHUNK = 50_000
log = logging.getLogger("posgeom")


@dataclass(frozen=True, eq=False)
class PairSample:
    """Drawn triples and the target's distances at them (see the module docstring).

    ``i, j, k`` (m,): anchors, first and second partners; ``target_ij``, ``target_ik`` (m,);
    ``beside``: other targets' distances at ``(i, j)``, by name.
    """

    n_positions: int
    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    target_ij: np.ndarray
    target_ik: np.ndarray
    seed: int
    confidence: float
    beside: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(self.i.size)


def draw_pair_sample(
    target: Any,
    *,
    size: int = DEFAULT_SAMPLE,
    seed: int = 0,
    confidence: float = 0.95,
    beside: dict[str, Any] | None = None,
) -> PairSample:
    """Draw ``size`` triples (``default_rng(seed)``) and evaluate ``target`` (and each target of
    ``beside``) there; ``target`` is a blocks target (``n_positions``, ``pairs(i, j)``)."""
    n = int(target.n_positions)
    if n < 3:
        raise PosgeomError(f"sampled scores need at least 3 positions, got {n}")
    if not 0 < confidence < 1:
        raise PosgeomError(f"confidence must be in (0, 1), got {confidence}")
    i, j, k = draw_triples(n, int(size), np.random.default_rng(seed))
    jobs = [("target", target, np.concatenate([i, i]), np.concatenate([j, k]))]
    jobs += [(name, t, i, j) for name, t in (beside or {}).items()]
    total = sum(a.size for _, _, a, _ in jobs)
    done, got = 0, {}
    for name, t, a, b in jobs:
        got[name] = target_pairs(t, a, b, progress=(done, total))
        done += a.size
    both = got.pop("target")
    return PairSample(n, i, j, k, both[: i.size], both[i.size :], int(seed), confidence, got)


def target_pairs(
    target: Any,
    i: np.ndarray,
    j: np.ndarray,
    *,
    label: str = "target distances at sampled pairs",
    progress: tuple[int, int] | None = None,
) -> np.ndarray:
    """``target.pairs(i, j)`` (float64) in chunks of :data:`_CHUNK` pairs, logging ``label:
    done/total`` after each (``progress = (done before, total)`` when part of a larger job)."""
    done, total = progress or (0, int(np.size(i)))
    parts = []
    for lo in range(0, np.size(i), _CHUNK):
        parts.append(np.asarray(target.pairs(i[lo : lo + _CHUNK], j[lo : lo + _CHUNK]), float))
        done += parts[-1].size
        if total > _CHUNK:
            log.info("%s: %d/%d", label, done, total)
    return np.concatenate(parts) if parts else np.empty(0)


def sampled_scores(
    encoding: Any, sample: PairSample, *, separation: bool = True, names: Any = None
) -> dict[str, Any]:
    """Every registered score with a sampled form (or those of ``names``) on ``sample`` against
    its target, with ``<kind>_ci`` intervals, ``sampled: True``, ``n_sampled_pairs`` and
    ``separation_kind`` (``separation=False`` leaves the separation out)."""
    return sampled_scores_by_target(encoding, sample, separation=separation, names=names)[PRIMARY]


def sampled_scores_by_target(
    encoding: Any, sample: PairSample, *, separation: bool = True, names: Any = None
) -> dict[str, dict[str, Any]]:
    """``{target: scores}`` on one sample: :func:`sampled_scores` under :data:`PRIMARY`, and for
    each target of ``sample.beside`` its ``paper`` and ``scale_optimal`` stress (the encoding's
    distances at the pairs read once for all of them)."""
    n = sample.n_positions
    got = n_positions_of(encoding)
    if got is not None and got != n:
        raise PosgeomError(
            f"the encoding has {got} positions but the target geometry has {n}; use the same "
            "positions"
        )
    de_ij = encoding_pairs(encoding, sample.i, sample.j)
    de_ik = encoding_pairs(encoding, sample.i, sample.k)
    if not (np.all(np.isfinite(de_ij)) and np.all(np.isfinite(de_ik))):
        raise PosgeomError("the encoding contains NaN or Inf")
    z = float(ndtri(0.5 + sample.confidence / 2))
    if names is None:
        names = [s for s in registry.available() if separation or s != "separation"]
    pairs = registry.SampledPairs(encoding, sample, de_ij, de_ik, z)
    out = {PRIMARY: registry.sampled_row(pairs, names)}
    out[PRIMARY] |= {"sampled": True, "n_sampled_pairs": sample.size}
    for name, t in sample.beside.items():
        s, _ = stress_from_pair_sample(de_ij, t, z, n_positions=n)
        out[name] = {"paper": s.paper, "scale_optimal": s.scale_optimal}
    return out
