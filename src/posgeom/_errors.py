"""Errors raised for user mistakes, and the one escaping of the names shown to a user.

Every user-facing problem raises :class:`PosgeomError` (a ``ValueError``) with a message that names
the problem and how to fix it. The CLI prints such messages as one line and exits with status 2.
:func:`printable` is what every line the CLI shows passes a user's name through (error lines,
log records, ``results in ...``, table cells of ``table.md``).
"""

from __future__ import annotations

import re

# C0 and C1 controls (ESC, CSI 0x9b, NEL 0x85, line breaks), DEL, the Unicode line and paragraph
# separators and the bidirectional overrides (text that reorders what the terminal shows)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match[0]
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object) -> str:
    """``str(value)`` with every control character written as its escape (``\\n``, ``\\x1b``,
    ``\\u202e``): a name a user chose (a file, a corpus, a strategy) cannot retitle or clear the
    terminal, forge a line of its own, or split a row of a Markdown table. Idempotent (a
    backslash is left as it is)."""
    return _CONTROLS.sub(_escape, str(value))


class PosgeomError(ValueError):
    """A problem with the user's input: the message says what is wrong and how to fix it."""


class ArtifactError(PosgeomError):
    """An artifact on disk is missing, from another version, mismatched, or was edited."""


class PosgeomDeprecationWarning(DeprecationWarning):
    """A name or spelling of posgeom that goes in a later release (the message names what
    replaces it): every deprecation posgeom raises, so a test suite can turn exactly these into
    errors (this project's pyproject ``filterwarnings``)."""


class OptionalDependencyError(ImportError):
    """An optional extra (``posgeom[hf]``, ``[torch]``, ``[dask]``, ``[plot]``) is not installed."""


def require(module: str, extra: str):
    """Import ``module`` or raise :class:`OptionalDependencyError` naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise OptionalDependencyError(
            f"{module!r} is needed for this feature but is not installed; "
            f"install it with: pip install 'posgeom[{extra}]'"
        ) from exc
