"""Entry point of the ``posgeom`` command.

Each command group lives in its own module with ``register(subparsers)``; the module list below
is the whole command set. User mistakes (:class:`~posgeom.PosgeomError`, missing files, missing
extras) print one line ``posgeom: error: ...`` and exit with status 2; an interrupt exits 130.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from posgeom._errors import OptionalDependencyError, PosgeomError
from posgeom._version import __version__

COMMAND_MODULES = (
    "posgeom.cli.corpus_commands",
    "posgeom.cli.geometry_commands",
)
OPTIONAL_COMMAND_MODULES = (
    "posgeom.cli.compare_commands",
    "posgeom.cli.model_commands",
    "posgeom.cli.train_commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="posgeom",
        description=(
            "The geometry of Transformer positional encodings: count a corpus, build its Hellinger "
            "geometry and the MDS-optimal encoding, and score encodings by stress."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"posgeom {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every step (to stderr)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or log lines")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for name in OPTIONAL_COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    for command in sub.choices.values():  # accept -v/-q after the command name too
        command.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="log every step (to stderr)",
        )
        command.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            default=argparse.SUPPRESS,
            help="no progress bars or log lines",
        )
    return parser


def _quiet_libraries(record: logging.LogRecord) -> bool:
    """Drop INFO lines of Dask, tornado and bokeh (they configure their own logger levels), and
    the counting jobs' INFO lines, which they already print as progress."""
    noisy = record.name.split(".")[0] in ("distributed", "tornado", "bokeh")
    noisy |= record.name in ("posgeom.corpus.jobs", "posgeom.corpus.distributed")
    return not noisy or record.levelno >= logging.WARNING


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose else logging.INFO)
    logging.basicConfig(level=level, format="posgeom: %(message)s", stream=sys.stderr)
    if not args.verbose:  # Dask's cluster chatter only with --verbose
        for handler in logging.getLogger().handlers:
            handler.addFilter(_quiet_libraries)
    try:
        return int(args.handler(args) or 0)
    except (PosgeomError, OptionalDependencyError, FileNotFoundError, IsADirectoryError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"posgeom: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `posgeom ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(
            "posgeom: interrupted; finished outputs were kept, partial ones discarded",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
