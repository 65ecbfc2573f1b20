"""What a report may trust of a results folder: files unchanged since posgeom wrote them, arrays
that are finite and of the folder's size, a summary of the expected JSON types.

A part that fails is left out of the report and named in its "missing" list, so a damaged or
mixed folder gives a partial report that says why, never numbers from another run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["array_problem", "changed_since_written", "summary_problem"]


def changed_since_written(folder: Path, name: str) -> str | None:
    """Why ``folder/name`` differs from the record in the folder's ``posgeom-manifest.json``
    (size or SHA-256), or None (unchanged, or no manifest to compare with)."""
    from posgeom.io._results import RESULTS_MANIFEST, changed_file, manifest_files

    record = (manifest_files(folder) or {}).get(name)
    if record is None or not changed_file(folder / name, record):
        return None
    return (
        f"{name} changed since posgeom wrote it (its SHA-256 differs from {RESULTS_MANIFEST}; "
        "copied from another run, or edited)"
    )


def array_problem(arrays: dict[str, np.ndarray], summary: dict[str, Any]) -> str | None:
    """Why ``arrays`` (of arrays.npz) cannot be drawn beside ``summary``, or None."""
    bad = sorted(k for k, v in arrays.items() if v.dtype.kind in "fc" and not np.isfinite(v).all())
    if bad:
        return f"arrays.npz holds NaN or Inf values ({', '.join(bad[:3])})"
    square = {k: v.shape for k, v in arrays.items() if v.ndim == 2 and v.shape[0] == v.shape[1]}
    sizes = {s[0] for s in square.values()}
    samples = summary.get("samples_per_position") or summary.get("geometry", {}).get(
        "samples_per_position"
    )
    n = len(samples) if isinstance(samples, list) and samples else None
    if len(sizes) > 1 or (n is not None and sizes and sizes != {n}):
        found = ", ".join(f"{k} {s}" for k, s in sorted(square.items())[:3])
        return f"arrays.npz does not match the summary's {n} positions ({found}; another run?)"
    return None


_TYPES = {
    "scores": dict,
    "rank_curve": list,
    "table": list,
    "options": dict,
    "geometry": dict,
    "layers": list,
    "alibi_heads": list,
}


def summary_problem(summary: Any, name: str) -> str | None:
    """Why a parsed summary cannot be reported (not an object, or a field of the wrong type)."""
    if not isinstance(summary, dict):
        return f"{name} is not a JSON object"
    wrong = [k for k, t in _TYPES.items() if k in summary and not isinstance(summary[k], t)]
    if wrong:
        return f"{name} has fields of the wrong type ({', '.join(wrong)})"
    return None
