"""The opening of every command (:func:`add_command`) and the options several commands outside
the main pipeline share, declared once. The pipeline's own flags derive from its config
(:mod:`posgeom.cli._config_flags`)."""

from __future__ import annotations

import argparse
from typing import Any

from posgeom._errors import PosgeomError

__all__ = [
    "add_command",
    "add_estimator_argument",
    "add_gguf_argument",
    "add_noise_argument",
    "add_placement_arguments",
    "add_resolution_argument",
    "add_results_folder_arguments",
    "add_sample_arguments",
    "add_seed_argument",
    "add_seeds_argument",
    "add_threads_argument",
    "add_tokenizer_argument",
    "apply_threads",
    "choices_of",
    "placement",
    "sample_texts",
    "seeds_of",
]


def add_command(
    sub: Any, name: str, handler: Any, *, help: str | None = None, description: str | None = None
) -> argparse.ArgumentParser:
    """The parser of the command ``name`` under ``sub``, run by ``handler(args)``; its ``help``
    and ``description`` default to the handler docstring's first paragraph and the rest."""
    summary, _, rest = (handler.__doc__ or "").partition("\n\n")
    p = sub.add_parser(
        name,
        help=help or " ".join(summary.split()),
        description=description or " ".join(rest.split()) or None,
    )
    p.set_defaults(handler=handler)
    return p


def add_estimator_argument(
    g: Any,
    *,
    dest: str = "estimator",
    what: str = "geometry estimator",
) -> None:
    """``--estimator``: the geometry estimator, named from the estimator registry."""
    from posgeom.estimators import RECOMMENDED, available

    g.add_argument(
        "--estimator",
        dest=dest,
        default="recommended",
        metavar="NAME",
        help=f"{what}: recommended (= {RECOMMENDED}) or one of {', '.join(available())}; "
        "the plug-in (the paper's) is shown beside it",
    )


def add_gguf_argument(p: Any, *, inside: str = "MODEL") -> None:
    """``--gguf-file``: the GGUF checkpoint inside the model folder ``inside`` names."""
    p.add_argument(
        "--gguf-file",
        default=None,
        help=f"name of a .gguf file inside {inside} (a folder) to load (needs gguf and accelerate)",
    )


def add_threads_argument(p: Any) -> None:
    """``--threads``: torch's CPU threads while a model runs (set by :func:`apply_threads`)."""
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")


def apply_threads(args: argparse.Namespace) -> None:
    """``torch.set_num_threads(--threads)`` when the flag is given (torch's default otherwise)."""
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(int(args.threads))


def add_tokenizer_argument(p: Any) -> None:
    """``-t/--tokenizer`` of a command that runs a model: another tokenizer than the model's."""
    p.add_argument(
        "-t",
        "--tokenizer",
        default=None,
        help="tokenizer (tokenizer.json, folder or local name); default: the model's own",
    )


def add_sample_arguments(p: Any) -> None:
    """``--max-sequences`` and ``--shuffle-seed``: which texts of the corpus a model reads."""
    p.add_argument(
        "--max-sequences",
        type=int,
        default=None,
        help="use at most this many sequences (the first ones, or a seeded sample with "
        "--shuffle-seed)",
    )
    p.add_argument(
        "--shuffle-seed",
        type=int,
        default=None,
        help="take a seeded random sample of --max-sequences texts (reads the whole corpus)",
    )


def sample_texts(args: argparse.Namespace) -> Any:
    """The texts of ``args.corpus`` a model reads: the first ``--max-sequences`` or, with
    ``--shuffle-seed``, a seeded sample of them in corpus order."""
    from pathlib import Path

    import numpy as np

    from posgeom.corpus.options import text_decoding
    from posgeom.corpus.readers import read_texts

    corpus = Path(args.corpus)
    if not corpus.exists():
        raise PosgeomError(f"corpus {corpus} does not exist; check the path")
    how = {"format": args.format, "text_column": args.text_column, "split": args.split}
    how |= text_decoding(args)
    if args.shuffle_seed is None:
        return read_texts(corpus, limit=args.max_sequences, **how)
    texts = list(read_texts(corpus, **how))
    k = len(texts) if args.max_sequences is None else min(args.max_sequences, len(texts))
    pick = np.sort(np.random.default_rng(args.shuffle_seed).choice(len(texts), k, replace=False))
    return [texts[i] for i in pick]


def add_seed_argument(p: Any, *, what: str = "random seed") -> None:
    """``--seed``: the seed of the command's random draws (``what``: which draws)."""
    p.add_argument("--seed", type=int, default=0, help=what)


def add_seeds_argument(p: Any) -> None:
    """``--seeds``: the seeds of an experiment grid (read by :func:`seeds_of`)."""
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")


def seeds_of(text: str) -> list[int]:
    """``--seeds 0,1,2`` as integers; anything else is one line naming the flag."""
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise PosgeomError(
            f"--seeds must be comma-separated non-negative integers such as 0,1,2, got {text!r}"
        )
    return seeds


#: ``--report`` of a results folder that the report module draws (its figures beside it)
REPORT_HELP = (
    "also write report.html (self-contained: figures, verdict, tables) and report_figures/ (PNG "
    "and SVG) into the results folder"
)


def add_results_folder_arguments(
    p: Any,
    *,
    required: bool = True,
    report: str | None = REPORT_HELP,
    output: str = "results folder (created atomically)",
    overwrite: str = "replace an existing results folder",
) -> None:
    """``-o/--output`` (the results folder, written atomically; ``output``: its help),
    ``--overwrite`` and ``--report`` (``report``: its help; None: no ``--report``)."""
    p.add_argument("-o", "--output", required=required, help=output)
    p.add_argument("--overwrite", action="store_true", help=overwrite)
    if report is not None:
        p.add_argument("--report", action="store_true", help=report)


def add_placement_arguments(p: Any) -> None:
    """``--device`` and ``--dtype`` of a command that loads a model (:mod:`posgeom._placement`)."""
    from posgeom._placement import DEVICES, DTYPES

    g = p.add_argument_group("where the model runs")
    g.add_argument(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help=f"{', '.join(DEVICES)}: auto spreads a model larger than one GPU or than RAM over "
        "the GPUs, the CPU and the disk (accelerate's device_map='auto'; the disk part in a "
        "temporary folder under $TMPDIR)",
    )
    g.add_argument(
        "--dtype",
        default="float32",
        choices=DTYPES,
        help="precision of the weights (auto: the checkpoint's own); bfloat16 halves the "
        "weights' memory; per-position sums and statistics stay float64",
    )


def placement(args: argparse.Namespace) -> dict[str, str]:
    """``{"device", "dtype"}`` of the command's flags, checked."""
    from posgeom._placement import check_device, check_dtype

    return {"device": check_device(args.device), "dtype": check_dtype(args.dtype)}


def add_resolution_argument(g: Any) -> None:
    """``--resolution`` (:mod:`posgeom.estimators.resolution`)."""
    g.add_argument(
        "--resolution",
        default="auto",
        metavar="RES",
        help="token classes of the geometry, the same at every position: auto (the finest "
        "top:K+bands:B the samples per position support), full, top:K (the K most frequent "
        "tokens + other), top:K+bands:B (+ B equal-mass frequency bands of the rest instead of "
        "other), bands:B or bins:B; the plug-in stays on full",
    )


def choices_of(function: Any, parameter: str) -> tuple[Any, ...]:
    """The values ``parameter`` of ``function`` accepts (its ``@validate_params`` ``Options``),
    its default first."""
    import inspect

    from posgeom._validation import Options

    constraints = getattr(function, "__posgeom_constraints__", {}).get(parameter, ())
    default = inspect.signature(function).parameters[parameter].default
    for constraint in constraints:
        if isinstance(constraint, Options):
            return tuple(sorted(constraint.values, key=lambda v: (v != default, str(v))))
    raise TypeError(f"{function.__qualname__} declares no Options for {parameter!r}")


def add_noise_argument(g: Any) -> None:
    """``--noise``: the noise-floor method of :func:`posgeom.noise_floor`, or ``none``."""
    from posgeom.geometry.noise import noise_floor

    g.add_argument(
        "--noise",
        choices=(*choices_of(noise_floor, "method"), "none"),
        default="split_half",
        help="noise-floor estimate of the distances (which pairs are above sampling noise)",
    )
