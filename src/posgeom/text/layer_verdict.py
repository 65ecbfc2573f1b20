"""Which layer holds the positional signal closest in shape to the target, said only as far as
the intervals separate it.

The layer of lowest scale-optimal stress is *separated* when no other layer's interval reaches
below its upper bound (``low_other > high_best``); otherwise the layers whose intervals overlap
it (``low_other <= high_best``, the lowest included) *tie*, and the verdict names that set, not
one layer. Without intervals (no ``--bootstrap``) the lowest layer is named with that said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from posgeom.text.schema import interval

__all__ = ["KEY", "layer_sentence", "tied_layers", "with_ci"]

KEY = "stress_scale_optimal"


def tied_layers(rows: Sequence[Mapping[str, Any]], key: str = KEY) -> list[Any]:
    """The layers tied with the lowest ``key`` (module docstring; the lowest first, then in
    the rows' order), or ``[lowest]`` when it is separated or there are no intervals."""
    rows = [r for r in rows if r.get(key) is not None]
    if not rows:
        return []
    best = min(rows, key=lambda r: float(r[key]))
    ci = interval(best, key)
    if ci is None:
        return [best["layer"]]
    others = [
        r["layer"] for r in rows if r is not best and (iv := interval(r, key)) and iv[0] <= ci[1]
    ]
    return [best["layer"], *others]


def layer_sentence(layers: Sequence[Mapping[str, Any]], layer_level: float | None) -> str | None:
    """The layer sentence of rows with ``layer``, :data:`KEY` and its ``_ci`` (or ``_low`` and
    ``_high``, as summaries store them) at interval level ``layer_level``; None without stress."""
    rows = [with_ci(r) for r in layers if r.get(KEY) is not None]
    if not rows:
        return None
    best = min(rows, key=lambda r: float(r[KEY]))
    ci = interval(best, KEY)
    level = f"{100 * layer_level:.0f}% " if layer_level else ""
    shown = f"{float(best[KEY]):.3g}" + (
        f", {level}interval [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else ""
    )
    ties = tied_layers(rows)
    if len(ties) > 1:
        return (
            f"the positional signal is closest in shape at layers {', '.join(map(str, ties))} "
            f"(tied: their {level}intervals overlap that of the lowest, layer {best['layer']}, "
            f"{shown}; no one layer is separated)"
        )
    if ci is None:
        return (
            f"the positional signal is closest in shape at layer {best['layer']} ({shown}; "
            "no intervals, so not shown to be separated: --bootstrap B)"
        )
    return f"the positional signal is closest in shape at layer {best['layer']} ({shown})"


def with_ci(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """``row`` with ``KEY_ci`` from its stored ``KEY_low`` / ``KEY_high`` where it lacks one."""
    low, high = row.get(f"{KEY}_low"), row.get(f"{KEY}_high")
    if f"{KEY}_ci" in row or low is None or high is None:
        return row
    return {**row, f"{KEY}_ci": [low, high]}
