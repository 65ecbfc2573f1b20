"""Options shared by several commands, declared once (the estimator, with its old spellings)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = [
    "add_estimator_argument",
    "add_noise_argument",
    "add_pipeline_arguments",
    "add_position_smoothing_argument",
    "add_resolution_argument",
    "choices_of",
    "position_smoothing",
]


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

    names = tuple(x for x in ("--estimator", old) if x)
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
        "top:K+bands:B the samples per position support), full, top:K (the K most frequent "
        "tokens + other), top:K+bands:B (+ B equal-mass frequency bands of the rest instead of "
        "other), bands:B or bins:B; the plug-in stays on full",
    )


def add_position_smoothing_argument(g: Any) -> None:
    """``--smooth-positions``: ``estimate_geometry(smooth=...)``, the estimate smoothed over
    positions (:mod:`posgeom.estimators.smoothing`); off by default."""
    g.add_argument(
        "--smooth-positions",
        default="none",
        metavar="A",
        help="smooth the estimate over positions (local-linear kernel, bandwidth h_i = A i): "
        "none (default), auto (A by split-half cross-validation on the counts) or a slope A "
        ">= 0; lower variance, biased towards a smooth trajectory, at most 512 positions "
        "(docs/ESTIMATION.md)",
    )


def position_smoothing(args: Any) -> dict[str, Any]:
    """The ``estimator_options`` of ``--smooth-positions`` (empty when off)."""
    value = str(getattr(args, "smooth_positions", "none"))
    if value == "none":
        return {}
    if value == "auto":
        return {"smooth": "auto"}
    try:
        return {"smooth": float(value)}
    except ValueError:
        from posgeom._errors import PosgeomError

        raise PosgeomError(
            f"--smooth-positions {value!r} is not none, auto or a number; give a slope A >= 0 "
            "(e.g. 0.25) or auto"
        ) from None


def choices_of(function: Any, parameter: str) -> tuple[Any, ...]:
    """The values ``parameter`` of ``function`` accepts, read from its ``@validate_params``
    declaration (one home for the allowed values: the CLI's ``choices=`` are not a copy)."""
    import inspect

    from posgeom._validation import Options

    constraints = getattr(function, "__posgeom_constraints__", {}).get(parameter, ())
    default = inspect.signature(function).parameters[parameter].default
    for constraint in constraints:
        if isinstance(constraint, Options):  # the function's default first, then the others
            return tuple(sorted(constraint.values, key=lambda v: (v != default, str(v))))
    raise TypeError(f"{function.__qualname__} declares no Options for {parameter!r}")


def add_pipeline_arguments(g: Any, *, solver: bool = True) -> None:
    """The options of the pipeline every geometry command shares (run, geometry, compare):
    smoothing, sample floor, convention, MDS solver, noise floor, extra encodings, seed, the
    estimator and its resolution, with ``choices=`` from the library's declared constraints."""
    from posgeom.embed.mds import classical_mds
    from posgeom.geometry.distributions import positional_distributions
    from posgeom.geometry.divergences import hellinger_distances
    from posgeom.geometry.noise import noise_floor

    g.add_argument(
        "--smoothing",
        choices=choices_of(positional_distributions, "smoothing"),
        default="none",
        help="smoothing of the positional distributions (add-alpha: + alpha to every count)",
    )
    g.add_argument("--alpha", type=float, default=1.0, help="pseudo-count for add-alpha smoothing")
    g.add_argument(
        "--min-samples",
        type=int,
        default=1,
        help="sample floor: positions with fewer samples are flagged or dropped",
    )
    g.add_argument(
        "--below-min",
        choices=choices_of(positional_distributions, "below_min"),
        default="flag",
        help="positions below --min-samples: kept and flagged, or dropped from the geometry",
    )
    g.add_argument(
        "--convention",
        choices=choices_of(hellinger_distances, "convention"),
        default="chord",
        help="Hellinger convention: chord ||sqrt(mu_i)-sqrt(mu_j)|| in [0, sqrt 2] (the "
        "paper's) or normalized (divided by sqrt 2, in [0, 1])",
    )
    if solver:
        g.add_argument(
            "--solver",
            choices=choices_of(classical_mds, "solver"),
            default="auto",
            help="MDS solver: exact eigh of B, or implicit Lanczos on the centred sqrt matrix",
        )
    add_noise_argument(g, noise_floor)
    g.add_argument(
        "--encoding",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="also score an encoding from a file (.npy/.npz/.safetensors: (n, d) vectors "
        "or (n, n) distances); repeatable",
    )
    g.add_argument("--seed", type=int, default=0, help="random seed")
    add_estimator_argument(g)
    add_resolution_argument(g)
    add_position_smoothing_argument(g)


def add_noise_argument(g: Any, noise_floor: Any = None) -> None:
    """``--noise``: the noise-floor method of :func:`posgeom.noise_floor`, or ``none``."""
    if noise_floor is None:
        from posgeom.geometry.noise import noise_floor
    g.add_argument(
        "--noise",
        choices=(*choices_of(noise_floor, "method"), "none"),
        default="split_half",
        help="noise-floor estimate of the distances (which pairs are above sampling noise)",
    )
