"""The recommendation ``posgeom extend`` makes from the measured record (:mod:`.record`).

:func:`recommend`: ranked by the family's ``default_predictor`` when the record validates one, the
recommendation being its pick; otherwise ranked by the forward-free predictor with the best
held-out mean Spearman (unvalidated), the recommendation being the **fallback**, YaRN with
``factor = L / L0`` (``beta_fast`` 32, ``beta_slow`` 1) when the record validates it, else the
model's own parameters (no scaling). Families without a record get none. Outside the record's
scope (:func:`~.record.scope_check`) nothing is called validated and the line says what would
validate it. The table follows that one ranking: the recommended strategy first, then the rest by
``ranked_by``."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.extension.record import (
    compact_record,
    outcome_places,
    record_line,
    scope_check,
    scope_of,
    scope_text,
)

__all__ = [
    "recommend",
    "recommendation_lines",
]

FALLBACK_NAME = "yarn x{s:g} b32/1"
#: what would validate a recommendation outside the record's scope
TO_VALIDATE = (
    "to validate it, run extend --measure on held-out text of your own (the loss past L0 of "
    "each strategy) or measure this model as the study does (python -m studies.extension, "
    "docs/EXTENSION.md)"
)


def _fallback(result: Any) -> Any:
    from posgeom.encodings.rope_strategies import yarn_strategy

    s = result.target_length / result.trained_length
    name = FALLBACK_NAME.format(s=s)
    for row in result.rows:
        if row.name == name:
            return row.strategy
    why = "YaRN ramp (the fallback)"
    return yarn_strategy(result.model, s, result.trained_length, description=why)


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
        from posgeom.encodings._extension import Strategy

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
        out["ranked_by_record"] = compact_record(family["predictors"][ranked_by])
        out["ranked_by_validated"] = bool(family["predictors"][ranked_by]["validated"] and inside)
    out["ranking"] = f"{pick['rule']} ({'validated' if validated else 'not validated'})"
    if ranked_by is not None and ranked_by != pick["predictor"]:
        said = "validated" if out.get("ranked_by_validated") else "not validated"
        out["ranking"] += f" first, then {ranked_by} ({said})"
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
