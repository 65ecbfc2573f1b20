"""Errors raised for user mistakes.

Every user-facing problem raises :class:`PosgeomError` (a ``ValueError``) with a message that names
the problem and how to fix it. The CLI prints such messages as one line and exits with status 2.
"""

from __future__ import annotations


class PosgeomError(ValueError):
    """A problem with the user's input: the message says what is wrong and how to fix it."""


class ArtifactError(PosgeomError):
    """An artifact on disk is missing, from another version, mismatched, or was edited."""


class PosgeomDeprecationWarning(DeprecationWarning):
    """A name or spelling of posgeom that goes in a later release (the message names what
    replaces it; 0.2.0 has none left). Every deprecation posgeom raises is of this class, so a test suite can turn
    exactly these into errors (this project's pyproject ``filterwarnings``) and leave other
    libraries' deprecations alone; a filter on ``DeprecationWarning`` still catches it."""


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
