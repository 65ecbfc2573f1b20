"""Options shared by several commands, declared once (the estimator, with its old spellings)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_estimator_argument", "add_resolution_argument"]


class _OldSpelling(argparse.Action):
    """Store the value; say once on stderr when the option was given by its old spelling."""

    def __init__(self, *args: Any, old: str | None = None, **kwargs: Any) -> None:
        self.old = old
        super().__init__(*args, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if option_string is not None and option_string == self.old:
            print(
                f"posgeom: {self.old} is the old spelling of --estimator (deprecated: it goes in "
                "the next release); use --estimator",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, values)


def add_estimator_argument(
    g: Any,
    *,
    dest: str = "estimator",
    old: str | None = None,
    what: str = "geometry estimator",
) -> None:
    """``--estimator``: the geometry estimator (the plug-in is always shown beside it), named
    from the estimator registry. ``old``: a former spelling kept as an alias for one release
    (``--target`` of analyze-model, ``--target-estimator`` of train), with a note when used."""
    from posgeom.estimators import RECOMMENDED, available

    names = ("--estimator", old) if old else ("--estimator",)
    g.add_argument(
        *names,
        dest=dest,
        default="recommended",
        metavar="NAME",
        action=_OldSpelling,
        old=old,
        help=f"{what}: recommended (= {RECOMMENDED}) or one of {', '.join(available())}; "
        "the plug-in (the paper's) is shown beside it"
        + (f" ({old}: the old spelling, deprecated)" if old else ""),
    )


def add_resolution_argument(g: Any) -> None:
    """``--resolution``: the token classes the estimate identifies, the same at every position
    (:mod:`posgeom.estimators.resolution`)."""
    g.add_argument(
        "--resolution",
        default="auto",
        metavar="RES",
        help="token classes of the geometry, the same at every position: auto (the finest "
        "top:K the samples per position support), full, top:K (the K most frequent tokens + "
        "other) or bins:B; the plug-in stays on full",
    )
