"""The family registry: one :class:`Family` per positional encoding, registered by decorator.

A family is the one place where what posgeom knows about an encoding lives; every layer asks
the registry instead of naming families: geometry (:meth:`Family.build`, behind
``posgeom.encodings.get``), the comparison (:meth:`Family.encodings`: the encodings of its rows,
which the pipeline scores in one table; a per-head family declares how its row is chosen among
its heads, :attr:`Family.row_choice`), models (:meth:`Family.detect` returns
:class:`Mechanism` objects whose typed ``params`` convert themselves to geometry; torch is
imported inside ``detect`` only), torch (:meth:`Family.torch_module`; the nn classes are named
by import path, :attr:`Family.torch_class`, so ``encodings`` never imports ``nn``) and the
extension side (``family.extension``, an instance of :attr:`Family.extension_type`, see
:mod:`posgeom.encodings._extension`; :func:`extension_of` gives it by name).

Adding a family is one module with a ``@register`` class plus its tests (``docs/ARCHITECTURE.md``,
"Adding a positional family").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding
from posgeom.encodings._extension import Extension
from posgeom.encodings._mechanism import Mechanism, register_kind

__all__ = [
    "ROLES",
    "ComparisonContext",
    "Family",
    "RowEncoding",
    "TorchSpec",
    "extension_of",
    "families",
    "families_with_role",
    "family",
    "family_of_mechanism",
    "register",
    "role_of",
]


# ------------------------------------------------------------------------------ comparison
@dataclass(frozen=True, eq=False)
class ComparisonContext:
    """What a family needs to build the encodings of its comparison rows.

    ``n_positions``: positions ``0 .. N-1`` to build (the pipeline restricts them to the kept
    ones); ``n_kept``: how many positions are kept; ``model_dim``: width ``d``; ``n_heads``,
    ``rope_head_dim``, ``rope_base``: the BERT-base-like layout of the heads; ``seed``;
    ``learned_model``; ``low_rank``; ``fitted``: the encodings the pipeline fitted to the corpus
    geometry, of the kept positions, by row name (``"mds"``: Algorithm 1's
    :class:`~posgeom.embed.mds.MDSResult`; ``"low_rank_mds"``: it truncated to rank
    ``min(low_rank, its rank)``; ``"mds+smacof"``: its refinement when it ran).
    """

    n_positions: int
    n_kept: int
    model_dim: int
    n_heads: int
    rope_head_dim: int
    rope_base: float
    seed: int
    fitted: Mapping[str, Any] = field(default_factory=dict)
    learned_model: Any = None
    low_rank: int = 3


@dataclass(frozen=True, eq=False)
class RowEncoding:
    """One encoding a family hands the comparison: ``encoding`` (of positions ``0 .. N-1``, or of
    the kept positions when ``kept``), the row's ``description`` and ``parameters`` (stored
    scalars: 0 for fixed formulas), and for one head of a per-head family its ``head`` fields
    (``{"head": h, "slope": m}``: the per-head table's columns)."""

    encoding: Any
    description: str
    parameters: int = 0
    kept: bool = False
    head: Mapping[str, Any] | None = None


# ------------------------------------------------------------------------------ torch
@dataclass(frozen=True)
class TorchSpec:
    """What a torch position module is built from: ``n`` positions, width ``d``, ``n_heads``,
    ``seed`` (a ``torch.Generator`` seed for random initialisations; ``None``: torch's global
    generator), ``geometry`` (a ``GeometryResult`` for MDS families),
    ``rank`` (low-rank MDS) and ``random_scale`` (fixed random tables)."""

    n: int
    d: int
    n_heads: int = 1
    seed: int | None = 0
    geometry: Any = None
    rank: int = 3
    random_scale: float = 1.0


# ------------------------------------------------------------------------------ families
class Family:
    """A positional family. Subclass, set the class attributes, decorate with :func:`register`.

    Attributes: ``name`` (registry key), ``order`` (position in listings and comparisons),
    ``summary`` (one line), ``skip_reason`` (why it has no row), ``requires`` (build parameters
    without a default, e.g. ``("source",)``), ``in_comparison`` (in ``compare``'s default set),
    ``mechanism_kind`` / ``mechanism_params`` (its mechanism in Hugging Face models, or ``None``),
    ``looks_for`` (what :meth:`detect` looks for, for the "nothing found" message), ``detect_order``
    (smaller first), ``torch_class`` (``"module:Class"`` of its nn module, or ``None``),
    ``trained_by_default`` (the trainer trains its positions), ``excludes`` (mechanism kinds dropped
    when this family's mechanism is found: ALiBi models may carry an unused rotary module),
    ``comparison_needs`` (the :class:`~posgeom.pipeline.config.GeometryConfig` field its row needs,
    e.g. ``"learned_model"``), ``pipeline_options`` (what the comparison's pipeline must compute,
    e.g. ``{"refine": True}`` for SMACOF), ``row_choice`` (a per-head family: the score whose lowest
    value picks the head that is its row, ties to the lower head; ``None``: one row per encoding),
    ``role`` (what its comparison row is: ``"candidate"``, an encoding a model could use;
    ``"baseline"``, a reference with no positional design (random, NoPE) that a candidate must beat;
    ``"fitted"``, fitted to the corpus geometry itself (MDS), so refitted on every bootstrap
    replicate by :meth:`refit`), ``extension_type`` (its extension side: ``spec_keys``,
    ``strategies``, ``lag_vectors``, ...; an :class:`~posgeom.encodings._extension.Extension`
    subclass, instantiated with the family's ``name`` as the instance attribute ``extension``).
    """

    name: ClassVar[str] = ""
    order: ClassVar[int] = 1000
    summary: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    in_comparison: ClassVar[bool] = True
    mechanism_kind: ClassVar[str | None] = None
    mechanism_params: ClassVar[type | None] = None
    looks_for: ClassVar[str] = ""
    detect_order: ClassVar[int] = 100
    torch_class: ClassVar[str | None] = None
    trained_by_default: ClassVar[bool] = False
    excludes: ClassVar[tuple[str, ...]] = ()
    comparison_needs: ClassVar[str | None] = None
    skip_reason: ClassVar[str] = "not available for this input"
    pipeline_options: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    row_choice: ClassVar[str | None] = None
    role: ClassVar[str] = "candidate"
    extension_type: ClassVar[type[Extension]] = Extension
    extension: Extension

    def __init__(self) -> None:
        self.extension = self.extension_type(self.name)

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:  # pragma: no cover
        raise NotImplementedError

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding | None:
        """The family's encoding in a comparison of positions ``0 .. ctx.n_positions - 1`` with the
        layout of ``ctx`` (``None``: it has none there). ``posgeom demo`` uses it too."""
        return None

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        """The description column of the comparison row."""
        return self.summary

    def parameter_count(self, ctx: ComparisonContext, encoding: PositionEncoding) -> int:
        """Stored scalars of the row (0 for a fixed formula)."""
        return 0

    def encodings(self, ctx: ComparisonContext) -> dict[str, RowEncoding]:
        """The encodings of the family's comparison rows by name (empty: it has none there): by
        default :meth:`default_encoding` as the row ``name``, described by :meth:`describe` and
        :meth:`parameter_count`. A per-head family returns one entry per head and sets
        :attr:`row_choice`."""
        enc = self.default_encoding(ctx)
        if enc is None:
            return {}
        row = RowEncoding(enc, self.describe(ctx, enc), int(self.parameter_count(ctx, enc)))
        return {self.name: row}

    def model_reference(self, n_positions: int, width: int, seed: int) -> Any:
        """Its reference encoding of a model's ``width`` in ``analyze_model`` (scored beside the
        model's own mechanisms), or ``None`` (no reference row)."""
        return None

    def refit(self, distances: np.ndarray, *, model_dim: int, low_rank: int) -> Any:
        """A ``"fitted"`` family's row refitted to one replicate's distances ``(n, n)`` (an
        encoding, e.g. an MDS result), or ``None``: not refitted, so the row gets no bootstrap
        interval. Fixed families (candidates, baselines) are scored as they are."""
        return None

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        """Mechanisms of this family in a loaded torch model (none by default)."""
        return []

    def check_training(self, spec: TorchSpec) -> None:
        """Raise :class:`PosgeomError` when ``spec`` cannot hold this family's torch module."""

    def torch_module(self, spec: TorchSpec) -> Any:
        """The ``posgeom.nn`` position module for ``spec`` (``None``: no module, e.g. NoPE)."""
        raise PosgeomError(f"encoding {self.name!r} has no torch module to train with")

    def module_geometry(self, module: Any, spec: TorchSpec, target: Any = None) -> Any:
        """The geometry of a (trained) torch module of this family over positions ``0 .. n-1``:
        by default the float64 rows of ``module.table()`` (additive tables). ``target``: the
        corpus distances, for families that pick a head (ALiBi)."""
        import torch

        with torch.no_grad():
            return module.table().detach().to(torch.float64).cpu().numpy()[: spec.n]

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any] | None:
        """Build parameters whose numpy geometry the torch module of ``spec`` reproduces
        (``None``: a randomly initialised module, or none); the common family test checks it."""
        return None

    def torch_class_object(self) -> Any:
        """The class named by :attr:`torch_class` (imported on demand; needs torch)."""
        if self.torch_class is None:
            raise PosgeomError(f"encoding {self.name!r} has no torch module to train with")
        return self.extension.torch_object(self.torch_class)

    def __repr__(self) -> str:
        return f"<family {self.name!r}: {self.summary}>"


_FAMILIES: dict[str, Family] = {}


ROLES = ("candidate", "baseline", "fitted")


def register(cls: type[Family]) -> type[Family]:
    """Class decorator: register one instance of ``cls`` under ``cls.name``."""
    if not cls.name or cls.name in _FAMILIES:
        raise PosgeomError(f"family name {cls.name!r} is empty or already registered")
    if cls.role not in ROLES:
        raise PosgeomError(f"family {cls.name!r} has role {cls.role!r}; use one of {ROLES}")
    kinds = {f.mechanism_kind for f in _FAMILIES.values() if f.mechanism_kind}
    if cls.mechanism_kind and cls.mechanism_kind in kinds:
        raise PosgeomError(f"mechanism kind {cls.mechanism_kind!r} is already registered")
    _FAMILIES[cls.name] = cls()
    if cls.mechanism_kind:
        register_kind(cls.mechanism_kind, cls.mechanism_params)
    ordered = sorted(_FAMILIES.items(), key=lambda item: (item[1].order, item[0]))
    _FAMILIES.clear()
    _FAMILIES.update(ordered)
    return cls


def families() -> Mapping[str, Family]:
    """Every registered family by ``order`` (a read-only view)."""
    return MappingProxyType(_FAMILIES)


def family(name: str) -> Family:
    """The family registered as ``name``, or :class:`PosgeomError` listing the known ones."""
    if name not in _FAMILIES:
        raise PosgeomError(
            f"unknown encoding {name!r}; known encodings: {', '.join(sorted(_FAMILIES))}"
        )
    return _FAMILIES[name]


def extension_of(name: str) -> Extension:
    """The extension side of the family registered as ``name`` (``family(name).extension``)."""
    return family(name).extension


def families_with_role(role: str) -> tuple[str, ...]:
    """Names of the registered families of ``role`` (see :attr:`Family.role`), in order."""
    return tuple(name for name, fam in _FAMILIES.items() if fam.role == role)


def role_of(name: str) -> str:
    """The role of the row ``name``: its family's, ``"candidate"`` for any other encoding (a
    user's, a model's mechanism)."""
    fam = _FAMILIES.get(name)
    return fam.role if fam is not None else "candidate"


def is_candidate(name: str) -> bool:
    """Whether a row competes for "closest encoding": its role is ``"candidate"``
    (:func:`posgeom.encodings.role_of`) and it is no variant of a fitted family (``mds+smacof``,
    ``mds (target)``: fits of ``D`` too)."""
    return role_of(str(name)) == "candidate" and not str(name).startswith(
        families_with_role("fitted")
    )


def family_of_mechanism(kind: str) -> Family:
    """The family whose Hugging Face mechanism is ``kind`` (``"rotary"`` -> ``rope``, ...)."""
    for fam in _FAMILIES.values():
        if fam.mechanism_kind == kind:
            return fam
    kinds = [f.mechanism_kind for f in _FAMILIES.values() if f.mechanism_kind]
    raise PosgeomError(f"unknown mechanism kind {kind!r}; use one of {', '.join(kinds)}")


def describe_given(enc: Any, ctx: Any) -> tuple[str, int]:
    """``(description, parameters)`` of a caller's encoding: its registered family's own
    (:meth:`~posgeom.encodings._registry.Family.describe` and ``parameter_count``, as the
    family's rows get them) when it names one, else what it is: given ``(n, d)`` vectors (``n d``
    stored scalars) or given ``(n, n)`` distances (``n (n - 1) / 2``)."""
    fam = _FAMILIES.get(str(getattr(enc, "name", "")))
    if fam is not None:
        try:
            return str(fam.describe(ctx, enc)), int(fam.parameter_count(ctx, enc))
        except (AttributeError, KeyError, TypeError, ValueError):
            pass  # a family whose description needs a context this row does not have
    vec = getattr(enc, "vectors", None)
    if vec is None and getattr(enc, "ndim", None) == 2:
        a = np.asarray(enc)
        square = a.shape[0] == a.shape[1] and np.allclose(a, a.T) and not np.diag(a).any()
        vec = None if square else a
    if vec is not None and getattr(enc, "distance_matrix", None) is None:
        n, d = np.shape(vec)
        return f"given vectors ({n} x {d})", int(n * d)
    n = int(getattr(enc, "n_positions", None) or np.shape(enc)[0])
    return f"given distances ({n} x {n})", n * (n - 1) // 2
