"""Stress: how far an encoding's position distances are from the target (Hellinger) geometry.

With ``delta_ij`` the encoding's distances and ``D_ij`` the target's, sums over pairs ``i < j``:

* ``"paper"`` (default, the paper's single number): ``sum (delta - D)^2 / sum D^2``. Normalised by
  the target, no square root, no rescaling of the encoding, so it depends on the encoding's scale
  (sinusoidal vectors of norm ``sqrt(d/2)`` score in the hundreds).
* ``"stress1"`` (Kruskal's stress-1): ``sqrt( sum (delta - D)^2 / sum delta^2 )``, the encoding's
  distances in the denominator as in Kruskal (1964). (scikit-learn's ``normalized_stress`` divides
  by the target's distances instead.)
* ``"scale_optimal"``: the paper stress of ``alpha* delta`` with ``alpha* = sum delta D / sum
  delta^2``, the scale that minimises it; equals ``1 - (sum delta D)^2 / (sum delta^2 sum D^2)``.
  Comparable across encodings of different scales. :func:`scale_optimal_stress` also returns
  ``alpha*``.
* ``"raw"``: ``sum (delta - D)^2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._records import FieldRecord
from posgeom._validation import Options, validate_params
from posgeom.scores import registry
from posgeom.scores._encoding import (
    EncodingKind,
    matched_distance_matrices,
)

__all__ = [
    "STRESS_KINDS",
    "StressScores",
    "scale_optimal_stress",
    "stress",
    "stress_from_pair_sample",
    "stress_from_pairs",
    "stress_from_sums",
    "stress_scores",
]

StressKind = Literal["paper", "stress1", "scale_optimal", "raw"]
STRESS_KINDS: tuple[str, ...] = ("paper", "stress1", "scale_optimal", "raw")


@dataclass(frozen=True)
class StressScores(FieldRecord):
    """Every stress kind for one encoding, plus the fitted scale ``alpha*``."""

    paper: float
    stress1: float
    scale_optimal: float
    raw: float
    scale: float


def stress_from_pairs(delta: np.ndarray, target: np.ndarray) -> StressScores:
    """All stress kinds from matched pair distances (1-D arrays over pairs ``i < j``)."""
    delta = np.asarray(delta, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    raw = float(np.sum((delta - target) ** 2))
    sdd, sdt = float(delta @ delta), float(delta @ target)
    scaled = float(np.sum((sdt / sdd * delta - target) ** 2)) if sdd > 0 else None
    return stress_from_sums(raw, float(target @ target), sdd, sdt, scaled_raw=scaled)


def stress_from_sums(
    raw: float, stt: float, sdd: float, sdt: float, *, scaled_raw: float | None = None
) -> StressScores:
    """All stress kinds from ``raw = sum (delta-D)^2``, ``sum D^2``, ``sum delta^2``, ``sum delta D``.

    The scale-optimal stress is ``(raw - 2(alpha-1) sdt + (alpha^2-1) sdd) / stt``, the expansion
    of ``sum (alpha delta - D)^2`` around ``alpha = 1`` (which keeps ``raw``'s accuracy when the
    encoding is already close to the target); ``scaled_raw``, when the pairs are at hand, is
    ``sum (alpha* delta - D)^2`` computed directly.
    """
    raw, stt, sdd, sdt = float(raw), float(stt), float(sdd), float(sdt)
    if stt <= 0:
        raise PosgeomError(
            "the target geometry has all distances zero, so stress is undefined: every position "
            "has the same distribution or, for an estimate, no pair of positions is resolved at "
            "these sample sizes (use more text, a coarser --resolution, or --estimator plugin)"
        )
    paper = raw / stt
    stress1 = float(np.sqrt(raw / sdd)) if sdd > 0 else float("inf")
    if sdd > 0:
        alpha = sdt / sdd
        if scaled_raw is None:
            scaled_raw = max(0.0, raw - 2 * (alpha - 1) * sdt + (alpha**2 - 1) * sdd)
        scale_opt = scaled_raw / stt
    else:  # an encoding with all positions equal: the best scale is irrelevant
        alpha, scale_opt = 0.0, 1.0
    return StressScores(paper=paper, stress1=stress1, scale_optimal=scale_opt, raw=raw, scale=alpha)


def stress_scores(
    encoding: Any, target: Any, *, encoding_kind: EncodingKind = "auto"
) -> StressScores:
    """Every stress kind of ``encoding`` against ``target`` (see the module docstring)."""
    delta, tgt = matched_distance_matrices(encoding, target, encoding_kind=encoding_kind)
    iu = np.triu_indices(delta.shape[0], 1)
    return stress_from_pairs(delta[iu], tgt[iu])


@validate_params(
    {
        "kind": [Options(set(STRESS_KINDS))],
        "encoding_kind": [Options({"auto", "vectors", "distances"})],
    }
)
def stress(
    encoding: Any,
    target: Any,
    *,
    kind: StressKind = "paper",
    encoding_kind: EncodingKind = "auto",
) -> float:
    """Stress of ``encoding`` against the target distances.

    Parameters
    ----------
    encoding : (n, d) vectors, (n, n) distances, or an object with ``.distances``
    target : (n, n) distance matrix (e.g. :func:`~posgeom.hellinger_distances`)
    kind : {"paper", "stress1", "scale_optimal", "raw"}
    """
    return getattr(stress_scores(encoding, target, encoding_kind=encoding_kind), kind)


def scale_optimal_stress(
    encoding: Any, target: Any, *, encoding_kind: EncodingKind = "auto"
) -> tuple[float, float]:
    """``(stress, alpha*)``: the paper stress after the best rescaling of the encoding."""
    s = stress_scores(encoding, target, encoding_kind=encoding_kind)
    return s.scale_optimal, s.scale


def _ratio_ci(num: np.ndarray, den: np.ndarray, z: float) -> tuple[float, float, float]:
    """Ratio of means ``mean(num) / mean(den)`` with a delta-method interval."""
    m = len(num)
    r = num.mean() / den.mean()
    resid = num - r * den
    se = np.sqrt(np.var(resid, ddof=1) / m) / abs(den.mean())
    return float(r), float(r - z * se), float(r + z * se)


def stress_from_pair_sample(
    de: np.ndarray, dt: np.ndarray, z: float, *, n_positions: int
) -> tuple[StressScores, dict[str, tuple[float, float]]]:
    """Every stress kind from ``m`` uniform pairs (encoding ``de``, target ``dt``) with intervals
    at normal quantile ``z``: the paper stress and stress-1 are ratios of means (delta method);
    the scale-optimal stress uses the sample's ``alpha*`` (its interval ignores the uncertainty of
    ``alpha*``, a second-order term); ``raw`` scales the mean by ``n (n - 1) / 2``."""
    pairs_total = n_positions * (n_positions - 1) / 2
    raw_terms = (de - dt) ** 2
    paper, lo, hi = _ratio_ci(raw_terms, dt * dt, z)
    if np.any(de):
        s1, s1_lo, s1_hi = _ratio_ci(raw_terms, de * de, z)
        alpha = float(np.sum(de * dt) / np.sum(de * de))
        so, so_lo, so_hi = _ratio_ci((alpha * de - dt) ** 2, dt * dt, z)
    else:  # every sampled encoding distance is 0 (NoPE): as stress_from_sums
        s1 = s1_lo = s1_hi = float("inf")
        alpha, so, so_lo, so_hi = 0.0, 1.0, 1.0, 1.0
    raw_mean = raw_terms.mean()
    raw_se = raw_terms.std(ddof=1) / np.sqrt(len(raw_terms))
    estimate = StressScores(
        paper=paper,
        stress1=float(np.sqrt(s1)),
        scale_optimal=so,
        raw=float(raw_mean * pairs_total),
        scale=alpha,
    )
    intervals = {
        "paper": (max(0.0, lo), hi),
        "stress1": (float(np.sqrt(max(0.0, s1_lo))), float(np.sqrt(max(0.0, s1_hi)))),
        "scale_optimal": (max(0.0, so_lo), so_hi),
        "raw": (
            float(max(0.0, raw_mean - z * raw_se) * pairs_total),
            float((raw_mean + z * raw_se) * pairs_total),
        ),
    }
    return estimate, intervals


# ----------------------------------------------------------------------------- registry
_CONVENTIONS = {
    "paper": "lower is better (0: delta = D); sum_{i<j} (delta_ij - D_ij)^2 / sum_{i<j} D_ij^2 "
    "against the estimate of the corpus geometry D (no rescaling: depends on the encoding's "
    "scale); range [0, inf)",
    "stress1": "lower is better; Kruskal's sqrt(sum (delta - D)^2 / sum delta^2) (the "
    "encoding's distances in the denominator); range [0, inf), inf when every delta is 0",
    "scale_optimal": "lower is better (0: the geometry of D up to scale, 1: no better than all "
    "positions equal); the paper stress of alpha* delta, alpha* = sum delta D / sum delta^2; "
    "range [0, 1]",
    "raw": "lower is better; sum_{i<j} (delta_ij - D_ij)^2, in squared distance units; "
    "range [0, inf)",
    "scale": "not a quality: alpha* = sum delta D / sum delta^2, the factor that best rescales "
    "the encoding onto D (far from 1: the paper stress is mostly a scale mismatch)",
}
_SHOWN = {  # kind -> its column's header and the tables that show it
    "paper": ("paper stress", registry.TABLES),
    "stress1": ("stress-1", ("scores", "layers")),
    "scale_optimal": ("scale-optimal stress", registry.TABLES),
    "raw": ("raw stress", ("layers",)),
    "scale": ("alpha*", ("scores",)),
}


#: each kind's range: scale-optimal stress is 1 - cos^2 of delta and D (Cauchy-Schwarz), so an
#: interval is clipped to [0, 1]; alpha* is any real; the others are non-negative
_BOUNDS = {"scale_optimal": (0.0, 1.0), "scale": (-np.inf, np.inf)}


def _dense_kind(kind: str) -> Any:
    def score(delta: np.ndarray, target: np.ndarray, *, seed: int = 0) -> dict[str, float]:
        iu = np.triu_indices(delta.shape[0], 1)
        return stress_from_pairs(delta[iu], target[iu]).as_dict()  # every kind: one pass

    score.__doc__ = f"The {kind!r} stress of ``delta`` against ``target`` (module docstring)."
    return score


def _sampled(x: registry.SampledPairs) -> dict[str, Any]:
    """Every stress kind on a pair sample, with its interval: one pass."""
    est, ci = stress_from_pair_sample(
        x.delta_ij, x.sample.target_ij, x.z, n_positions=x.n_positions
    )
    out: dict[str, Any] = est.as_dict()
    out |= {f"{k}_ci": [float(lo), float(hi)] for k, (lo, hi) in ci.items()}
    return out


for _order, _kind in enumerate((*STRESS_KINDS, "scale")):
    registry.register(
        _kind,
        column=(_SHOWN[_kind][0], ".4g"),
        convention=_CONVENTIONS[_kind],
        interval=_kind != "scale",
        better=None if _kind == "scale" else "lower",
        bounds=_BOUNDS.get(_kind, (0.0, np.inf)),
        sampled=_sampled,
        tables=_SHOWN[_kind][1],
        layer_key="" if _kind == "scale" else f"stress_{_kind}",
        order=10 + _order,
    )(_dense_kind(_kind))
