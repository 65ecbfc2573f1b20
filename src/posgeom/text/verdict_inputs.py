"""What a verdict reads, computed once: :class:`VerdictInputs`.

Every verdict of a result (the line a command prints, the ``verdict`` block of its JSON, the
last line of its Markdown, the report's verdict) is rendered from one :class:`VerdictInputs`,
built by :func:`verdict_inputs` from the result's JSON summary and stored in it; a results folder
gives it back unchanged (:meth:`VerdictInputs.from_dict`), so a report says what the command said.

Candidates. Rows of the fitted families (fits of ``D`` itself: ``mds``, ``low_rank_mds`` and
their variants) and of the baselines are not candidates for "the closest encoding" (the
families' roles, :attr:`posgeom.encodings.Family.role`); the bootstrap ranking statistics
(``first``, ``stability``, ``neighbours``) are over the candidates only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from posgeom.io.jsonfiles import finite_json
from posgeom.text.layer_verdict import with_ci
from posgeom.text.schema import summary_rows

__all__ = [
    "TARGET_FIELDS",
    "VerdictInputs",
    "baseline_scores",
    "baselines",
    "baselines_as_good",
    "resolution_setting",
    "target_phrase",
    "trusted_pairs",
    "verdict_inputs",
]

_ROW_KEYS = (
    "encoding",
    "scale_optimal",
    "scale_optimal_ci",
    "paper",
    "paper_ci",
    "p_first",
    "sampled",
)
TRUSTED_ARRAY = "noise_trusted"  # arrays.npz: the (n, n) mask the noise share counts
# what names a target (the target phrase): carried by `score` from a folder's stored inputs
TARGET_FIELDS = (
    "estimator",
    "resolution",
    "classes",
    "n_classes",
    "resolution_rule",
    "smoothing_slope",
    "convention",
)
_LAYER_KEYS = ("layer", "stress_scale_optimal", "stress_scale_optimal_ci")


def baselines() -> tuple[str, ...]:
    """The baseline encodings (no positional geometry by construction): the families whose
    role is ``"baseline"`` (:func:`posgeom.encodings.families_with_role`)."""
    from posgeom.encodings import families_with_role

    return families_with_role("baseline")


@dataclass(frozen=True)
class VerdictInputs:
    """Everything a verdict says, in one place (see the module docstring).

    ``estimator``: the target's estimator (``"plugin"`` is the paper's plug-in chord), ``None``
    when unknown (a bare target matrix). ``resolution``: the token classes the estimate
    identifies (``"full"``, ``"top:300"``, ...), ``None`` when not recorded; ``classes``: what
    they hold, in words (``GeometryEstimate.classes``), ``n_classes`` how many,
    ``resolution_rule`` ``"auto"`` (chosen by the rule) or ``"given"``; ``n_sequences``: the
    sequences counted; ``smoothing_slope``: the slope ``a`` of an estimate smoothed over
    positions (``h_i = a i``), else ``None``. ``rows``: score rows against the target
    (``encoding``, ``scale_optimal``, ``paper``, their ``*_ci`` intervals and ``p_first``);
    ``layers``: ``layer``, ``stress_scale_optimal`` and its ``_ci``; ``noise_share``: the share
    of pairs above twice their noise floor (``None``: not estimated); ``uncertainty``:
    ``n_replicates``, ``level``, ``method`` and the candidates' ranking statistics
    (:func:`posgeom.uncertainty.rows.candidate_ranking`). ``interval_source``: what the rows'
    intervals measure: ``"bootstrap"`` (replicates of the corpus counts), ``"sampled_triples"``
    (a long context's scores from sampled position triples: how precisely *this* sample's scores
    are computed, not how they vary with another sample) or ``None`` (no intervals)."""

    kind: str
    estimator: str | None
    resolution: str | None = None
    classes: str | None = None
    n_classes: int | None = None
    resolution_rule: str | None = None
    n_sequences: int | None = None
    smoothing_slope: float | None = None
    convention: str = "chord"
    rows: tuple[dict[str, Any], ...] = ()
    layers: tuple[dict[str, Any], ...] = ()
    noise_share: float | None = None
    untrusted_positions: tuple[int, ...] = ()
    samples_min: float | None = None
    uncertainty: dict[str, Any] | None = None
    layer_level: float | None = None
    rank_curve: tuple[dict[str, Any], ...] = ()
    interval_source: str | None = None
    hints: tuple[str, ...] = ()  # stored hints (analyze-model: a [CLS]-like position 0)

    def as_dict(self) -> dict[str, Any]:
        return finite_json(asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerdictInputs:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for key in ("rows", "layers", "untrusted_positions", "rank_curve", "hints"):
            known[key] = tuple(known.get(key) or ())
        return cls(**known)

    @property
    def candidates(self) -> list[dict[str, Any]]:
        """Candidate rows with a scale-optimal stress, best first."""
        from posgeom.encodings import is_candidate  # the registry, read when a verdict is made

        keep = [
            r
            for r in self.rows
            if is_candidate(r["encoding"])
            and r.get("scale_optimal") is not None
            and math.isfinite(float(r["scale_optimal"]))
        ]
        return sorted(keep, key=lambda r: float(r["scale_optimal"]))


def _trim(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> tuple[dict[str, Any], ...]:
    return tuple({k: r[k] for k in keys if r.get(k) is not None} for r in rows)


def _from_geometry(kind: str, geometry: Mapping[str, Any]) -> dict[str, Any]:
    """The estimator (of the ``estimator`` block, else of the options), resolution, smoothing
    slope, convention, noise, samples and the words of the estimate's classes, their number and
    how the resolution was chosen, of a pipeline summary."""
    opts = geometry.get("options") or {}
    est = geometry.get("estimator")
    est = est if isinstance(est, Mapping) else {"estimator": est}
    name = opts.get("estimator") if est.get("estimator") is None else str(est["estimator"])
    res, slope = est.get("resolution"), (est.get("smoothing") or {}).get("slope")
    noise = geometry.get("noise_floor") or {}
    out = {
        "kind": kind,
        "estimator": name,
        "resolution": str(res) if res is not None else ("full" if name == "plugin" else None),
        "smoothing_slope": None if slope is None else float(slope),
        "convention": opts.get("convention", "chord"),
        "noise_share": float(noise.get("trusted_pair_share", 0.0)) if noise else None,
        "untrusted_positions": tuple(int(p) for p in noise.get("untrusted_positions", [])),
        "samples_min": (geometry.get("samples_per_position") or {}).get("min"),
        "n_sequences": (geometry.get("corpus") or {}).get("n_sequences"),
    }
    if est.get("classes"):
        out["classes"] = str(est["classes"])
        out["n_classes"] = None if est.get("vocab_size") is None else int(est["vocab_size"])
        out["resolution_rule"] = (est.get("options") or {}).get("resolution_rule")
    return out


def verdict_inputs(kind: str, summary: Mapping[str, Any]) -> VerdictInputs | None:
    """The :class:`VerdictInputs` of a result's JSON summary of ``kind`` (``run``, ``compare``,
    ``analyze-model``, ``score``). A summary that already holds a ``verdict`` block (written by
    this function) gives that block back; ``extend`` (its own verdict) gives None."""
    block = summary.get("verdict")
    if isinstance(block, Mapping) and "inputs" in block:
        return VerdictInputs.from_dict(block["inputs"])
    if kind == "extend":  # the extension study has its own verdict (posgeom.extension)
        return None
    geometry, rows, curve = summary_rows(kind, summary)
    levels = [v.get("level") for v in (summary.get("layer_intervals") or {}).values()]
    uncertainty = summary.get("uncertainty") or None
    # what the intervals measure (VerdictInputs): replicates, a long context's sampled triples
    source = "bootstrap" if uncertainty or levels else None
    if source is None and any(r.get("sampled") and r.get("scale_optimal_ci") for r in rows):
        source = "sampled_triples"
    return VerdictInputs(
        **_from_geometry(kind, geometry),
        rows=_trim(rows, _ROW_KEYS),
        layers=_trim([with_ci(r) for r in summary.get("layers", [])], _LAYER_KEYS),
        uncertainty=uncertainty,
        layer_level=levels[0] if levels else None,
        rank_curve=_trim(curve, ("rank", "paper", "scale_optimal", "explained_variance")),
        interval_source=source,
        hints=tuple(summary.get("hints") or ()),
    )


def trusted_pairs(arrays: Mapping[str, np.ndarray], vi: VerdictInputs | None) -> np.ndarray | None:
    """The ``(n, n)`` boolean mask of the pairs above twice their noise floor: the very mask
    whose upper-triangle mean is ``vi.noise_share`` (stored as ``noise_trusted`` in arrays.npz by
    the result that computed the floor, on the estimate's token classes). Folders written before
    the mask was stored: the plug-in distances against the floor, only when the floor is the
    plug-in's (resolution ``"full"``); otherwise ``None`` (no shading rather than a mask of
    another geometry)."""
    if TRUSTED_ARRAY in arrays:
        return np.asarray(arrays[TRUSTED_ARRAY], dtype=bool)
    if "noise_pair_floor" not in arrays or "hellinger" not in arrays:
        return None
    if vi is None or vi.resolution not in ("full", None):
        return None
    scale = np.sqrt(2.0) if vi.convention == "normalized" else 1.0  # the floor is in chord units
    plug = arrays.get("plugin_hellinger", arrays["hellinger"])
    out = plug * scale > 2.0 * arrays["noise_pair_floor"]
    np.fill_diagonal(out, False)
    return out


def baseline_scores(vi: VerdictInputs) -> dict[str, float]:
    """Baseline -> its stored scale-optimal stress."""
    return {
        str(r["encoding"]): float(r["scale_optimal"])
        for r in vi.rows
        if str(r["encoding"]) in baselines() and r.get("scale_optimal") is not None
    }


def baselines_as_good(vi: VerdictInputs) -> list[str]:
    """The baselines (random, NoPE) whose scale-optimal stress is at most the closest
    candidate's: the ranking of the candidates then says nothing about shape (a caveat every
    surface that shows the ranking carries)."""
    ranked = vi.candidates
    if not ranked:
        return []
    base, best = baseline_scores(vi), float(ranked[0]["scale_optimal"])
    return [b for b in baselines() if b in base and base[b] <= best]


def target_phrase(vi: VerdictInputs) -> str:
    """``"Target D: corrected estimator, geometry of the top 300 tokens + other"`` (the words
    every output uses; :func:`posgeom.estimators.resolution.describe_resolution`)."""
    from posgeom.estimators.resolution import describe_resolution

    if vi.estimator is None:
        return "Target D: as given (estimator not recorded)"
    if vi.resolution is None:
        res = "resolution not recorded"
    elif vi.classes and vi.resolution != "full":
        res = f"geometry of {vi.n_classes or 'its'} token classes ({vi.resolution}: {vi.classes})"
    else:
        res = f"geometry of {describe_resolution(vi.resolution)}"
    if vi.smoothing_slope is not None and vi.smoothing_slope > 0:
        res += f", smoothed over positions (h_i = {vi.smoothing_slope:g} i)"
    return f"Target D: {vi.estimator} estimator, {res}"


def resolution_setting(vi: VerdictInputs) -> str:
    """The resolution as a report's settings show it: the label and, when recorded, what the
    classes hold in the estimate's words (``"top:2 (3 classes: '.', '[CLS]', other: 92% of
    tokens)"``)."""
    if vi.resolution is None:
        return "not recorded"
    if not vi.classes:
        return vi.resolution
    return f"{vi.resolution} ({vi.n_classes or '?'} classes: {vi.classes})"
