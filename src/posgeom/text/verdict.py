"""The verdict in plain words: how much of the geometry is above the noise, whether the ranking
of encodings is stable, and what to do when it is not.

Rules (stated so a reader can check them):

* **Noise.** ``share`` = fraction of pairs ``i < j`` with ``D_ij`` above twice their noise floor
  (``noise_floor.trusted_pair_share``). ``share >= 0.8``: most of the geometry is above the noise;
  ``0.3 <= share < 0.8``: part of it; below: most of it is sampling noise. The floor falls like
  ``1 / sqrt(samples)``, so halving it needs about four times the data.
* **Ranking.** Candidates (:func:`~posgeom.encodings.is_candidate`) are ranked by
  scale-optimal stress (shape). With bootstrap replicates two neighbours are *separated* when the
  interval (same level and method as the scores') of the difference of their stresses, from the
  paired replicate differences (the two scores of one replicate share its noise), excludes 0;
  without those (folders written before), when their own intervals do not overlap.
  The ranking is stable when every neighbour pair is separated. Without intervals the verdict
  says the stability is not measured and gives the relative gap of the top two.

* **Resolution.** When the auto resolution kept fewer than ``FEW_CLASSES`` (5) token classes,
  the verdict leads with that, in words (:func:`resolution_lead`).

Everything here reads one :class:`~posgeom.text.verdict_inputs.VerdictInputs`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from posgeom.encodings.mds import MDSFamily
from posgeom.text.layer_verdict import layer_sentence
from posgeom.text.schema import interval
from posgeom.text.verdict_inputs import (
    VerdictInputs,
    baseline_scores,
    baselines_as_good,
    target_phrase,
    verdict_inputs,
)

__all__ = [
    "noise_verdict",
    "one_line",
    "rank_curve_caption",
    "ranking_verdict",
    "resolution_lead",
    "verdict",
    "verdict_block",
]


FEW_CLASSES = 5  # fewer classes than this: the verdict leads with what the sample pins down


def resolution_lead(vi: VerdictInputs) -> str | None:
    """The sentence a verdict leads with when the auto resolution kept fewer than
    :data:`FEW_CLASSES` token classes: what the sample pins down, in words, and what would
    resolve more (:mod:`posgeom.estimators.resolution`); None otherwise."""
    k = vi.n_classes
    if vi.resolution_rule != "auto" or k is None or k >= FEW_CLASSES or not vi.classes:
        return None
    who = f"{vi.n_sequences:,} sequences" if vi.n_sequences else "These counts"
    return (
        f"{who} pin down only {k} token classes ({vi.classes}): the geometry and the ranking "
        "below are about how these classes share the positions, not about the tokens. More "
        "sequences resolve more classes (a token needs about one expected occurrence, a "
        "frequency band ten, at the thinnest position reached by 5% of the sequences); pooled "
        "positions (more samples per position) or smoothed ones (--smooth-positions auto: less "
        "noise) make the most of these."
    )


def _grade(share: float) -> int:
    """0: most of the geometry is above the noise (``share >= 0.8``), 1: part of it (``>= 0.3``),
    2: most of it is sampling noise."""
    return 0 if share >= 0.8 else 1 if share >= 0.3 else 2


def _level(vi: VerdictInputs) -> str:
    """The scores' interval level, ``"95%"``."""
    return f"{100 * float((vi.uncertainty or {}).get('level', 0.95)):.0f}%"


def noise_verdict(vi: VerdictInputs) -> list[str]:
    """Sentences on the noise floor."""
    if vi.noise_share is None:
        return [
            "No noise floor was estimated (input without counts, or --noise none), so how much "
            "of the geometry is sampling noise is unknown."
        ]
    share = vi.noise_share
    untrusted = list(vi.untrusted_positions)
    head = (
        "Most of the geometry is above the noise: {:.0f}% of position pairs are ",
        "Only part of the geometry is above the noise: {:.0f}% of position pairs are ",
        "Most of the geometry is sampling noise: only {:.0f}% of position pairs are ",
    )[_grade(share)].format(100 * share)
    out = [head + "farther apart than twice what sampling alone would give."]
    if untrusted:
        shown = ", ".join(map(str, untrusted[:12])) + (" ..." if len(untrusted) > 12 else "")
        what = "position has" if len(untrusted) == 1 else "positions have"
        out.append(f"{len(untrusted)} {what} mostly untrusted distances: {shown}.")
    if share < 0.8:
        low = vi.samples_min
        more = f" (the fewest samples at a position: {low:g})" if low is not None else ""
        out.append(
            "What to do: more data (the floor falls like 1/sqrt(samples): 4x the sequences halve "
            f"it){more}; pool positions into bins or coarsen n (see `posgeom lengths`); or drop "
            "sparse positions with --min-samples K --below-min drop."
        )
    return out


def _neighbours(vi: VerdictInputs, ranked: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    """``(pair, separated, evidence)`` for every neighbour pair of the candidates' ranking, or
    an empty list without intervals. ``evidence``: the interval of the paired difference, or
    ``"intervals"`` (folders without the candidates' statistics: the two intervals)."""
    cand = (vi.uncertainty or {}).get("candidates") or {}
    paired = {tuple(x["pair"]): x for x in cand.get("neighbours", []) if "difference" in x}
    out = []
    for a, b in itertools.pairwise(ranked):
        pair = (str(a["encoding"]), str(b["encoding"]))
        if pair in paired:
            low, high = paired[pair]["difference"]
            ev = f"[{low:.3g}, {high:.3g}]"
            out.append((f"{pair[0]} / {pair[1]}", bool(paired[pair]["separated"]), ev))
            continue
        ia, ib = interval(a, "scale_optimal"), interval(b, "scale_optimal")
        if ia is None or ib is None:
            return []
        out.append((f"{pair[0]} / {pair[1]}", ia[1] < ib[0], "intervals"))
    return out


_TRIPLES = (
    "they measure how precisely the scores of this corpus sample are estimated from the "
    "sampled triples, not whether the ranking would survive another sample of the corpus, which "
    "is not measured (count with --bootstrap B)"
)


def ranking_verdict(vi: VerdictInputs) -> list[str]:
    """Sentences on the candidates' ranking by scale-optimal stress: which is closest in shape,
    whether a baseline does as well, and whether the ranking is stable."""
    ranked = vi.candidates
    if len(ranked) < 2:
        return []
    names = [str(r["encoding"]) for r in ranked]
    so = [float(r["scale_optimal"]) for r in ranked]
    out = [
        f"By shape (scale-optimal stress against the {vi.estimator or 'given'} target) the "
        f"closest encoding is {names[0]} ({so[0]:.3g}), then {names[1]} ({so[1]:.3g})."
    ]
    base = baseline_scores(vi)
    beating = baselines_as_good(vi)
    if beating:
        out.append(
            f"But the {' and '.join(beating)} baseline does as well or better "
            f"({', '.join(f'{b} {base[b]:.3g}' for b in beating)}): D is close to all distances "
            "equal (flat, as sampling noise makes it), which any near-constant encoding fits "
            "after rescaling; judge shapes only on a geometry above the noise."
        )
    elif base:
        worse = [n for n, v in zip(names, so, strict=True) if v >= min(base.values())]
        if worse:
            out.append("No better than a baseline on shape: " + ", ".join(worse) + ".")
    pairs = _neighbours(vi, ranked)
    if pairs:
        paired = any(ev != "intervals" for _, _, ev in pairs)
        level = _level(vi)
        ties = [(p, ev) for p, ok, ev in pairs if not ok]
        if ties and paired:
            shown = ", ".join(f"{p} ({ev})" for p, ev in ties)
            out.append(
                f"The ranking is not stable: the {level} interval of the difference in "
                f"scale-optimal stress includes 0 for {shown}. More data, or pooling positions, "
                "separates them."
            )
        elif vi.interval_source == "sampled_triples":
            what = "overlap for " + ", ".join(p for p, _ in ties) if ties else "do not overlap"
            out.append(f"The intervals of the sampled triples {what}; {_TRIPLES}.")
        elif ties:
            out.append(
                "The ranking is not stable: the intervals overlap for "
                + ", ".join(p for p, _ in ties)
                + ". More data, or pooling positions, narrows them."
            )
        elif paired:
            out.append(
                f"The ranking is stable: for every neighbour pair the {level} interval of the "
                "difference in scale-optimal stress excludes 0."
            )
        else:
            out.append("The ranking is stable: no two neighbours' intervals overlap.")
    else:
        gap = (so[1] - so[0]) / max(so[1], 1e-300)
        why = (
            "the bootstrap intervals are per layer, not per encoding"
            if vi.layers and vi.layer_level
            else "no intervals were computed (count with --bootstrap B for them)"
        )
        out.append(
            f"Its lead over {names[1]} is {100 * gap:.0f}% of the latter's stress; {why}, so "
            "whether this ranking of encodings would survive another sample is not measured."
        )
    return out


def _uncertainty_verdict(vi: VerdictInputs) -> list[str]:
    u = vi.uncertainty
    if not u:
        return []
    cand = u.get("candidates") or {}
    if cand:
        firsts = sorted(((p, n) for n, p in cand["p_first"].items()), reverse=True)
        tau, scope = cand["stability"], "the candidates' ranking (fits of D and baselines aside)"
    else:  # folders written before the candidates' statistics: every row, MDS fits included
        firsts = sorted(
            ((r.get("p_first") or 0.0, str(r["encoding"])) for r in vi.rows), reverse=True
        )
        tau, scope = u["ranking_stability"], "the ranking of every row (MDS fits included)"
    top = ", ".join(f"{name} {100 * p:.0f}%" for p, name in firsts[:3] if p > 0)
    return [
        f"Over {u['n_replicates']} bootstrap replicates {scope} agrees with this one at Kendall "
        f"tau {float(tau):.2f} (1 = always the same); first place: {top}. Intervals: "
        f"{100 * float(u['level']):.0f}% {u['method']}."
    ]


def _estimator_verdict(view: Any) -> list[str]:
    """How far the estimate used is from the plug-in (the paper's estimator), pair by pair."""
    a = view.arrays
    if "plugin_hellinger" not in a or "hellinger" not in a:
        return []
    iu = np.triu_indices_from(a["hellinger"], 1)
    plug, used = a["plugin_hellinger"][iu], a["hellinger"][iu]
    keep = plug > 0
    if not np.any(keep):
        return []
    ratio = float(np.median(used[keep] / plug[keep]))
    name, res = view.verdict.estimator or "the estimate", view.verdict.resolution
    if res not in (None, "full"):  # another target: the full vocabulary's plug-in
        why = f" (sampling bias and the coarser {res} classes together: coarse-graining contracts)"
    else:
        why = ", so most of the plug-in distance is sampling bias" if ratio < 0.5 else ""
    return [
        f"The distances are the {name} estimator's; the plug-in (the paper's, full vocabulary) "
        f"puts them higher: the median pair is at {100 * ratio:.0f}% of its plug-in value{why}."
    ]


def verdict(view: Any) -> list[str]:
    """The verdict paragraphs of a :class:`~posgeom.reports.view.ResultView` (its ``verdict``
    inputs, plus its arrays for the plug-in comparison)."""
    vi: VerdictInputs | None = view.verdict
    if vi is None:  # a reproduce folder: its parts have verdicts
        return []
    lead = resolution_lead(vi)
    out = ([lead] if lead else []) + [f"{target_phrase(vi)}."]
    if vi.kind != "score":
        out += noise_verdict(vi)
    if vi.layers:
        phrase = layer_sentence(vi.layers, vi.layer_level)
        if phrase:
            out.append(phrase[0].upper() + phrase[1:] + ".")
    out += ranking_verdict(vi)
    out += [f"Hint: {h}." for h in vi.hints]  # a stored hint (analyze-model's [CLS])
    out += _uncertainty_verdict(vi)
    out += _estimator_verdict(view)
    if vi.rank_curve and any(r.get("encoding") == MDSFamily.name for r in vi.rows):
        low = next((c for c in vi.rank_curve if float(c.get("paper") or 1.0) < 0.01), None)
        if low is not None:
            out.append(
                f"A rank-{low['rank']} MDS encoding already reaches paper stress "
                f"{float(low['paper']):.2g}."
            )
    return out


def _ranking_phrase(vi: VerdictInputs) -> str:
    ranked = vi.candidates
    if len(ranked) < 2:
        return ""
    first, second = str(ranked[0]["encoding"]), str(ranked[1]["encoding"])
    pairs = _neighbours(vi, ranked)
    if not pairs:
        how = "stability not measured: count with --bootstrap B"
    else:
        _, ok, ev = pairs[0]
        if ev == "intervals" and vi.interval_source == "sampled_triples":
            how = ("separated" if ok else "not separated") + " by the sampled-triples intervals; "
            how += "stability over another corpus sample not measured: count with --bootstrap B"
        elif ev == "intervals":
            how = ("separated" if ok else "not separated") + " by the intervals"
        else:
            how = ("separated" if ok else "not separated") + f": {_level(vi)} interval of the "
            how += f"difference {ev} {'excludes' if ok else 'includes'} 0"
        cand = (vi.uncertainty or {}).get("candidates") or {}
        if cand:
            how += f", ranking stability {float(cand['stability']):.2f}"
    return f"closest in shape: {first}, then {second} ({how})"


def one_line(vi: VerdictInputs) -> str:
    """The verdict as one line: the target (estimator, resolution), how much of the geometry is
    above the noise, the closest encoding (or layer) and whether that is stable, what to do."""
    parts = [target_phrase(vi)[0].lower() + target_phrase(vi)[1:]]
    if resolution_lead(vi):
        parts.insert(
            0, f"only {vi.n_classes} token classes pinned down (more sequences resolve more)"
        )
    share = vi.noise_share
    if share is None:
        parts.append("noise floor not estimated")
    else:
        grade = ("most of it", "part of it", "little of it: mostly sampling noise")[_grade(share)]
        parts.append(f"{100 * share:.0f}% of pairs above twice the noise floor ({grade})")
    phrase = layer_sentence(vi.layers, vi.layer_level) if vi.layers else _ranking_phrase(vi)
    if phrase:
        parts.append(phrase)
    beating = [] if vi.layers else baselines_as_good(vi)
    if beating:
        base = baseline_scores(vi)
        shown = ", ".join(f"{b} {base[b]:.3g}" for b in beating)
        parts.append(
            f"but the {' and '.join(beating)} baseline does as well ({shown}): this ranking "
            "says nothing about shape"
        )
    if (share is not None and share < 0.8) or "not separated" in (phrase or ""):
        parts.append("to firm it up: more data, pool positions or coarsen the vocabulary")
    return "verdict: " + "; ".join(parts) + "."


def rank_curve_caption(curve: Sequence[dict[str, Any]], *, tolerance: float = 0.05) -> str:
    """A caption that describes the rank curve it is under (paper stress against rank ``r``).

    U-shaped (some rank after the lowest is above it by more than ``tolerance`` of the curve's
    span): names the lowest rank and says the extra coordinates fit the part of ``D`` that no
    low-dimensional Euclidean map holds. Otherwise: the rank from which the curve is within
    ``tolerance`` of its span of the lowest value (where it flattens)."""
    pts = [(int(c["rank"]), float(c["paper"])) for c in curve if c.get("paper") is not None]
    if len(pts) < 2:
        return "Stress of the rank-r MDS encoding."
    ranks, vals = zip(*pts, strict=True)
    k = min(range(len(vals)), key=vals.__getitem__)
    span = max(vals) - vals[k]
    head = "Stress of the rank-r MDS encoding against D."
    if span > 0 and any(v > vals[k] + tolerance * span for v in vals[k + 1 :]):
        return (
            f"{head} The curve is U-shaped: lowest at rank {ranks[k]} (paper stress "
            f"{vals[k]:.3g}), higher again at larger ranks ({vals[-1]:.3g} at rank {ranks[-1]}). "
            "The extra coordinates fit the part of D that is not Euclidean (the negative "
            f"spectrum of an estimate) or noise, so rank {ranks[k]} reproduces D best."
        )
    flat = next(r for r, v in zip(ranks, vals, strict=True) if v <= vals[k] + tolerance * span)
    return (
        f"{head} It falls to {vals[k]:.3g} and is within {100 * tolerance:.0f}% of its range "
        f"of that from rank {flat}: about {flat} dimensions hold the positional geometry."
    )


def verdict_block(kind: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The ``verdict`` block of a summary JSON: the inputs (what every verdict reads) and the
    line the command prints."""
    vi = verdict_inputs(kind, summary)
    return {"inputs": vi.as_dict(), "line": one_line(vi)}
