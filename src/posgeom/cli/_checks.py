"""Options every command shares, checked before any work (one line naming the flag): a value
outside its range (``--seed -1``), a resource request beyond the machine (``--workers`` over
twice the CPU count, ``--n-heads`` over the width). The pipeline's own options are refused by
:class:`~posgeom.pipeline.config.GeometryConfig` when the command builds it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from numbers import Integral

from posgeom._errors import PosgeomError
from posgeom._validation import SEED, Interval, check_param
from posgeom.encodings._base import MAX_HEADS  # one home: the encodings

__all__ = ["check_common_args", "check_no_empty", "unique_names"]

THREADS = [Interval(Integral, 1, 1024)]  # --threads: torch's CPU threads
SEQUENCES = [Interval(Integral, 1, 10_000_000)]  # demo --sequences: the synthetic corpus's size
POSITIVE = [Interval(Integral, 1, None)]  # -n, --max-sequences, --workers, ...: counts of things


def _check_heads(args: argparse.Namespace) -> None:
    """The pipeline's ``--n-heads`` within ``-d`` when given."""
    heads, width = getattr(args, "n_heads", None), getattr(args, "model_dim", None)
    if heads is None or width is None:
        return
    check_param("-d/--model-dim", width, POSITIVE)  # before the heads in it
    from posgeom.cli._config_flags import config_class

    default = config_class().__dataclass_fields__["n_heads"].default
    # the default heads with a narrow -d: the rows that need d / n-heads dimensions are skipped
    limit = min(MAX_HEADS, width) if heads != default else MAX_HEADS
    if not 1 <= heads <= limit:
        raise PosgeomError(
            f"--n-heads must be between 1 and {limit} (at most {MAX_HEADS}, and at most -d "
            f"{width}: each head needs a dimension), got {heads}"
        )


def _check_workers(args: argparse.Namespace) -> None:
    workers = getattr(args, "workers", None)
    cores = os.cpu_count() or 1
    limit = 2 * cores  # a worker per core is the useful most; twice that is refused
    if workers is not None and workers > limit and getattr(args, "scheduler", None) is None:
        raise PosgeomError(
            f"--workers {workers} but this machine has {cores} CPU cores; use --workers {cores} "
            f"(at most {limit}), or --scheduler ADDRESS for a cluster"
        )


def _check_ranges(args: argparse.Namespace) -> None:
    """Counts of repeated work, seeds and the number of positions, each within its range."""
    ranges = {"threads": THREADS}  # the pipeline's: its config
    counts = (
        "max_positions",
        "max_sequences",
        "batch_size",
        "text_field",
        "workers",
        "shard_lines",
    )
    ranges.update({key: POSITIVE for key in counts})
    ranges.update({key: [SEED] for key in ("seed", "shuffle_seed", "bootstrap_seed")})
    ranges["n_sequences"] = SEQUENCES  # demo --sequences
    for dest, allowed in ranges.items():
        value = getattr(args, dest, None)
        if value is not None:
            # a snake_case name is spelled as the command's flag by the CLI (-n/--max-positions,
            # --sequences); a one-word one is its flag already
            check_param(dest if "_" in dest else f"--{dest}", value, allowed)


def check_common_args(args: argparse.Namespace) -> None:
    """Refuse out-of-range or ineffective shared options (module docstring)."""
    _check_ranges(args)
    _check_heads(args)
    _check_workers(args)


def check_no_empty(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse an empty (or blank) text value of any option or argument of ``parser`` and its
    subcommands, and an empty item of a comma-separated list (``--text-column ''`` would
    otherwise mean the default without a word)."""
    for action in _all_actions(parser):
        value = getattr(args, action.dest, None)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        listed = "comma" in (action.help or "")  # a comma-separated list: no empty item
        for text in values:
            if not isinstance(text, str):
                continue
            if not text.strip() or (listed and not all(p.strip() for p in text.split(","))):
                flag = action.option_strings[-1] if action.option_strings else action.dest.upper()
                raise PosgeomError(
                    f"{flag} is given an empty value ({text!r}); give it a value, or leave "
                    f"{flag} out for its default"
                )


def _all_actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The actions of ``parser`` and of its subcommands' parsers (what ``args`` may hold)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _all_actions(sub)
        else:
            yield action


def unique_names(names: list[str], flag: str, reserved: tuple[str, ...] = ()) -> None:
    """Refuse an empty, repeated or built-in row name (a row would be dropped or mislabelled)."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            raise PosgeomError(f"{flag}: an encoding name is empty; write NAME=FILE")
        if name in seen:
            raise PosgeomError(f"{flag}: the name {name!r} is given twice; name each file once")
        if name in reserved:
            raise PosgeomError(
                f"{flag} {name}=...: {name!r} is a built-in row of the table; give the file "
                f"another name (such as my_{name})"
            )
        seen.add(name)
