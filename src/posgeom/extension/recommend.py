"""The recommendation ``posgeom extend`` makes, and the measured record behind it.

``record.json`` (beside this module; written by the study's record track,
``python -m studies.extension`` with track ``record``, from the measured losses, never edited by
hand) holds, per family, every
predictor's validation record on the study's windows and on held-out windows: Spearman between
the predictor and minus the measured loss past ``L0`` (mean over windows, 95% bootstrap interval),
how often its pick was in the measured top 2, and where it picked something that measured worse
than no scaling. A predictor is *validated* when it needs no forward and its pick was in the top
2 and below ``none`` on every measured window.

:func:`recommend`: the ranking is by the family's ``default_predictor`` when the record
validates one, and the recommendation is its pick; otherwise the table is ranked by the forward-
free predictor with the best held-out mean Spearman (said to be unvalidated) and the
recommendation is the **fallback**: YaRN with ``factor = L / L0`` (``beta_fast`` 32,
``beta_slow`` 1, its attention factor), the mildest YaRN that covers the target, when the record
validates it; when it does not either, the model's own parameters (no scaling), the one choice
never measured worse than no scaling. The record has one scope per kind of model (``transformers``:
SmolLM2's windows; ``posgeom decoder``: Track B's), chosen by ``ExtensionModel.source``. A family without a record (learned, ALiBi, T5, NoPE) gets no
recommendation: ``rope_parameters.json`` is not written for it anyway.

**A record applies where it was measured.** Each scope states where (``scope``: model family,
rope type, base ``rope_theta``, ``head_dim``, trained length ``L0`` and factor ``L / L0`` ranges,
text domains of its windows); :func:`scope_check` compares the case at hand with it. Outside it
nothing is called validated: the pick follows the same rule, said to be "not validated for this
model / factor", with what would validate it (``--measure`` on held-out text of one's own, or the
study's measurements on this model).

**One ranking.** The table is ordered by the rule that chose the recommendation (``ranking``):
the recommended strategy first, then the rest by ``ranked_by``; the other predictors and the
lag stress are columns.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError

__all__ = [
    "load_record",
    "outcome_places",
    "recommend",
    "recommendation_lines",
    "record_line",
    "scope_check",
]

FALLBACK_NAME = "yarn x{s:g} b32/1"
#: what would validate a recommendation outside the record's scope
TO_VALIDATE = (
    "to validate it, run extend --measure on held-out text of your own (the loss past L0 of "
    "each strategy) or measure this model as the study does (python -m studies.extension, "
    "docs/EXTENSION.md)"
)
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


def _compact(entry: dict[str, Any]) -> dict[str, Any]:
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
    for name, s in _compact(entry).items():
        rho = s["mean_spearman"]
        ci = s["ci95"]
        text = f"{name}: top 2 on {s['top2_hits']}/{s['windows']} windows"
        if rho is not None:
            text += f", Spearman {rho:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
        if s["worse_than_none"]:
            text += f", worse than none on {s['worse_than_none']}"
        parts.append(text)
    return f"{predictor}: " + "; ".join(parts)


def _fallback(result: Any) -> Any:
    from posgeom.extension.strategies import rope_strategy

    s = result.target_length / result.trained_length
    name = FALLBACK_NAME.format(s=s)
    for row in result.rows:
        if row.name == name:
            return row.strategy
    params = {
        "rope_type": "yarn",
        "factor": s,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "original_max_position_embeddings": int(result.trained_length),
    }
    return rope_strategy(result.model, name, "yarn", params, "YaRN ramp (the fallback)")


def _best_ranker(family: dict[str, Any], available: set[str]) -> str | None:
    def held(p: str) -> float:
        sets = family["predictors"][p]["sets"]
        r = [v["mean_spearman"] for k, v in sets.items() if k != "study"]
        r = [x for x in r if x is not None]
        return float(np.mean(r)) if r else -np.inf

    usable = [
        p
        for p, v in family["predictors"].items()
        if p in available and not v["needs_forward"] and p != family["fallback"]
    ]
    return max(usable, key=held) if usable else None


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


def _pick(result: Any, family: dict[str, Any], values: dict) -> dict[str, Any]:
    """What the record's rule picks (module docstring), as if the case were in its scope:
    ``strategy``, ``predictor``, ``validated`` (by the record) and ``reason``."""
    default = family["default_predictor"]
    if default is not None and default in values:
        vals = values[default]
        pick = max(vals, key=lambda n: vals[n])
        return {
            "strategy": next(r.strategy for r in result.rows if r.name == pick),
            "predictor": default,
            "validated": True,
            "reason": f"ranked by {default}, the predictor the record names",
            "rule": default,
        }
    fb = family["predictors"].get(family["fallback"])
    reason = (
        "the record validates no forward-free predictor for this kind of model (record.json: "
        "its pick in the measured top 2 and below none on every window)"
        if default is None
        else f"the predictor {default} needs the model's weights, which were not read"
    )
    if fb and fb["validated"]:
        return {
            "strategy": _fallback(result),
            "predictor": family["fallback"],
            "validated": True,
            "reason": f"{reason}; the record's fallback, YaRN with factor L/L0",
            "rule": "the fallback rule YaRN x L/L0",
        }
    own = next((r.strategy for r in result.rows if r.strategy.kind == "none"), None)
    if own is None:  # given strategies without it: the model's own parameters
        from posgeom.extension.strategies import Strategy

        own = Strategy("none", "rope", "none", dict(result.model.rope_parameters), "no scaling")
    return {
        "strategy": own,
        "predictor": "none (nothing validated)",
        "validated": False,
        "reason": f"{reason}, nor the fallback, YaRN with factor L/L0: keeping the model's own "
        "rope parameters (no scaling), the only choice never measured worse than no scaling",
        "rule": "no scaling",
    }


def recommend(result: Any, values: dict[str, dict[str, float]]) -> dict[str, Any] | None:
    """The recommendation for ``result`` (module docstring) given ``values`` (predictor ->
    strategy -> value, larger = better, :func:`posgeom.extension.predictors.predictor_values`):
    ``strategy``, ``predictor``, ``validated`` (only inside the record's scope), ``why``,
    ``scope`` (the record's scope, ``inside``, ``case``, ``outside``), ``ranked_by`` (the
    predictor that orders the rest of the table) and ``ranking`` (the one rule the table
    follows, in words)."""
    family = scope_of(result.model)
    if family is None:
        return None
    check = scope_check(result.model, result.target_length, family.get("scope"))
    inside = check["inside"]
    default = family["default_predictor"]
    ranked_by = default if default in values else _best_ranker(family, set(values))
    pick = _pick(result, family, values)
    validated = bool(pick["validated"] and inside)
    out: dict[str, Any] = {
        "ranked_by": ranked_by,
        "models": family["models"],
        "windows": family["windows"],
        "criterion": family["criterion"],
        "outcome": family["outcome"],
        "scope": {**(family.get("scope") or {}), **check},
    }
    if ranked_by is not None:
        out["ranked_by_record"] = _compact(family["predictors"][ranked_by])
        out["ranked_by_validated"] = bool(family["predictors"][ranked_by]["validated"] and inside)
    state = "validated" if validated else "not validated"
    then = (
        f", then {ranked_by} ({'validated' if out.get('ranked_by_validated') else 'not validated'})"
    )
    out["ranking"] = (
        f"{pick['rule']} ({state})"
        if ranked_by is None or ranked_by == pick["predictor"]
        else f"{pick['rule']} ({state}) first{then}"
    )
    if inside:
        entry = family["predictors"].get(pick["predictor"])
        why = pick["reason"] + (
            f"; validated inside the record's scope ({record_line('its record', entry)})"
            if validated and entry
            else ""
        )
    else:
        why = (
            f"not validated for this model / factor ({'; '.join(check['outside'])}): picked "
            f"by the record's rule ({pick['rule']}), measured only inside its scope; "
            f"{TO_VALIDATE}"
        )
    places = outcome_places(family, pick["predictor"]) if validated else {}
    return {
        **out,
        **({"outcome_places": places} if places else {}),
        "strategy": pick["strategy"],
        "predictor": pick["predictor"],
        "validated": validated,
        "why": why,
    }


def recommendation_lines(result: Any) -> list[str]:
    """The verdict's first lines: the recommendation and why, the one rule the table follows,
    the record's scope and whether this case is inside it."""
    rec = result.recommendation
    if not rec:
        return []
    lines = [f"recommended: {rec['strategy'].name} ({rec['why']})"]
    scope = rec.get("scope") or {}
    by = rec.get("ranked_by")
    if by and scope.get("inside"):
        entry = scope_of(result.model)["predictors"][by]
        lines.append(f"{by}: {record_line('its record', entry)}")
    places = rec.get("outcome_places")
    if places:
        lines.append(
            "its pick on the held-out split's long-context outcomes (place among the strategies "
            "measured): " + "; ".join(f"{o} {p}/{m}" for o, (p, m) in places.items())
        )
    windows = "; ".join(f"{k}: {', '.join(v)}" for k, v in rec["windows"].items())
    where = "inside it" if scope.get("inside") else "outside it"
    said = scope_text(scope) if scope.get("model_family") else "not stated"
    lines.append(
        f"record scope: {said}; this case is {where}; models: "
        + "; ".join(rec["models"])
        + f"; windows {windows}"
    )
    return lines
