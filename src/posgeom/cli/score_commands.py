"""``posgeom score``: encoding files scored against a stored geometry (a results folder's
target, or a distance matrix)."""

from __future__ import annotations

import argparse
import logging
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError, printable
from posgeom.cli._checks import unique_names
from posgeom.cli._options import add_command, add_seed_argument
from posgeom.cli._verdict import verdict_line
from posgeom.cli.pipeline_commands import read_encoding
from posgeom.io.jsonfiles import json_text

log = logging.getLogger("posgeom")


def _split_key(spec: str, key: str | None) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:KEY`` (an array of an .npz/.safetensors file) -> (path, key)."""
    path, _, tail = spec.rpartition(":")
    if path and tail and not Path(spec).exists() and Path(path).suffix in (".npz", ".safetensors"):
        return Path(path), tail
    return Path(spec), key


def _folder_document(p: Path) -> dict[str, Any]:
    """The summary JSON of the results folder holding ``p``, ``{}`` when there is none."""
    from posgeom.io.jsonfiles import read_json

    for name in ("summary.json", "comparison.json"):
        if (p.parent / name).is_file():
            return dict(read_json(p.parent / name))
    return {}


def _load_target(spec: str, key: str | None = None) -> Any:
    """The target distances: the ``hellinger`` array (or ``KEY``) of a results folder's
    arrays.npz, an (n, n) distance matrix file, or a long-context folder's target as blocks
    (:func:`posgeom.estimators._blocks.stored_target`)."""
    from posgeom.io.artifacts import is_artifact, load_artifact

    p, key = _split_key(spec, key)
    if p.is_dir():
        raise PosgeomError(f"--target {p} is a folder; pass its arrays.npz")
    if not p.exists():
        raise PosgeomError(f"--target {p} does not exist; pass the arrays.npz of a results folder")
    if is_artifact(p):
        arrays, _ = load_artifact(p)
        name = key or "hellinger"
        if key is None and name not in arrays and "hellinger_grid" in arrays:
            from posgeom.estimators._blocks import stored_target

            doc = _folder_document(p)  # summary.json, or a comparison's geometry
            geometry = dict(doc.get("geometry") or {}) if "geometry" in doc else doc
            return stored_target(arrays, geometry, str(p))
        if name not in arrays:
            raise PosgeomError(
                f"{p} holds no {name!r} array (it has {sorted(arrays)}); pass the arrays.npz of "
                "`posgeom geometry`, or FILE:KEY"
            )
        return np.asarray(arrays[name])
    from posgeom.encodings import from_file

    return from_file(p, kind="distances", key=key).distances


def _target_block(spec: str, key: str | None) -> dict[str, Any]:
    """What names the target a score reads from a results folder's arrays.npz: the folder's
    stored verdict inputs for its ``hellinger`` array (``plugin_hellinger``: the
    full-vocabulary plug-in); ``{}`` when unknown (a bare matrix, another key)."""
    from posgeom.io.artifacts import is_artifact, read_sidecar

    p, key = _split_key(spec, key)
    plugin = {"estimator": "plugin", "resolution": "full"}
    if key == "plugin_hellinger":
        return plugin
    if key not in (None, "hellinger", "target") or not is_artifact(p):
        return {}
    if key != "target" and "target" in (read_sidecar(p).get("arrays") or {}):
        return plugin  # an analyze-model folder written when hellinger was the plug-in
    try:
        doc = _folder_document(p)
    except PosgeomError:
        return {}
    stored = (doc.get("verdict") or {}).get("inputs")
    if stored:
        return dict(stored)
    block = doc.get("estimator") or {}  # folders without a verdict block
    return {k: block[k] for k in ("estimator", "resolution") if block.get(k) is not None}


def _score(args: argparse.Namespace) -> int:
    """score encoding files against a geometry

    Stress (paper, stress-1, scale-optimal), monotonicity violation rate and separation margin of
    each encoding against a target geometry."""
    from posgeom.scores.table import score_encoding
    from posgeom.text.markdown import score_table

    specs = [spec.split("=", 1) if "=" in spec else (None, spec) for spec in args.encodings]
    named = [(name, *_split_key(path, args.key)) for name, path in specs]
    unique_names([name if name is not None else f.stem for name, f, _ in named], "score")
    target = _load_target(args.target, args.target_key)
    score = partial(score_encoding, target=target, seed=args.seed)
    if hasattr(target, "pairs"):  # a long-context folder: one pair sample, every score on it
        from posgeom.scores.sampled import PRIMARY
        from posgeom.scores.table import ScoreTargets

        targets = ScoreTargets.for_target(target, target.n_positions, seed=args.seed)
        score = lambda enc: targets.score_one(enc)[PRIMARY]  # noqa: E731
        log.info("target: the folder's MDS coordinates (the whole estimate); scores sampled")
    n = target.n_positions if hasattr(target, "pairs") else target.shape[0]
    rows = {}
    for name, file, key in named:
        label = name if name is not None else file.stem
        rows[label] = score(read_encoding(file, n, f"score {label}", key=key))
    if args.json:
        print(json_text(rows, indent=2))
        return 0
    print("\n".join(score_table(rows)))
    print(printable(verdict_line(rows, target=_target_block(args.target, args.target_key))))
    return 0


def register(sub: Any) -> None:
    p = add_command(sub, "score", _score)
    p.add_argument(
        "--target",
        required=True,
        help="arrays.npz of a results folder, or an (n, n) distance matrix (.npy); "
        "FILE:KEY picks an array. A long-context folder (no n x n array) is scored on sampled "
        "pairs against its MDS coordinates when they hold the whole estimate",
    )
    p.add_argument(
        "--target-key", default=None, help="array of --target to use (default: hellinger)"
    )
    p.add_argument(
        "encodings",
        nargs="+",
        metavar="[NAME=]FILE[:KEY]",
        help="encodings: (n, d) vectors or (n, n) distances in .npy/.npz/.safetensors; "
        "FILE:KEY picks one array of a file that holds several",
    )
    p.add_argument(
        "--key", default=None, help="array to read from every encoding file that holds several"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    add_seed_argument(p, what="seed of the sampled violation rate")
