"""The command line of the benchmark scripts that take bare words: ``--help`` prints the script's
docstring and exits (it never starts a run), anything else is the script's list of names."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any


def names(
    doc: str | None,
    argv: Sequence[str],
    *,
    metavar: str = "NAME",
    help: str = "what to run (default: everything)",
    type: Callable[[str], Any] = str,
) -> list[Any]:
    """The positional arguments of ``argv`` (converted by ``type``); ``-h``/``--help`` print
    ``doc`` and exit 0, an unknown option exits 2 with argparse's message."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", metavar=metavar, type=type, help=help)
    return list(parser.parse_args(list(argv)).names)
