"""``posgeom geometry | run | demo | compare``: one job, one handler over three count sources.

The four commands run the same pipeline (:mod:`posgeom.pipeline`) once on counts and write one
results folder with one summary; they differ only in where the counts come from:

- ``corpus``: a corpus counted here (``run CORPUS -n N``, ``compare CORPUS -n N``);
- ``file``: a counts file of ``posgeom count`` (``geometry COUNTS``, ``compare --counts FILE``;
  ``-n`` keeps its first positions, ``-t``/``--model`` are checked against its vocabulary);
- ``synthetic``: the built-in three-regime corpus (``demo -n N --sequences S``).

Every pipeline flag is a field of :class:`~posgeom.pipeline.config.GeometryConfig`
(:mod:`posgeom.cli._config_flags`).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom.cli._checks import unique_names
from posgeom.cli._config_flags import add_config_arguments, config_from_args
from posgeom.cli._options import add_command, add_results_folder_arguments
from posgeom.cli._verdict import print_hints

__all__ = ["read_encoding", "register"]

log = logging.getLogger("posgeom")
CORPUS, FILE, SYNTHETIC = "corpus", "file", "synthetic"


# ----------------------------------------------------------------------------- count sources
def _source(args: argparse.Namespace) -> str:
    """Where this command's counts come from (module docstring); ``compare`` with a source given
    twice or not at all is refused before any work."""
    if args.command != "compare":
        return {"demo": SYNTHETIC, "geometry": FILE}.get(args.command, CORPUS)
    if args.counts and args.corpus:
        raise PosgeomError("pass either a CORPUS or --counts FILE, not both")
    if args.counts:
        return FILE
    if not args.corpus:
        raise PosgeomError("pass a CORPUS file (with -n N) or --counts FILE")
    if args.max_positions is None:
        raise PosgeomError("pass -n N, the number of positions to compare")
    return CORPUS


def _counts_file(args: argparse.Namespace) -> Any:
    """The counts file of ``geometry COUNTS`` or ``compare --counts FILE``: checked against the
    tokenizer and model named (their vocabulary), cut to ``-n`` positions when given (the
    counts' one truncation rule, replicates included)."""
    from posgeom.corpus.counting import PositionCounts
    from posgeom.corpus.tokenize import load_tokenizer

    path = Path(args.counts)
    if not path.exists():
        flag = "COUNTS" if args.command == "geometry" else "--counts"
        raise PosgeomError(f"counts file {path} does not exist; check the path of {flag}")
    counts = PositionCounts.load(path)
    if getattr(args, "tokenizer", "word") not in ("word", "whitespace", None):
        counts.check_tokenizer(load_tokenizer(args.tokenizer))
    if getattr(args, "learned_model", None):  # the model's table is read with its own tokenizer
        counts.check_tokenizer(load_tokenizer(args.learned_model))
    if getattr(args, "max_positions", None) is not None:
        counts = counts.first_positions(args.max_positions)
    return counts


def _synthetic_counts(args: argparse.Namespace) -> Any:
    """The counts of ``demo``'s synthetic three-regime corpus (``-n``, ``--sequences``, seed)."""
    from posgeom.corpus.counting import count_positions
    from posgeom.synthetic import synthetic_corpus

    n = args.max_positions
    log.info("synthetic three-regime corpus: %d sequences of %d tokens", args.n_sequences, n)
    sequences = synthetic_corpus(args.n_sequences, length=n, seed=args.seed)
    return count_positions(sequences, max_positions=n)


def _counting(args: argparse.Namespace, source: str) -> tuple[Callable[[], Any], tuple[Path, ...]]:
    """(the function that makes the counts, the files it reads): a counts file is read now, a
    corpus is counted in the results folder's temporary."""
    from posgeom.cli.corpus_commands import check_count_args, corpus_inputs, counts_from_args

    if source == FILE:
        counts = _counts_file(args)
        return (lambda: counts), (Path(args.counts),)
    if source == SYNTHETIC:
        return (lambda: _synthetic_counts(args)), ()
    check_count_args(args)
    return (lambda: counts_from_args(args)), corpus_inputs(args)


# ----------------------------------------------------------------------------- encoding files
def _encoding_specs(specs: list[str]) -> list[tuple[str, Path]]:
    """``--encoding NAME=FILE`` -> (name, path), names unique and not a built-in row."""
    from posgeom.encodings.comparison import comparable_encodings

    out = []
    for spec in specs:
        if "=" not in spec:
            raise PosgeomError(f"--encoding expects NAME=FILE, got {spec!r}")
        name, path = spec.split("=", 1)
        out.append((name, Path(path)))
    if out:  # the built-in rows are read from the registry only when there are files
        unique_names([n for n, _ in out], "--encoding", comparable_encodings())
    return out


def read_encoding(path: Path, n: int, label: str, key: str | None = None) -> Any:
    """The encoding in ``path`` for ``n`` positions (:func:`posgeom.encodings.from_file`: a file
    with more positions keeps its first ``n``, said in a log line; one with fewer is refused)."""
    from posgeom.encodings import from_file

    encoding = from_file(path, n, key=key)
    rows = encoding.params.get("rows")
    if rows is not None and rows > n:
        log.info("%s: %s has %d positions; using the first %d", label, path, rows, n)
    return encoding


# ----------------------------------------------------------------------------- the handler
def _analyze(counts: Any, config: Any, specs: list[tuple[str, Path]], command: str) -> Any:
    """The pipeline once on ``counts`` with ``config`` and the ``--encoding`` files."""
    from posgeom.pipeline import analyze

    n = counts.counts.shape[0]
    files = {name: read_encoding(path, n, f"--encoding {name}") for name, path in specs}
    return analyze(counts, config, encodings=files, kind=command)


def _pipeline(args: argparse.Namespace) -> int:
    """The one handler of ``geometry``, ``run``, ``demo`` and ``compare``: flags -> config,
    counts from the command's source, the pipeline once, one results folder, the table."""
    from posgeom.reports import results_folder

    source = _source(args)
    config = config_from_args(args)  # out-of-range values refused before any work
    specs = _encoding_specs(args.encoding)
    if args.report and not args.output:
        raise PosgeomError("--report needs a results folder: add -o DIR")
    make_counts, inputs = _counting(args, source)
    if not args.output:  # demo without -o: the table only
        result = _analyze(make_counts(), config, specs, args.command)
        print(result.markdown(), end="")  # ends with the verdict line
        return 0
    with results_folder(
        args.output,
        overwrite=args.overwrite,
        inputs=(*inputs, *(p for _, p in specs)),
        with_report=args.report,
        content="compare" if args.command == "compare" else "run",  # the result's report_kind
    ) as tmp:
        counts = make_counts()
        result = _analyze(counts, config, specs, args.command)
        result.write(tmp)
        counts.save(tmp / "counts.npz")  # the folder holds what it analysed
        files = sorted(p.name for p in tmp.iterdir() if p.is_file())
    print(result.markdown(), end="")  # ends with the verdict line
    print_hints(result)
    files += ["report.html"] if args.report else []  # drawn after this block, into the folder
    print(f"results in {printable(args.output)}/ ({printable(', '.join(files))})")
    return 0


# ----------------------------------------------------------------------------- the commands
def _add_outputs(p: argparse.ArgumentParser, **folder: Any) -> None:
    """The pipeline's own flags beside the config's: encoding files and the results folder
    (``folder``: :func:`~posgeom.cli._options.add_results_folder_arguments`' keywords)."""
    p.add_argument(
        "--encoding",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="also score an encoding from a file (.npy/.npz/.safetensors: (n, d) vectors "
        "or (n, n) distances); repeatable",
    )
    add_results_folder_arguments(p, **folder)


def _add_optional_count_arguments(p: argparse.ArgumentParser) -> None:
    """The ``count`` options with CORPUS and -n optional (``compare``'s ``--counts`` instead)."""
    from posgeom.cli._count_flags import add_count_arguments

    donor = argparse.ArgumentParser(add_help=False)
    add_count_arguments(donor)
    for action in donor._actions:
        if action.dest == "corpus":
            p.add_argument("corpus", nargs="*", default=[], help=action.help)
            continue
        if action.dest == "max_positions":
            action.required, action.default = False, None
        p._add_action(action)
    p.add_argument(
        "--counts",
        default=None,
        help="a counts file from `posgeom count` instead of CORPUS (-n then keeps the "
        "first n positions)",
    )


def _command(sub: Any, name: str, help_text: str, description: str) -> argparse.ArgumentParser:
    return add_command(sub, name, _pipeline, help=help_text, description=description)


def register(sub: Any) -> None:
    from posgeom.cli._count_flags import add_count_arguments

    p = _command(
        sub,
        "geometry",
        "counts -> Hellinger geometry, MDS encoding and scores",
        "Build the positional distributions, their Hellinger distances, the MDS-optimal "
        "encoding (Algorithm 1) and the scores of it and of the baseline encodings from a "
        "counts file.",
    )
    p.add_argument("counts", help="counts file written by `posgeom count`")
    add_config_arguments(p)
    _add_outputs(p)

    p = _command(
        sub,
        "run",
        "corpus -> counts -> geometry -> MDS -> scores, into a results folder",
        "The whole pipeline in one command: counts a corpus, then as `posgeom geometry`; the "
        "results folder also holds counts.npz.",
    )
    add_count_arguments(p)
    add_config_arguments(p)
    _add_outputs(p)

    p = _command(
        sub,
        "demo",
        "the whole pipeline on a built-in synthetic corpus",
        "Needs no download: counts a synthetic corpus built from three positional "
        "distributions and prints the comparison table (the plug-in geometry: Algorithm 1 "
        "reproduces it exactly).",
    )
    p.add_argument("-n", "--max-positions", type=int, default=32, help="sequence length n")
    p.add_argument(
        "--sequences", dest="n_sequences", type=int, default=2000, help="synthetic sequences"
    )
    add_config_arguments(p, defaults={"estimator": "plugin"})  # the paper's Algorithm 1
    _add_outputs(p, required=False, output="also write a results folder")  # the table printed

    p = _command(
        sub,
        "compare",
        "every positional encoding against a corpus's Hellinger geometry",
        "Count a corpus (or load --counts), build its Hellinger geometry and score "
        "sinusoidal, RoPE, ALiBi (every head), T5, NoPE, random, optionally a model's learned "
        "table, and the MDS encodings (full, low rank, SMACOF) by paper stress, stress-1, "
        "scale-optimal stress, monotonicity violation rate and separation; plus the rank "
        "experiment and a stationarity diagnostic; as `posgeom run` with either source.",
    )
    _add_optional_count_arguments(p)
    add_config_arguments(p)
    _add_outputs(p)
