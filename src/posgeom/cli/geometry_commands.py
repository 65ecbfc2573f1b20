"""``posgeom geometry | run | score | demo``: geometry, MDS encoding and scores."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.analysis.pipeline import DEFAULT_MODEL_DIM
from posgeom.cli._checks import unique_names
from posgeom.cli._options import (
    add_pipeline_arguments,
    add_resolution_argument,
    position_smoothing,
)
from posgeom.cli._verdict import print_hints, verdict_line

log = logging.getLogger("posgeom")
FMT = argparse.ArgumentDefaultsHelpFormatter


def add_geometry_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("geometry and encoding")
    g.add_argument(
        "-d",
        "--model-dim",
        type=int,
        default=DEFAULT_MODEL_DIM,
        help="model width d for the MDS encoding (BERT-base: 768)",
    )
    g.add_argument(
        "-r",
        "--components",
        dest="n_components",  # the library's name: its messages name the flag
        type=int,
        default=None,
        help="rank r of the MDS encoding (default: min(n - 1, d))",
    )
    add_pipeline_arguments(g)
    g.add_argument("--no-refine", action="store_true", help="skip the SMACOF refinement")
    g.add_argument("--noise-repeats", type=int, default=5, help="splits or bootstrap replicates")
    p.add_argument("-o", "--output", required=True, help="results folder (created atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    add_report_argument(p)


def add_report_argument(p: argparse.ArgumentParser) -> None:
    """``--report``: also write ``report.html`` (and its figures) into the results folder."""
    p.add_argument(
        "--report",
        action="store_true",
        help="also write report.html (self-contained: figures, verdict, tables) and "
        "report_figures/ (PNG and SVG) into the results folder",
    )


def _encoding_specs(specs: list[str]) -> list[tuple[str, Path]]:
    from posgeom.analysis.compare import comparable_encodings

    out = []
    for spec in specs:
        if "=" not in spec:
            raise PosgeomError(f"--encoding expects NAME=FILE, got {spec!r}")
        name, path = spec.split("=", 1)
        out.append((name, Path(path)))
    unique_names([n for n, _ in out], "--encoding", comparable_encodings())
    return out


def _extra_encodings(specs: list[str], n: int) -> dict[str, Any]:
    """The ``--encoding`` files for ``n`` positions. One rule (as ``encodings.from_file``): a file
    with more positions keeps its first ``n`` (said in a log line), one with fewer is refused."""
    from posgeom.encodings import from_file

    out = {}
    for name, path in _encoding_specs(specs):
        out[name] = _said_cut(from_file(path, n), f"--encoding {name}", path, n)
    return out


def _said_cut(encoding: Any, label: str, path: Any, n: int) -> Any:
    """``encoding`` (read by ``encodings.from_file`` for ``n`` positions), with a log line when
    its file held more positions and only the first ``n`` are kept."""
    rows = encoding.params.get("rows")
    if rows is not None and rows > n:
        log.info("%s: %s has %d positions; using the first %d", label, path, rows, n)
    return encoding


def _analyze(counts: Any, args: argparse.Namespace, n_extra: int | None = None) -> Any:
    """The pipeline on ``counts`` with the comparison's baselines and the --encoding files."""
    from posgeom.analysis.compare import with_baselines
    from posgeom.analysis.pipeline import analyze_counts

    n = counts.counts.shape[0] if hasattr(counts, "counts") else np.shape(counts)[0]
    result = analyze_counts(
        counts,
        model_dim=args.model_dim,
        n_components=args.n_components,
        smoothing=args.smoothing,
        alpha=args.alpha,
        min_samples=args.min_samples,
        below_min=args.below_min,
        convention=args.convention,
        solver=args.solver,
        encodings=_extra_encodings(args.encoding, n),
        refine=not args.no_refine,
        noise=None if args.noise == "none" else args.noise,
        noise_repeats=args.noise_repeats,
        seed=args.seed,
        estimator=args.estimator,
        resolution=getattr(args, "resolution", "auto"),
        estimator_options=position_smoothing(args) or None,
    )
    return with_baselines(result)


def _analyze_and_save(
    counts_fn: Any,
    args: argparse.Namespace,
    inputs: tuple[Any, ...] = (),
) -> Any:
    """Check the output folder first, then build the counts (``counts_fn()``), analyse, save."""
    from posgeom.reports import results_folder

    inputs = (*inputs, *(p for _, p in _encoding_specs(args.encoding)))
    report = bool(getattr(args, "report", False))
    with results_folder(
        args.output, overwrite=args.overwrite, inputs=inputs, with_report=report, content="run"
    ) as tmp:
        counts = counts_fn()
        result = _analyze(counts, args)
        result.write(tmp)
        if hasattr(counts, "save"):
            counts.save(tmp / "counts.npz")
    print(result.markdown_table(), end="")  # ends with the verdict line
    print_hints(result)
    files = "summary.json, arrays.npz, table.md" + (", report.html" if report else "")
    print(f"results in {args.output}/ ({files})")
    return result


def _geometry(args: argparse.Namespace) -> int:
    from posgeom.corpus.counting import PositionCounts

    counts = PositionCounts.load(args.counts)  # a damaged file is refused before the folder
    _analyze_and_save(lambda: counts, args, inputs=(args.counts,))
    return 0


def _run(args: argparse.Namespace) -> int:
    from posgeom.cli.corpus_commands import check_count_args, corpus_inputs, counts_from_args

    check_count_args(args)

    _analyze_and_save(lambda: counts_from_args(args), args, inputs=corpus_inputs(args))
    return 0


def _demo(args: argparse.Namespace) -> int:
    """The synthetic corpus through the same pipeline and baselines as ``run``."""
    from posgeom.corpus.counting import count_positions
    from posgeom.synthetic import synthetic_corpus

    n = args.max_positions
    if args.report and not args.output:
        raise PosgeomError("--report needs a results folder: add -o DIR")
    log.info("synthetic three-regime corpus: %d sequences of %d tokens", args.n_sequences, n)
    seqs = synthetic_corpus(args.n_sequences, length=n, seed=args.seed)
    counts = count_positions(seqs, max_positions=n)
    if args.output:
        _analyze_and_save(lambda: counts, args)
        return 0
    result = _analyze(counts, args)
    print(result.markdown_table(), end="")  # ends with the verdict line
    return 0


def _split_key(spec: str, key: str | None) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:KEY`` (an array of an .npz/.safetensors file) -> (path, key)."""
    path, _, tail = spec.rpartition(":")
    if path and tail and not Path(spec).exists() and Path(path).suffix in (".npz", ".safetensors"):
        return Path(path), tail
    return Path(spec), key


def _folder_document(p: Path) -> dict[str, Any]:
    """The summary JSON of the results folder holding ``p`` (``summary.json`` or
    ``comparison.json``), ``{}`` when there is none."""
    from posgeom.io.jsonfiles import read_json

    for name in ("summary.json", "comparison.json"):
        if (p.parent / name).is_file():
            return dict(read_json(p.parent / name))
    return {}


def _folder_geometry(p: Path) -> dict[str, Any]:
    """The pipeline summary of the results folder holding ``p`` (``summary.json``, or a
    comparison's ``geometry``), ``{}`` when there is none."""
    doc = _folder_document(p)
    return dict(doc.get("geometry") or {}) if "geometry" in doc else doc


def _load_target(spec: str, key: str | None = None) -> Any:
    """The target distances: the ``hellinger`` array (or ``KEY``) of a results folder's
    arrays.npz, an (n, n) distance matrix file, or a long-context folder's target as blocks
    (:func:`posgeom.analysis.pipeline_scale.stored_target`)."""
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
            from posgeom.analysis.pipeline_scale import stored_target

            return stored_target(arrays, _folder_geometry(p), str(p))
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
    from posgeom.analysis.pipeline import score_encoding, score_table
    from posgeom.encodings import from_file

    specs = [spec.split("=", 1) if "=" in spec else (None, spec) for spec in args.encodings]
    named = [(name, *_split_key(path, args.key)) for name, path in specs]
    unique_names([name if name is not None else f.stem for name, f, _ in named], "score")
    target = _load_target(args.target, args.target_key)
    score = partial(score_encoding, target=target, seed=args.seed)
    if hasattr(target, "pairs"):  # a long-context folder: one pair sample, every score on it
        from posgeom.analysis.pipeline_scale import Scorer

        score = Scorer.for_target(target, target.n_positions, seed=args.seed).score
        log.info("target: the folder's MDS coordinates (the whole estimate); scores sampled")
    n = target.n_positions if hasattr(target, "pairs") else target.shape[0]
    rows = {}
    for name, file, key in named:
        label = name if name is not None else file.stem
        rows[label] = score(_said_cut(from_file(file, n, key=key), f"score {label}", file, n))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print("\n".join(score_table(rows)))
    print(verdict_line(rows, target=_target_block(args.target, args.target_key)))
    return 0


def register(sub: Any) -> None:
    from posgeom.cli.corpus_commands import add_count_arguments

    p = sub.add_parser(
        "geometry",
        formatter_class=FMT,
        help="counts -> Hellinger geometry, MDS encoding and scores",
        description="Build the positional distributions, their Hellinger distances, "
        "the MDS-optimal encoding (Algorithm 1) and its scores from a counts file.",
    )
    p.add_argument("counts", help="counts file written by `posgeom count`")
    add_geometry_arguments(p)
    p.set_defaults(handler=_geometry)

    p = sub.add_parser(
        "run",
        formatter_class=FMT,
        help="corpus -> counts -> geometry -> MDS -> scores, into a results folder",
        description="The whole pipeline in one command. Writes summary.json, "
        "arrays.npz, table.md and counts.npz.",
    )
    add_count_arguments(p)
    add_geometry_arguments(p)
    p.set_defaults(handler=_run)

    p = sub.add_parser(
        "score",
        formatter_class=FMT,
        help="score encoding files against a geometry",
        description="Stress (paper, stress-1, scale-optimal), monotonicity violation "
        "rate and separation margin of each encoding against a target geometry.",
    )
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
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled violation rate")
    p.set_defaults(handler=_score)

    p = sub.add_parser(
        "demo",
        formatter_class=FMT,
        help="the whole pipeline on a built-in synthetic corpus",
        description="Needs no download: counts a synthetic corpus built from three "
        "positional distributions and prints the comparison table.",
    )
    p.add_argument("-n", "--max-positions", type=int, default=32, help="sequence length n")
    p.add_argument(
        "--sequences", dest="n_sequences", type=int, default=2000, help="synthetic sequences"
    )
    p.add_argument(
        "-d",
        "--model-dim",
        type=int,
        default=DEFAULT_MODEL_DIM,
        help="model width d of the MDS and fixed encodings (BERT-base: 768)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("-o", "--output", default=None, help="also write a results folder here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    add_resolution_argument(p)
    add_report_argument(p)
    p.set_defaults(
        handler=_demo,
        n_components=None,
        smoothing="none",
        alpha=1.0,
        min_samples=1,
        below_min="flag",
        convention="chord",
        solver="auto",
        no_refine=False,
        noise="split_half",
        noise_repeats=5,
        encoding=[],
        estimator="plugin",  # Algorithm 1 on the plug-in geometry (MDS reproduces D exactly)
    )
