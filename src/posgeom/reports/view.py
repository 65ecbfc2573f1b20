"""A results view: what a report shows, from a live result object or from a results folder.

:func:`view_of` turns a :class:`~posgeom.pipeline.result.GeometryResult` (``geometry``, ``run``,
``demo``, ``compare``: one summary schema whose ``kind`` names the command), a
:class:`~posgeom.models.result.ModelAnalysis` (``analyze-model``) or a results folder of any of
those or of ``reproduce`` into one :class:`ResultView`. A folder with missing or damaged parts
gives a view of what is there, and :attr:`ResultView.missing` names the rest.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import ArtifactError, PosgeomError
from posgeom.reports._integrity import array_problem, changed_since_written, summary_problem
from posgeom.reports.claims import claim_tables
from posgeom.text.schema import score_rows, summary_rows
from posgeom.text.verdict_inputs import VerdictInputs, resolution_setting, verdict_inputs

__all__ = [
    "LABELS",
    "ResultView",
    "load_folder",
    "target_arrays",
    "view_of",
]

LABELS = {
    "run": "geometry",
    "compare": "comparison",
    "analyze-model": "model analysis",
    "reproduce": "reproduction",
    "extend": "context extension",
}

# files of each kind of results folder, and what a report loses without them
_PARTS = {
    "run": {
        "summary.json": "the scores, settings and verdict",
        "arrays.npz": "the heatmap, spectrum and MDS maps",
        "table.md": "the Markdown table",
        "counts.npz": "the counts (a rerun needs the corpus)",
    },
    "compare": {
        "comparison.json": "the table, rank curve, settings and verdict",
        "arrays.npz": "the heatmap, spectrum, MDS maps and Shepard plots",
        "comparison.md": "the Markdown table",
        "counts.npz": "the counts (a rerun needs the corpus)",
    },
    "extend": {
        "summary.json": "the ranked strategies, lag geometry and verdict",
        "arrays.npz": "the heatmap of the lag geometry",
        "table.md": "the Markdown table",
    },
    "analyze-model": {
        "summary.json": "the per-layer table, scores and settings",
        "arrays.npz": "the heatmap and MDS maps",
        "table.md": "the Markdown table",
    },
}


@dataclass(frozen=True, eq=False)
class ResultView:
    """What a report renders (every part optional).

    ``rows``: score rows (:mod:`posgeom.text.schema`); ``arrays``: ``hellinger`` ``(n, n)``,
    ``totals`` ``(n,)``, ``noise_pair_floor`` ``(n, n)``, ``mds_coordinates`` ``(n, r)``,
    ``eigenvalues``, ``positions``, ``shepard_pairs`` ``(2, m)`` and ``shepard_<name>`` ``(m,)``.
    """

    kind: str
    title: str
    settings: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    heads: list[dict[str, Any]] = field(default_factory=list)
    rank_curve: list[dict[str, Any]] = field(default_factory=list)
    stationarity: dict[str, Any] | None = None
    geometry: dict[str, Any] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    present: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    parts: tuple[ResultView, ...] = ()
    notes: tuple[str, ...] = ()
    verdict: VerdictInputs | None = None  # what every verdict of this view reads
    claims: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, ...], ...]], ...] = ()
    words: tuple[str, ...] = ()  # verdict lines of a view without verdict inputs (extend)
    sections: tuple[tuple[str, list[dict[str, Any]], tuple], ...] = ()  # (heading, rows, columns)

    @property
    def convention(self) -> str:
        return str(self.settings.get("Hellinger convention", "chord"))


def _settings(summary: dict[str, Any], geometry: dict[str, Any]) -> dict[str, Any]:
    """The run's settings, in reading order."""
    opts = {**geometry.get("options", {}), **summary.get("options", {})}
    corpus = geometry.get("corpus") or summary.get("corpus") or {}
    tok = corpus.get("tokenizer") or {}
    counting = corpus.get("options") or {}
    out: dict[str, Any] = {
        "corpus": corpus.get("name"),
        "corpus fingerprint": corpus.get("fingerprint"),
        "sequences": corpus.get("n_sequences"),
        "tokenizer": tok.get("name") if isinstance(tok, dict) else tok,
        "vocabulary": tok.get("vocab_size") if isinstance(tok, dict) else None,
        "n (positions)": opts.get("n_positions")
        or geometry.get("distributions", {}).get("n_positions"),
        "d (model width)": opts.get("model_dim"),
        "special tokens": None
        if "include_special" not in counting
        else ("counted" if counting["include_special"] else "excluded"),
        "estimator": opts.get("estimator")
        or ("plug-in (add-alpha)" if opts.get("smoothing") == "add-alpha" else "plug-in"),
        "Hellinger convention": opts.get("convention", "chord"),
        "stress kinds": "paper, stress-1, scale-optimal (alpha*), raw",
        "MDS solver": opts.get("solver"),
        "noise floor": opts.get("noise"),
        "seed": opts.get("seed"),
        "posgeom": summary.get("posgeom_version"),
    }
    return {k: v for k, v in out.items() if v is not None}


def _load_arrays(path: Path) -> tuple[dict[str, np.ndarray], str | None]:
    from posgeom.io.artifacts import load_artifact

    try:
        arrays, _ = load_artifact(path)
    except (ArtifactError, OSError, ValueError) as exc:
        return {}, f"{path.name} could not be read ({str(exc).splitlines()[0][:160]})"
    return {k: np.asarray(v) for k, v in arrays.items()}, None


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    from posgeom.io.jsonfiles import read_json

    try:
        return read_json(path), None
    except PosgeomError as exc:
        return None, f"{path.name} could not be read ({str(exc)[:160]})"


def target_arrays(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A model analysis's arrays as drawn: ``hellinger`` the target, ``plugin_hellinger`` the
    plug-in (an old folder's ``target``; its plug-in MDS and floor, of another D, left out)."""
    if "target" not in arrays:
        return arrays
    old = ("target", "mds_coordinates", "mds_embedding", "noise_pair_floor", "eigenvalues")
    out = {k: v for k, v in arrays.items() if k not in old}
    out["plugin_hellinger"], out["hellinger"] = arrays["hellinger"], arrays["target"]
    return out


def _from_summary(kind: str, summary: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict:
    """Keyword arguments of :class:`ResultView` from a summary JSON of ``kind``."""
    vi = verdict_inputs(kind, summary)
    geom, rows, curve = summary_rows(kind, summary)
    if kind == "analyze-model" and "table" not in summary:
        scores = summary.get("position_encodings_target")  # an old folder's
        rows, curve = (score_rows(scores), []) if scores else (rows, curve)
        arrays = target_arrays(arrays)
    settings = _settings(summary, geom)
    extra: dict[str, Any] = {}
    if kind == "extend":
        from posgeom.reports.extend_parts import extend_parts, extend_settings

        settings, extra = extend_settings(summary, settings), extend_parts(summary)
    if kind == "analyze-model":
        settings = {"model": summary.get("model", {}).get("name"), **settings}
        settings["corpus"] = summary.get("corpus", {}).get("name")
        settings["mechanisms"] = "; ".join(map(str, summary.get("mechanisms", [])))
        settings = {k: v for k, v in settings.items() if v}
    if vi is not None:
        settings["estimator"] = vi.estimator or "as given (not recorded)"
        settings["resolution"] = resolution_setting(vi)
    return {
        "settings": settings,
        "rows": rows,
        # per-head rows of any family ("alibi_heads": folders written before they were generic)
        "heads": summary.get("heads", summary.get("alibi_heads", [])),
        "rank_curve": curve,
        "stationarity": summary.get("stationarity"),
        "geometry": geom,
        "layers": summary.get("layers", []),
        "arrays": arrays,
        "verdict": vi,
        **extra,
    }


# a summary's ``kind`` -> the view's kind (geometry, run, demo and compare: one schema)
_VIEW_KINDS = {"geometry": "run", "run": "run", "demo": "run", "compare": "compare"}
_VIEW_KINDS |= {"posgeom_comparison": "compare", "posgeom_extension": "extend"}  # older kinds
_SIDECAR_KINDS = {
    "comparison_results": "compare",
    "model_analysis": "analyze-model",
    "extension_results": "extend",
}


def _kind_of(folder: Path) -> str | None:
    """The kind its summary names, else (a folder whose summary names none) its files'."""
    names = ("summary.json", "comparison.json")
    read = {name: _read_json(folder / name)[0] for name in names if (folder / name).exists()}
    for data in read.values():
        if isinstance(data, dict) and data.get("kind") in _VIEW_KINDS:
            return _VIEW_KINDS[data["kind"]]
    if (folder / "comparison.json").exists() or (folder / "comparison.md").exists():
        return "compare"
    if (folder / "REPRODUCTION.md").exists() or (folder / "reproduction").is_dir():
        return "reproduce"
    if "summary.json" in read:
        return "analyze-model" if "layers" in (read["summary.json"] or ()) else "run"
    if (folder / "arrays.npz").exists():
        from posgeom.io.artifacts import read_sidecar

        try:
            return _SIDECAR_KINDS.get(str(read_sidecar(folder / "arrays.npz").get("kind")), "run")
        except (OSError, ValueError):
            return "run"
    return None


def _reproduce_folder(folder: Path) -> ResultView:
    sub = folder / "reproduction" if (folder / "reproduction").is_dir() else folder
    parts, present, notes = [], [], []
    claims: tuple = ()
    if (folder / "REPRODUCTION.md").exists():
        present.append("REPRODUCTION.md")
        claims = claim_tables((folder / "REPRODUCTION.md").read_text(encoding="utf-8"))
    for path in sorted(sub.glob("*.json")):
        data, err = _read_json(path)
        if err:
            notes.append(err)
        elif isinstance(data, dict) and _VIEW_KINDS.get(str(data.get("kind"))) == "compare":
            present.append(f"{sub.name}/{path.name}")
            parts.append(ResultView("compare", path.stem, **_from_summary("compare", data, {})))
    missing = [] if parts else ["reproduction/*.json: no comparison results to show"]
    if "REPRODUCTION.md" not in present:
        missing.append("REPRODUCTION.md: the claims table")
    notes.append("reproduce keeps no distance matrices, so this page has no heatmaps or MDS maps")
    return ResultView(
        "reproduce",
        f"reproduction in {folder}",
        parts=tuple(parts),
        present=tuple(present),
        missing=tuple(missing),
        notes=tuple(notes),
        claims=claims,
    )


def load_folder(directory: str | os.PathLike, *, drop: dict[str, str] | None = None) -> ResultView:
    """The view of a results folder of ``run``, ``geometry``, ``demo -o``, ``compare``,
    ``analyze-model`` or ``reproduce``; what is absent or damaged is named in ``missing``.
    ``drop``: file name -> why it is left out (a summary the report could not use)."""
    drop = dict(drop or {})
    folder = Path(directory)
    if not folder.is_dir():
        raise PosgeomError(f"results folder {folder} does not exist (or is not a folder)")
    kind = _kind_of(folder)
    if kind is None:
        raise PosgeomError(
            f"{folder} holds none of the results files of run, compare, analyze-model or "
            "reproduce (summary.json, comparison.json, arrays.npz, REPRODUCTION.md); pass the "
            "folder given to -o"
        )
    if kind == "reproduce":
        return _reproduce_folder(folder)
    present, missing = [], []
    summary: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    main = "comparison.json" if kind == "compare" else "summary.json"
    for name, loses in _PARTS[kind].items():
        path = folder / name
        if not path.exists():
            missing.append(f"{name}: {loses}")
            continue
        err = drop.get(name) or changed_since_written(folder, name)
        if err is None and name == main:
            summary, err = _read_json(path)
            err = err or summary_problem(summary, name)
            summary = summary if err is None else {}
        elif err is None and name == "arrays.npz":
            arrays, err = _load_arrays(path)
        if err:
            missing.append(f"{err}: {loses}")
        else:
            present.append(name)
    problem = array_problem(arrays, summary) if arrays else None
    if problem:
        arrays = {}
        present.remove("arrays.npz")
        missing.append(f"{problem}: {_PARTS[kind]['arrays.npz']}")
    if "mds_coordinates" not in arrays and "mds_embedding" in arrays:
        x = arrays["mds_embedding"]  # principal coordinates: the centred SVD, u * s
        u, sv, _ = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
        arrays["mds_coordinates"] = u * sv
    try:
        parts = _from_summary(kind, summary, arrays)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        if not summary:
            raise
        why = f"{main} has fields of unexpected types ({type(exc).__name__})"
        return load_folder(folder, drop={**drop, main: why})
    return ResultView(
        kind,
        f"{LABELS[kind]}: {folder.name}",
        **parts,
        present=tuple(present),
        missing=tuple(missing),
    )


def view_of(result: Any) -> ResultView:
    """The view of a result object or of a results folder (a path)."""
    if isinstance(result, ResultView):
        return result
    if isinstance(result, (str, os.PathLike)):
        return load_folder(result)
    report = getattr(result, "report_input", None)  # the pipeline's: fields, no call back
    if report is not None:
        kind, title, arrays = report.kind, report.title, dict(report.arrays)
        summary = copy.deepcopy(report.summary)
    elif (kind := getattr(result, "report_kind", None)) is None:
        raise PosgeomError(
            f"cannot report a {type(result).__name__}; pass a results folder or the result of "
            "posgeom.analyze or posgeom.models.analysis.analyze_model"
        )
    else:
        summary = result.summary()
        arrays = result.report_arrays() if hasattr(result, "report_arrays") else {}
        title = getattr(result, "report_title", None) or kind
    return ResultView(kind, title, **_from_summary(kind, summary, arrays))
