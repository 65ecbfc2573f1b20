"""The measured record behind ``posgeom extend``'s recommendation, and its scopes.

``record.json`` (beside this module, written by the study's record track, never by hand) holds
per family and kind of model (``ExtensionModel.source``: :func:`scope_of`) every predictor's
record on the study's and held-out windows: Spearman with minus the measured loss past ``L0``
(mean, 95% bootstrap interval), top-2 hits and picks worse than ``none``. A predictor is
*validated* when it needs no forward and its pick was in the top 2 and below ``none`` on every
window. A record applies where it was measured: each scope states the family, rope type, ranges
of ``rope_theta``, ``head_dim``, ``L0`` and ``L / L0``, and text domains (:func:`scope_check`)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from posgeom._errors import PosgeomError

__all__ = [
    "compact_record",
    "load_record",
    "outcome_places",
    "record_line",
    "scope_check",
    "scope_of",
    "scope_text",
]

_RANGES = ("rope_theta", "head_dim", "trained_length", "factor")


@lru_cache(maxsize=1)
def load_record() -> dict[str, Any]:
    """The committed record (``record.json`` of this package), its structure checked (the
    fields read here): a damaged or edited copy is one :class:`PosgeomError` naming the file."""
    path = resources.files("posgeom.extension").joinpath("record.json")
    try:
        record = json.loads(path.read_text("utf-8"))
        problem = _record_problem(record)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = f"not readable JSON ({type(exc).__name__}: {exc})"
    if problem:
        raise PosgeomError(
            f"posgeom's package file {path} is damaged: {problem}; reinstall posgeom "
            "(pip install --force-reinstall --no-deps posgeom)"
        )
    return record


_SCOPE = {"models": list, "windows": dict, "criterion": str, "outcome": str, "predictors": dict}
_SET = {"windows": int, "top2_hits": int, "worse_than_none": list}


def _set_ok(one: Any) -> bool:
    """A predictor's record on one set of windows: counts, picks worse than none, Spearman."""
    if not isinstance(one, dict):
        return False
    typed = all(
        isinstance(one.get(k), t) and not isinstance(one.get(k), bool) for k, t in _SET.items()
    )
    rho, ci = one.get("mean_spearman"), one.get("ci95")
    rho_ok = rho is None or (isinstance(rho, int | float) and not isinstance(rho, bool))
    ci_ok = ci is None or (isinstance(ci, list) and len(ci) == 2)
    return typed and rho_ok and ci_ok


def _matrix_ok(matrix: Any) -> bool:
    """The held-out split's outcome matrix (optional): ``table`` predictor -> outcome -> cell."""
    table = matrix.get("table", {}) if isinstance(matrix, dict) else None
    return isinstance(table, dict) and all(
        isinstance(row, dict) and all(isinstance(c, dict) for c in row.values())
        for row in table.values()
    )


def _record_problem(record: Any) -> str | None:
    """What is wrong with the record's structure, or None."""
    families = record.get("families") if isinstance(record, dict) else None
    if not isinstance(families, dict):
        return "no 'families' object"
    for name, family in families.items():
        if not isinstance(family, dict) or not all(isinstance(v, dict) for v in family.values()):
            return f"family {name!r} is not an object of scopes"
        for source, scope in family.items():
            problem = _scope_problem(scope)
            if problem:
                return f"{name} / {source}: {problem}"
    return None


def _scope_problem(scope: dict[str, Any]) -> str | None:
    wrong = [k for k, t in _SCOPE.items() if not isinstance(scope.get(k), t)]
    if wrong:
        return f"missing or mistyped {', '.join(wrong)}"
    for key in ("default_predictor", "fallback"):
        if not isinstance(scope.get(key), str | None):
            return f"{key} is not a name"
    if not _matrix_ok(scope.get("outcome_matrix", {})):
        return "outcome_matrix is not an object of predictor -> outcome -> cell objects"
    for predictor, entry in scope["predictors"].items():
        sets = entry.get("sets") if isinstance(entry, dict) else None
        if not isinstance(sets, dict) or not all(
            isinstance(entry.get(k), bool) for k in ("needs_forward", "validated")
        ):
            return f"predictor {predictor!r} lacks sets, needs_forward or validated"
        for set_name, one in sets.items():
            if not _set_ok(one):
                return f"predictor {predictor!r}, set {set_name!r} is malformed"
    return None


def compact_record(entry: dict[str, Any]) -> dict[str, Any]:
    """Per set: windows, mean Spearman, interval, top-2 hits, picks worse than none."""
    out = {}
    for name, s in entry["sets"].items():
        out[name] = {
            "windows": s["windows"],
            "mean_spearman": s["mean_spearman"],
            "ci95": s["ci95"],
            "top2_hits": s["top2_hits"],
            "worse_than_none": len(s["worse_than_none"]),
        }
    return out


def record_line(predictor: str, entry: dict[str, Any]) -> str:
    """One line: the predictor's record, set by set."""
    parts = []
    for name, s in compact_record(entry).items():
        rho = s["mean_spearman"]
        ci = s["ci95"]
        text = f"{name}: top 2 on {s['top2_hits']}/{s['windows']} windows"
        if rho is not None:
            text += f", Spearman {rho:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
        if s["worse_than_none"]:
            text += f", worse than none on {s['worse_than_none']}"
        parts.append(text)
    return f"{predictor}: " + "; ".join(parts)


def scope_of(model: Any) -> dict[str, Any] | None:
    """The record scope of ``model``: its family's entry for its source (a transformers model
    or a family spec: ``transformers``; a posgeom decoder: ``posgeom decoder``), or None."""
    family = load_record()["families"].get(model.family)
    if family is None:
        return None
    return family.get(getattr(model, "source", "transformers")) or family.get("transformers")


def _span(lo: float, hi: float) -> str:
    return f"{lo:,.6g}" if lo == hi else f"{lo:,.6g} to {hi:,.6g}"


def scope_text(scope: dict[str, Any]) -> str:
    """The scope in words: family, rope type, ranges and text domains."""
    ranges = ", ".join(
        f"{k.replace('_', ' ')} {_span(*scope[k])}" for k in _RANGES if scope.get(k) is not None
    )
    return (
        f"{scope['model_family']}, {scope['rope_type']} RoPE, {ranges}; text domains of its "
        f"windows: {', '.join(scope['domains'])}"
    )


def scope_check(model: Any, target_length: int, scope: dict[str, Any] | None) -> dict[str, Any]:
    """Whether ``model`` at ``target_length`` is inside the record's ``scope``: ``case`` (its
    rope type, theta, head width, ``L0``, factor ``L / L0``), ``outside`` (each setting outside,
    in words) and ``inside``. A scope-less record covers nothing. Text domains are stated, not
    checked (posgeom cannot tell a corpus's domain)."""
    params = dict(getattr(model, "rope_parameters", None) or {})
    l0 = int(model.trained_length)
    case = {
        "rope_type": str(params.get("rope_type", "default")),
        "rope_theta": float(params.get("rope_theta", float("nan"))),
        "head_dim": int(getattr(model, "head_dim", 0) or 0),
        "trained_length": l0,
        "factor": float(target_length) / l0,
    }
    if not scope:
        return {"inside": False, "case": case, "outside": ["the record states no scope"]}
    outside = []
    if case["rope_type"] != scope.get("rope_type", "default"):
        outside.append(f"rope type {case['rope_type']} (record: {scope.get('rope_type')})")
    for key in _RANGES:
        lo, hi = scope[key]
        if not lo * (1 - 1e-9) <= case[key] <= hi * (1 + 1e-9):
            word = key.replace("_", " ")
            outside.append(f"{word} {case[key]:,.6g} (record: {_span(lo, hi)})")
    return {"inside": not outside, "case": case, "outside": outside}


def outcome_places(family: dict[str, Any], predictor: str) -> dict[str, list[int]]:
    """Where ``predictor``'s pick measured under each long-context outcome of the record's
    held-out split (``outcome_matrix``: outcome -> [worst place over its windows, strategies]);
    empty when the record has none."""
    cells = family.get("outcome_matrix", {}).get("table", {}).get(predictor, {})
    return {
        o: [c["pick_place"], c.get("strategies", 0)]
        for o, c in cells.items()
        if c.get("pick_place") is not None
    }
