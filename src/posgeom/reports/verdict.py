"""The verdict in plain words: how much of the geometry is above the noise, whether the ranking
of encodings is stable, and what to do when it is not.

Rules (stated so a reader can check them):

* **Noise.** ``share`` = fraction of pairs ``i < j`` with ``D_ij`` above twice their noise floor
  (``noise_floor.trusted_pair_share``). ``share >= 0.8``: most of the geometry is above the noise;
  ``0.3 <= share < 0.8``: part of it; below: most of it is sampling noise. The floor falls like
  ``1 / sqrt(samples)``, so halving it needs about four times the data.
* **Ranking.** Encodings are ranked by scale-optimal stress (shape). With intervals
  (``scale_optimal_ci``, from the bootstrap) two neighbours are *separated* when their intervals
  do not overlap; the ranking is stable when every neighbour pair is. Without intervals the
  verdict says the stability is not measured and gives the relative gap of the top two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from posgeom.encodings import families_with_role, role_of
from posgeom.estimators.resolution import describe_resolution
from posgeom.reports.schema import interval

__all__ = ["noise_verdict", "one_line", "ranking_verdict", "verdict"]


def noise_verdict(noise: dict[str, Any] | None, samples: dict[str, Any] | None) -> list[str]:
    """Sentences on the noise floor (empty when no noise floor was estimated)."""
    if not noise:
        return [
            "No noise floor was estimated (input without counts, or --noise none), so how much "
            "of the geometry is sampling noise is unknown."
        ]
    share = float(noise.get("trusted_pair_share", 0.0))
    untrusted = list(noise.get("untrusted_positions", []))
    if share >= 0.8:
        head = f"Most of the geometry is above the noise: {100 * share:.0f}% of position pairs are "
    elif share >= 0.3:
        head = f"Only part of the geometry is above the noise: {100 * share:.0f}% of position pairs are "
    else:
        head = f"Most of the geometry is sampling noise: only {100 * share:.0f}% of position pairs are "
    out = [head + "farther apart than twice what sampling alone would give."]
    if untrusted:
        shown = ", ".join(map(str, untrusted[:12])) + (" ..." if len(untrusted) > 12 else "")
        what = "position has" if len(untrusted) == 1 else "positions have"
        out.append(f"{len(untrusted)} {what} mostly untrusted distances: {shown}.")
    if share < 0.8:
        low = (samples or {}).get("min")
        more = f" (the fewest samples at a position: {low:g})" if low is not None else ""
        out.append(
            "What to do: more data (the floor falls like 1/sqrt(samples): 4x the sequences halve "
            f"it){more}; pool positions into bins or coarsen n (see `posgeom lengths`); or drop "
            "sparse positions with --min-samples K --below-min drop."
        )
    return out


def _ranked(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = [r for r in rows if r.get("scale_optimal") is not None]
    return sorted(keep, key=lambda r: float(r["scale_optimal"]))


def _is_candidate(name: str) -> bool:
    """A row ranked among the candidates: not a baseline, not fitted to the geometry (the
    families' roles, :attr:`posgeom.encodings.Family.role`)."""
    return role_of(name) == "candidate"


def ranking_verdict(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Sentences on the ranking by scale-optimal stress: which encoding is closest in shape,
    whether a baseline (random, nope) does as well, and whether the ranking is stable."""
    everything = _ranked(rows)
    ranked = [r for r in everything if _is_candidate(str(r["encoding"]))]
    if len(ranked) < 2:
        return []
    names = [str(r["encoding"]) for r in ranked]
    so = [float(r["scale_optimal"]) for r in ranked]
    out = [
        f"By shape (scale-optimal stress) the closest encoding is {names[0]} ({so[0]:.3g}), "
        f"then {names[1]} ({so[1]:.3g})."
    ]
    base = {str(r["encoding"]): float(r["scale_optimal"]) for r in everything}
    beating = [b for b in families_with_role("baseline") if b in base and base[b] <= so[0]]
    if beating:
        out.append(
            f"But the {' and '.join(beating)} baseline does as well or better "
            f"({', '.join(f'{b} {base[b]:.3g}' for b in beating)}): D is close to all distances "
            "equal (flat, as sampling noise makes it), which any near-constant encoding fits "
            "after rescaling; judge shapes only on a geometry above the noise."
        )
    else:
        worse = [n for n, v in zip(names, so, strict=True) if _worse_than_baselines(base, v)]
        if worse:
            out.append(
                f"No better than a baseline ({' or '.join(families_with_role('baseline'))}) on "
                "shape: " + ", ".join(worse) + "."
            )
    cis = [interval(r, "scale_optimal") for r in ranked]
    if all(ci is not None for ci in cis):
        ties = [
            f"{names[i]} / {names[i + 1]}"
            for i in range(len(ranked) - 1)
            if cis[i][1] >= cis[i + 1][0]  # type: ignore[index]
        ]
        if ties:
            out.append(
                "The ranking is not stable: the intervals overlap for " + ", ".join(ties) + ". "
                "More data, or pooling positions, narrows them."
            )
        else:
            out.append("The ranking is stable: no two neighbours' intervals overlap.")
    else:
        gap = (so[1] - so[0]) / max(so[1], 1e-300)
        out.append(
            f"Its lead over {names[1]} is {100 * gap:.0f}% of the latter's stress; no intervals "
            "were computed (count with --bootstrap B for them), so whether the ranking would "
            "survive another sample is not measured."
        )
    return out


def _worse_than_baselines(base: dict[str, float], value: float) -> bool:
    known = [base[b] for b in families_with_role("baseline") if b in base]
    return bool(known) and value >= min(known)


def _estimator_verdict(view: Any) -> list[str]:
    """How far the estimate used is from the plug-in (the paper's estimator), pair by pair."""
    import numpy as np

    a = view.arrays
    if "plugin_hellinger" not in a or "hellinger" not in a:
        return []
    iu = np.triu_indices_from(a["hellinger"], 1)
    plug, used = a["plugin_hellinger"][iu], a["hellinger"][iu]
    keep = plug > 0
    if not np.any(keep):
        return []
    ratio = float(np.median(used[keep] / plug[keep]))
    est = view.geometry.get("estimator")
    name = est.get("estimator", "the estimate") if isinstance(est, dict) else "the estimate"
    return [
        f"The distances are the {name} estimator's; the plug-in (the paper's) puts them higher: "
        f"the median pair is at {100 * ratio:.0f}% of its plug-in value"
        + (", so most of the plug-in distance is sampling bias." if ratio < 0.5 else ".")
    ]


def verdict(view: Any) -> list[str]:
    """The verdict paragraphs of a :class:`~posgeom.reports.view.ResultView`."""
    samples = view.geometry.get("samples_per_position")
    out = noise_verdict(view.noise, samples) if view.geometry or view.noise else []
    out += ranking_verdict(view.rows)
    u = view.uncertainty
    if u:
        firsts = sorted(
            ((r.get("p_first") or 0.0, str(r["encoding"])) for r in view.rows), reverse=True
        )
        top = ", ".join(f"{name} {100 * p:.0f}%" for p, name in firsts[:3] if p > 0)
        out.append(
            f"Over {u['n_replicates']} bootstrap replicates the ranking agrees with this one at "
            f"Kendall tau {u['ranking_stability']:.2f} (1 = always the same); first place: {top}. "
            f"Intervals: {100 * u['level']:.0f}% {u['method']}."
        )
    out += _estimator_verdict(view)
    mds = next((r for r in view.rows if r.get("encoding") == "mds"), None)
    if mds is not None and view.rank_curve:
        low = next((c for c in view.rank_curve if float(c.get("paper", 1.0)) < 0.01), None)
        if low is not None:
            out.append(
                f"A rank-{low['rank']} MDS encoding already reaches paper stress "
                f"{float(low['paper']):.2g} with {low['parameters']:,} parameters "
                f"(a full table has {low['full_parameters']:,})."
            )
    return out


def _layer_phrase(layers: Sequence[dict[str, Any]]) -> str | None:
    key = "stress_scale_optimal"
    rows = [r for r in layers if r.get(key) is not None]
    if not rows:
        return None
    best = min(rows, key=lambda r: float(r[key]))
    ci = interval(best, key)
    shown = f"{float(best[key]):.3g}" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
    return f"the positional signal is closest in shape at layer {best['layer']} ({shown})"


def _ranking_phrase(rows: Sequence[dict[str, Any]], uncertainty: dict[str, Any] | None) -> str:
    ranked = [r for r in _ranked(rows) if _is_candidate(str(r["encoding"]))]
    if len(ranked) < 2:
        return ""
    first, second = str(ranked[0]["encoding"]), str(ranked[1]["encoding"])
    a, b = interval(ranked[0], "scale_optimal"), interval(ranked[1], "scale_optimal")
    if a is None or b is None:
        how = "stability not measured: count with --bootstrap B"
    else:
        how = "separated by the intervals" if a[1] < b[0] else "not separated by the intervals"
        if uncertainty:
            how += f", ranking stability {float(uncertainty['ranking_stability']):.2f}"
    return f"closest in shape: {first}, then {second} ({how})"


def one_line(view: Any) -> str:
    """The verdict as one line for the terminal: the estimator, how much of the geometry is above
    the noise, the closest encoding (or layer) and whether that is stable, and what to do."""
    est = view.geometry.get("estimator")
    name = est.get("estimator") if isinstance(est, dict) else est
    parts = [
        f"target D: {name} estimator" if name else "target D: as given (estimator not recorded)"
    ]
    resolution = est.get("resolution") if isinstance(est, dict) else None
    if name and resolution:
        parts[0] += f", geometry of {describe_resolution(resolution)}"
    share = None if not view.noise else float(view.noise.get("trusted_pair_share", 0.0))
    if share is None:
        parts.append("noise floor not estimated")
    else:
        grade = "most" if share >= 0.8 else ("part" if share >= 0.3 else "little")
        parts.append(f"{100 * share:.0f}% of pairs above twice the noise floor ({grade} of it)")
    phrase = (
        _layer_phrase(view.layers) if view.layers else _ranking_phrase(view.rows, view.uncertainty)
    )
    if phrase:
        parts.append(phrase)
    if (share is not None and share < 0.8) or "not separated" in (phrase or ""):
        parts.append("to firm it up: more data, pool positions or coarsen the vocabulary")
    return "verdict: " + "; ".join(parts) + "."
