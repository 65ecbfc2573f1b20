"""The options of the geometry pipeline, declared once: :class:`GeometryConfig`.

Every option of the main job (``posgeom geometry | run | demo | compare``, :func:`posgeom.analyze`)
is one field here, with its default, the values it allows (checked on construction with the rules
of :mod:`posgeom._validation`; where a stage declares its own constraints they are read from that
stage) and its group (:data:`GROUPS`), the stage that uses it.

What derives from it: the keyword options of :func:`posgeom.pipeline.analyze`
(:func:`posgeom.pipeline.keywords.takes_geometry_config`), the CLI's pipeline flags
(:func:`config_fields`: name, default, :meth:`GeometryConfig.allowed`, help) and the summary's
``options`` (:meth:`GeometryConfig.record`, resolved by the stages).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from posgeom._errors import PosgeomError
from posgeom._validation import SEED, Interval, Options, check_param
from posgeom.embed.mds import classical_mds
from posgeom.encodings._base import MAX_HEADS, MAX_WIDTH
from posgeom.encodings.comparison import (
    comparable_encodings,
    comparison_families,
)
from posgeom.geometry.distributions import positional_distributions
from posgeom.geometry.divergences import hellinger_distances
from posgeom.geometry.noise import REPEATS, noise_floor

__all__ = [
    "BASELINES",
    "DEFAULT_MODEL_DIM",
    "DISTRIBUTIONS",
    "EMBEDDING",
    "ESTIMATE",
    "GROUPS",
    "NOISE",
    "SCORES",
    "GeometryConfig",
    "config_fields",
]

DISTRIBUTIONS, ESTIMATE, EMBEDDING = "distributions", "estimate", "embedding"
NOISE, SCORES, BASELINES = "noise", "scores", "baselines"
GROUPS = (DISTRIBUTIONS, ESTIMATE, EMBEDDING, NOISE, SCORES, BASELINES)
DEFAULT_MODEL_DIM = 768  # BERT-base; the one default width d of every command and entry point


def _declared(function: Any, parameter: str) -> tuple[Any, ...]:
    """The constraints ``function`` declares for ``parameter`` (``@validate_params``): the stage
    that uses an option is the one home of its allowed values."""
    return tuple(function.__posgeom_constraints__[parameter])


def _meta(*allowed: Any, group: str, help: str) -> dict[str, Any]:
    return {"allowed": allowed, "group": group, "help": help}


def _option(default: Any, *allowed: Any, group: str, help: str) -> Any:
    return field(default=default, metadata=_meta(*allowed, group=group, help=help))


@dataclass(frozen=True)
class GeometryConfig:
    """How the geometry of one corpus is estimated, embedded and scored (see the module
    docstring for the groups). A value out of range raises :class:`PosgeomError` naming the
    option, as does an option that would be silently ignored (``alpha`` without
    ``smoothing="add-alpha"``); ``noise="none"`` is read as ``None`` (no noise floor)."""

    smoothing: str = _option(
        "none",
        *_declared(positional_distributions, "smoothing"),
        group=DISTRIBUTIONS,
        help="smoothing of the positional distributions (add-alpha: + alpha to every count)",
    )
    alpha: float = _option(
        1.0,
        Interval(Real, 0, math.inf, closed="neither"),
        group=DISTRIBUTIONS,
        help="pseudo-count for add-alpha smoothing",
    )
    min_samples: int = _option(
        1,
        Interval(Integral, 1, None),
        group=DISTRIBUTIONS,
        help="sample floor: positions with fewer samples are flagged or dropped",
    )
    below_min: str = _option(
        "flag",
        *_declared(positional_distributions, "below_min"),
        group=DISTRIBUTIONS,
        help="positions below min_samples: kept and flagged, or dropped from the geometry",
    )
    estimator: Any = field(  # a registry name, or a ready GeometryEstimate of the kept positions
        default="recommended",
        metadata=_meta(
            group=ESTIMATE,
            help="geometry estimator: recommended or a name of posgeom.estimators.available(); "
            "the plug-in (the paper's) is shown beside it",
        ),
    )
    estimator_options: Mapping[str, Any] | None = _option(
        None, Mapping, None, group=ESTIMATE, help="more options of posgeom.estimate_geometry"
    )
    resolution: Any = field(  # a resolution label or a class map (estimators.resolution)
        default="auto",
        metadata=_meta(
            group=ESTIMATE,
            help="token classes of the geometry, the same at every position: auto, full, top:K, "
            "top:K+bands:B, bands:B or bins:B; the plug-in stays on full",
        ),
    )
    smooth_positions: Any = field(
        default=None,
        metadata=_meta(
            Options({"auto"}),
            Interval(Real, 0, math.inf, closed="left"),  # a finite slope
            None,
            group=ESTIMATE,
            help="smooth the estimate over positions (bandwidth h_i = A i): a slope A >= 0 or "
            "auto (A by split-half cross-validation); None: off",
        ),
    )
    convention: str = _option(
        "chord",
        *_declared(hellinger_distances, "convention"),
        group=ESTIMATE,
        help="Hellinger convention: chord ||sqrt(mu_i)-sqrt(mu_j)|| (the paper's) or "
        "normalized (divided by sqrt 2)",
    )
    model_dim: int = _option(
        DEFAULT_MODEL_DIM,
        Interval(Integral, 1, MAX_WIDTH),
        group=EMBEDDING,
        help="model width d of the MDS and fixed encodings (BERT-base: 768)",
    )
    n_components: int | None = _option(
        None,
        Interval(Integral, 1, None),
        None,
        group=EMBEDDING,
        help="rank r of the MDS encoding (None: min(n - 1, d))",
    )
    solver: str = _option(
        "auto",
        *_declared(classical_mds, "solver"),
        group=EMBEDDING,
        help="MDS solver: exact eigh of B, or implicit block Krylov on the centred sqrt matrix",
    )
    refine: bool = _option(True, bool, group=EMBEDDING, help="run the SMACOF refinement")
    noise: str | None = _option(
        "split_half",
        *_declared(noise_floor, "method"),
        None,
        group=NOISE,
        help="noise-floor estimate of the distances (which pairs are above sampling noise)",
    )
    noise_repeats: int = _option(
        5, *REPEATS, group=NOISE, help="splits or bootstrap replicates of the noise floor"
    )
    max_rank: int = _option(
        16,
        Interval(Integral, 0, None),
        group=SCORES,
        help="largest rank R of the rank experiment",
    )
    intervals: bool = _option(
        True,
        bool,
        group=SCORES,
        help="bootstrap intervals on the rows when the counts carry replicates",
    )
    seed: int = _option(0, SEED, group=SCORES, help="random seed")
    families: tuple[str, ...] | None = _option(
        None,
        group=BASELINES,
        help="registry encodings scored beside the MDS encoding (None: the default set; "
        "families needing learned_model only with it)",
    )
    n_heads: int = _option(
        12,
        Interval(Integral, 1, MAX_HEADS),
        group=BASELINES,
        help="ALiBi heads (and RoPE heads: d / n_heads)",
    )
    rope_head_dim: int | None = _option(
        None,
        Interval(Integral, 2, None),
        None,
        group=BASELINES,
        help="RoPE head width (None: d / n_heads, e.g. 64; d gives the sinusoidal geometry)",
    )
    rope_base: float = _option(
        10000.0,
        Interval(Real, 1, math.inf, closed="neither"),
        group=BASELINES,
        help="RoPE base",
    )
    low_rank: int = _option(
        3, Interval(Integral, 1, None), group=BASELINES, help="rank of the low_rank_mds row"
    )
    learned_model: Any = field(
        default=None,
        metadata=_meta(
            group=BASELINES,
            help="a local Hugging Face model (folder or loaded) whose learned position table is scored",
        ),
    )

    def __post_init__(self) -> None:
        if isinstance(self.noise, str) and self.noise == "none":
            object.__setattr__(self, "noise", None)
        for f in dataclasses.fields(self):
            if f.metadata.get("allowed"):
                check_param(f.name, getattr(self, f.name), f.metadata["allowed"])
        default = GeometryConfig.__dataclass_fields__["alpha"].default
        if self.smoothing == "none" and self.alpha != default:  # it would be silently ignored
            raise PosgeomError(
                f"alpha={self.alpha:g} has no effect without smoothing='add-alpha'; pass "
                f"smoothing='add-alpha', or drop alpha={self.alpha:g}"
            )
        if self.rope_head_dim is not None:  # the RoPE family's rule, checked before any work
            from posgeom.encodings.rope import check_rope_head_dim

            check_rope_head_dim(int(self.rope_head_dim), int(self.model_dim))
        if self.estimator_options is not None:
            object.__setattr__(self, "estimator_options", dict(self.estimator_options))
        if isinstance(self.estimator, str):  # the registry's rule (posgeom.estimators.get)
            from posgeom.estimators import get

            get(self.estimator)
        if self.families is not None:
            object.__setattr__(self, "families", _family_names(self.families))

    @staticmethod
    def allowed(name: str) -> tuple[Any, ...]:
        """The constraints of the field ``name`` (the CLI's ``choices=`` read them)."""
        return tuple(GeometryConfig.__dataclass_fields__[name].metadata["allowed"])

    def replace(self, **changes: Any) -> GeometryConfig:
        """A copy with ``changes`` (checked as on construction)."""
        return dataclasses.replace(self, **changes)

    def row_families(self) -> dict[str, Any]:
        """The registry rows to score, row name -> its :class:`~posgeom.encodings.Family`
        (each looked up in the registry once, here): ``families`` (every one must be buildable
        with the config), else the default set less the families that need a model the config
        does not give; the SMACOF row only with ``refine``."""
        from posgeom.encodings.mds import SMACOFFamily

        rows = comparison_families(self.families)
        given = {"learned_model": self.learned_model}
        for name, fam in list(rows.items()):
            need = fam.comparison_needs
            if need is not None and given.get(need) is None:
                if self.families is not None:
                    raise PosgeomError(f"the {name!r} encoding needs {need}=<model folder or name>")
                del rows[name]
        if not self.refine:
            rows.pop(SMACOFFamily.name, None)
        return rows

    def resolved_rope_head_dim(self) -> int:
        """``rope_head_dim``, or the family's default for ``model_dim`` and ``n_heads``."""
        from posgeom.encodings import default_rope_head_dim

        if self.rope_head_dim is not None:
            return int(self.rope_head_dim)
        return int(default_rope_head_dim(self.model_dim, self.n_heads))

    def estimate_options(self) -> dict[str, Any]:
        """The keyword options of ``estimate_geometry``: ``estimator_options`` with
        ``smooth_positions`` as ``smooth`` and ``resolution`` (unless they coarsen themselves)."""
        out = dict(self.estimator_options or {})
        if self.smooth_positions is not None:
            out.setdefault("smooth", self.smooth_positions)
        if "coarsen" not in out:
            out.setdefault("resolution", self.resolution)
        return out

    def record(self) -> dict[str, Any]:
        """Every field as a JSON value, in declaration order: the summary's ``options`` (before
        the stages write what they resolved)."""
        return {f.name: _json_value(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _family_names(names: Any) -> tuple[str, ...]:
    if isinstance(names, str):
        names = [x.strip() for x in names.split(",") if x.strip()]
    names = tuple(str(x) for x in names)
    unknown = [x for x in names if x not in comparable_encodings()]
    if unknown:
        raise PosgeomError(
            f"unknown encodings {unknown}; choose from {', '.join(comparable_encodings())}"
        )
    return names


def _json_value(value: Any) -> Any:
    """A field's value as the summary records it: a path or model by its name, an estimate by
    its estimator, a tuple as a list, a mapping as a dict."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (tuple, list)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    name = getattr(value, "estimator", None)
    return name if isinstance(name, str) else type(value).__name__


def config_fields(*groups: str) -> tuple[dataclasses.Field[Any], ...]:
    """The :class:`GeometryConfig` fields of ``groups`` (all fields when none is named)."""
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown groups {sorted(unknown)}; the groups are {GROUPS}")
    return tuple(
        f for f in dataclasses.fields(GeometryConfig) if not groups or f.metadata["group"] in groups
    )
