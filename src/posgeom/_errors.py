"""Errors raised for user mistakes.

Every user-facing problem raises :class:`PosgeomError` (a ``ValueError``) with a message that names
the problem and how to fix it. The CLI prints such messages as one line and exits with status 2.
"""

from __future__ import annotations

import warnings


class PosgeomError(ValueError):
    """A problem with the user's input: the message says what is wrong and how to fix it."""


class ArtifactError(PosgeomError):
    """An artifact on disk is missing, from another version, mismatched, or was edited."""


class PosgeomDeprecationWarning(DeprecationWarning):
    """A name or spelling of posgeom that goes in the next release (the message names what
    replaces it). Every deprecation posgeom raises is of this class, so a test suite can turn
    exactly these into errors (this project's pyproject ``filterwarnings``) and leave other
    libraries' deprecations alone; a filter on ``DeprecationWarning`` still catches it."""


def warn_moved_module(old: str, new: str) -> None:
    """Warn that the module ``old`` is deprecated and ``new`` replaces it; called from the body
    of ``old`` (or from an import hook's ``create_module``).

    A module's body runs once per process: the import system caches the module in
    ``sys.modules`` and later imports of the name return it without running anything, so the
    warning comes once, at the first import. A module ``__getattr__`` on the parent package could
    not do better: ``import parent.old`` finds the submodule without asking the package's
    attributes. The warning points at the importing line: ``stacklevel`` counts this function and
    the old module's body, and the warnings machinery skips the import system's own frames."""
    warnings.warn(
        f"{old} is deprecated and goes in the next release; import {new} instead",
        PosgeomDeprecationWarning,
        stacklevel=3,
    )


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
