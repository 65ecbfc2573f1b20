"""``posgeom experiment pretrain``: the pretraining grid (:mod:`posgeom.training.pretrain`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError, printable
from posgeom.cli._options import add_command, add_seeds_argument, seeds_of

_SUFFIXES = (".py", ".txt", ".tex", ".gz")


def _files(text: str) -> tuple[str, ...]:
    """Comma-separated paths; a folder stands for its files ending in .py, .txt, .tex or .gz."""
    out: list[str] = []
    for part in filter(None, text.split(",")):
        p = Path(part).expanduser()
        if p.is_dir():
            out += sorted(str(f) for f in p.iterdir() if f.is_file() and f.suffix in _SUFFIXES)
        elif p.is_file():
            out.append(str(p))
        else:
            raise PosgeomError(f"--corpus: {p} is neither a file nor a folder; pass existing paths")
    return tuple(out)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name or not rest:
            raise PosgeomError(f"{flag} takes NAME=VALUE, got {v!r}")
        if name in out:
            raise PosgeomError(f"{flag} names {name!r} twice; give each corpus once")
        out[name] = rest
    return out


def _corpora(args: argparse.Namespace) -> list[Any]:
    from posgeom.training.pretrain import CorpusSpec

    if not args.corpus:
        raise PosgeomError("give at least one --corpus NAME=PATH[,PATH...]")
    corpora = _pairs(args.corpus, "--corpus")
    blocks = _pairs(args.block_bytes, "--block-bytes")
    unknown = set(blocks) - set(corpora)
    if unknown:
        raise PosgeomError(f"--block-bytes names {sorted(unknown)[0]!r}, which no --corpus names")
    out = []
    for name, paths in corpora.items():
        size = blocks.get(name)
        if size is not None and (not size.isdigit() or int(size) < 1):
            raise PosgeomError(f"--block-bytes {name}={size}: give a positive number of bytes")
        out.append(CorpusSpec(name, _files(paths), int(size) if size else None))
    return out


def _handler(args: argparse.Namespace) -> int:
    """train small language models with every encoding on real corpora (resumable)

    Does stress computed before training rank what small language models reach? For every arm
    (encoding) x corpus x objective x seed: score the encoding's position geometry against the
    training split's corpus geometry (paper, scale-optimal, lag, per-position stress, monotonicity),
    train a byte-level Transformer LM from scratch (the same architecture, data order, optimiser and
    token budget for every arm), and record validation / test loss, per-position loss, loss at 2x
    and 4x the trained length and the geometry after training. Each run is one folder under -o with
    record.json; records.jsonl holds them all. Rerun with --resume to continue: finished runs are
    never recomputed. --scale gpu: the same grid at width 256, 4 layers, context 128, 3000 steps."""
    from posgeom.training.pretrain import pretrain_grid

    overrides = {k: v for k, v in (("steps", args.steps), ("device", args.device)) if v}
    records = pretrain_grid(
        args.output,
        _corpora(args),
        arms=args.arms.split(","),
        objectives=args.objectives.split(","),
        seeds=seeds_of(args.seeds),
        scale=args.scale,
        overrides=overrides,
        resume=args.resume,
        threads=args.threads,
    )
    where = Path(args.output) / "records.jsonl"
    print(f"{len(records):d} runs finished; records in {printable(where)}")
    return 0


def add_parser(sub: Any) -> None:
    """``pretrain`` under ``posgeom experiment``."""
    from posgeom.training.lm import ARMS, DEFAULT_ARMS
    from posgeom.training.pretrain import OBJECTIVES, SCALES

    p = add_command(sub, "pretrain", _handler)
    p.add_argument("-o", "--output", required=True, help="results folder (new, or --resume)")
    p.add_argument(
        "--corpus",
        action="append",
        default=[],
        help="NAME=PATH[,PATH...] (repeat per corpus; a folder stands for its .py/.txt/.tex/.gz "
        "files); split by document into train/validation/test (80/10/10, seeded)",
    )
    p.add_argument(
        "--block-bytes",
        action="append",
        default=[],
        help="NAME=BYTES: cut that corpus's files at line ends into documents of about BYTES "
        "(for corpora of a few long files); default: one document per file",
    )
    p.add_argument(
        "--arms",
        default=",".join(DEFAULT_ARMS),
        help=f"comma-separated arms (encodings) of {', '.join(ARMS)}",
    )
    p.add_argument("--objectives", default=",".join(OBJECTIVES), help="causal,masked")
    add_seeds_argument(p)
    p.add_argument("--scale", choices=tuple(SCALES), default="cpu", help="model and budget")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the scale's)")
    p.add_argument("--device", default=None, help="torch device (default: the scale's, cpu)")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--resume", action="store_true", help="continue the grid in -o")
