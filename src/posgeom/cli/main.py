"""Entry point of the ``posgeom`` command.

Each command group lives in its own module with ``register(subparsers)``; the module list below
is the whole command set.

One error path: whatever escapes a command (a :class:`~posgeom.PosgeomError`, a missing extra, any
``OSError`` such as a full disk or a read-only folder, a ``MemoryError``, or an exception of a
library) prints one line ``posgeom: error: ...`` naming the file or the step, and exits with status
2; ``--debug`` prints the traceback as well. Messages name the command's flags (``--below-min
drop``, ``-n/--max-positions``), not the Python keywords. Ctrl-C (SIGINT) exits 130 and SIGTERM
exits 143; in both cases partial outputs are removed (they are temporaries until complete).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence

from posgeom._errors import OptionalDependencyError, PosgeomError, printable
from posgeom._version import __version__
from posgeom.cli import _help as help_format

COMMAND_MODULES = (
    "posgeom.cli.corpus_commands",
    "posgeom.cli.pipeline_commands",
    "posgeom.cli.score_commands",
    "posgeom.cli.report_commands",
    "posgeom.cli.lengths_commands",
    "posgeom.cli.extend_commands",
    "posgeom.cli.ropecheck_commands",
    "posgeom.cli.probe_commands",
)
OPTIONAL_COMMAND_MODULES = (
    "posgeom.cli.reproduce_commands",
    "posgeom.cli.model_commands",
    "posgeom.cli.train_commands",
)
#: the options of every command, accepted before and after its name (--debug hidden after it)
COMMON_FLAGS = (
    (("-v", "--verbose"), "log every step (to stderr)"),
    (("-q", "--quiet"), "no progress bars or log lines"),
    (("--debug",), "print tracebacks of errors"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="posgeom",
        description=(
            "The geometry of Transformer positional encodings: count a corpus, build its Hellinger "
            "geometry and the MDS-optimal encoding, and score encodings by stress."
        ),
    )
    parser.add_argument("--version", action="version", version=f"posgeom {__version__}")
    for flags, text in COMMON_FLAGS:
        parser.add_argument(*flags, action="store_true", help=text)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (*COMMAND_MODULES, *OPTIONAL_COMMAND_MODULES):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name or name in COMMAND_MODULES:
                raise
            continue
        module.register(sub)
    for command in sub.choices.values():  # after the command name too (unset: the top's value)
        for flags, text in COMMON_FLAGS:
            text = argparse.SUPPRESS if flags == ("--debug",) else text
            command.add_argument(*flags, action="store_true", default=argparse.SUPPRESS, help=text)
    help_format.apply(parser)  # defaults said once, never "(default: None)"
    return parser


_STOPPING = threading.Event()  # set by the signal handlers, before the interrupt propagates


def _quiet_libraries(record: logging.LogRecord) -> bool:
    """Drop INFO lines of Dask, tornado and bokeh (they configure their own logger levels), and
    all of their lines once Ctrl-C or SIGTERM came: a cluster torn down mid-task logs cancelled
    futures and, from its event-loop thread, tracebacks of its own (distributed's ``sync``)."""
    noisy = record.name.split(".")[0] in ("distributed", "tornado", "bokeh", "asyncio")
    return not noisy or (record.levelno >= logging.WARNING and not _STOPPING.is_set())


def _one_line_record(record: logging.LogRecord) -> bool:
    """posgeom's log lines stay one line each (control characters escaped, as in error lines)."""
    if record.name.split(".")[0] == "posgeom":
        record.msg, record.args = printable(record.getMessage()), ()
    return True


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every ``with`` block removes its temporaries."""


def _interrupt(signum: int, frame: object) -> None:
    _STOPPING.set()
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The sub-parser of ``command``."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _flag_names(command_parser: argparse.ArgumentParser) -> dict[str, str]:
    """``dest -> "--flag"`` of the command's options (``-n/--max-positions`` when short too)."""
    names = {}
    for action in command_parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        shorts = [o for o in action.option_strings if not o.startswith("--")]
        if longs:
            names[action.dest] = "/".join([*shorts[:1], longs[0]])
    return names


def _cli_words(message: str, flags: dict[str, str]) -> str:
    """Spell Python keywords of a library message as the command's flags."""

    def keyword_value(m: re.Match) -> str:
        flag = flags.get(m["key"])
        if flag is None:
            return m[0]
        flag, value = flag.split("/")[-1], m["value"].strip("'")
        negation = flag.split("-")[2:3] == ["no"]  # a switch that turns an option off
        switch = value == "True" or (value == "False" and negation)
        return flag if switch else f"{flag} {value}"

    message = re.sub(
        r"\b(?P<key>[a-z][a-z0-9_]*)=(?P<value>'[^']*'|[^\s,;)]+)", keyword_value, message
    )
    message = re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", lambda m: flags.get(m[0], m[0]), message)
    message = re.sub(  # "lr must be ..." (a one-word keyword): the flag too
        r"(^|: |pass )(?P<key>[a-z][a-z0-9]*)\b(?= must be| as | needs )",
        lambda m: m[1] + flags.get(m["key"], m["key"]),
        message,
    )
    return re.sub(r"(--[\w-]+(?: [^\s()]+)?) \(\1\)", r"\1", message)  # "--x (--x)" -> "--x"


def _one_line(exc: BaseException) -> str:
    """What went wrong, in one line, naming the file (OSError) or the step (other exceptions)."""
    if isinstance(exc, (PosgeomError, OptionalDependencyError)):
        text = str(exc)
    elif isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "a file"
        text = f"{where}: {exc.strerror or exc}; check the path and the permissions"
    elif isinstance(exc, MemoryError):
        text = "out of memory; use a smaller -n, corpus or --batch-size, or a larger machine"
    else:
        text = f"{type(exc).__name__}: {exc} (an unexpected failure; --debug shows the traceback)"
        text = text.splitlines()[0] if text.strip() else type(exc).__name__
    return printable(text) if text.strip() else type(exc).__name__


def _interrupted(exc: KeyboardInterrupt) -> int:
    what = "terminated" if isinstance(exc, Terminated) else "interrupted"
    print(
        f"posgeom: {printable(what)}; finished outputs were kept, partial ones removed",
        file=sys.stderr,
    )
    return 143 if isinstance(exc, Terminated) else 130


def _quiet_progress_bars() -> None:
    """Hugging Face's own progress bars only with --verbose (the command's process only)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "transformers" in sys.modules:  # imported already: its switch was read at import
        with _suppress_value_error(), contextlib.suppress(ImportError, AttributeError):
            sys.modules["transformers"].utils.logging.disable_progress_bar()


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose else logging.INFO)
    logging.basicConfig(level=level, format="posgeom: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_one_line_record)
    if not args.verbose:  # Dask's cluster chatter only with --verbose
        for handler in logging.getLogger().handlers:
            handler.addFilter(_quiet_libraries)
        _quiet_progress_bars()
    try:
        from posgeom.cli._checks import check_common_args, check_no_empty

        check_no_empty(args, _command_parser(parser, args.command))
        check_common_args(args)
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # `posgeom ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # a library's panic (pyo3 PanicException) is one line too
        if getattr(args, "debug", False):
            import traceback

            traceback.print_exc()
        message = _cli_words(_one_line(exc), _flag_names(_command_parser(parser, args.command)))
        print(f"posgeom: error: {printable(message)}", file=sys.stderr)
        return 2


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parse_args``, but an unknown option is reported with the command's own usage."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    _STOPPING.clear()  # a signal of an earlier in-process call no longer silences libraries
    from posgeom.io._claims import forget_claims

    forget_claims()  # outputs an earlier in-process call checked are not this command's
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    with _suppress_value_error():  # not in the main thread (tests): keep the handlers
        signal.signal(signal.SIGTERM, _interrupt)
        if previous[signal.SIGINT] is signal.default_int_handler:  # not when ignored (nohup)
            signal.signal(signal.SIGINT, _interrupt)
    try:
        try:  # the command modules import numpy & co.: an interrupt there is an interrupt too
            parser = build_parser()
        except KeyboardInterrupt as exc:
            return _interrupted(exc)
        return _run(parser, _parse(parser, argv))
    finally:
        with _suppress_value_error():
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _suppress_value_error():
    return contextlib.suppress(ValueError, TypeError)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
