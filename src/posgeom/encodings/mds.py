"""MDS-optimal encodings (the paper's Algorithm 1): thin wrappers over posgeom.embed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.encodings._base import PositionEncoding, check_n, check_width
from posgeom.encodings._registry import (
    ComparisonContext,
    Family,
    RowEncoding,
    TorchSpec,
    register,
)


@dataclass(frozen=True, eq=False)
class MDSEncoding(PositionEncoding):
    """An MDS encoding; ``result`` is the :class:`posgeom.embed.mds.MDSResult`, ``factors`` the
    :class:`posgeom.embed.rank.LowRankFactors` ``P = A B^T`` (low-rank form only)."""

    result: Any = None
    factors: Any = None


def mds(
    source: Any,
    d: int = 768,
    *,
    n_components: int | None = None,
    placement: str = "pad",
    solver: str = "auto",
    seed: int = 0,
) -> MDSEncoding:
    """Algorithm 1: ``P = X Q^T`` ``(n, d)`` from ``classical_mds(source, n_components,
    model_dim=d, ...)``. ``source``: an ``(n, n)`` distance matrix or positional distributions
    (``PositionalDistributions``, ``PositionCounts`` or an ``(n, V)`` probability array); the rank
    is ``min(n_components or n - 1, d)``."""
    from posgeom.embed.mds import classical_mds

    d = check_width(d)
    res = classical_mds(
        source, n_components, model_dim=d, placement=placement, solver=solver, seed=seed
    )
    params = {
        "d": d,
        "n_components": res.n_components,
        "placement": placement,
        "solver": res.solver,
        "seed": seed,
    }
    return MDSEncoding(MDSFamily.name, res.embedding, params, result=res)


def low_rank_mds(
    source: Any,
    rank: int = 3,
    d: int = 768,
    *,
    placement: str = "pad",
    solver: str = "auto",
    seed: int = 0,
) -> MDSEncoding:
    """The rank-``r`` MDS encoding ``P = A B^T`` (``A = X_r`` ``(n, r)``, ``B = Q_r`` ``(d, r)``),
    ``r (n + d)`` parameters instead of ``n d`` (``params`` reports both and the reduction)."""
    from posgeom.embed.mds import classical_mds
    from posgeom.embed.rank import low_rank_factors

    d = check_width(d)
    rank = check_int(rank, "rank", 1)
    res = classical_mds(source, rank, model_dim=d, placement=placement, solver=solver, seed=seed)
    factors = low_rank_factors(res, rank)
    params = {
        "d": d,
        "rank": rank,
        "placement": placement,
        "solver": res.solver,
        "seed": seed,
        "n_parameters": factors.n_parameters,
        "full_parameters": factors.full_parameters,
        "parameter_reduction": factors.parameter_reduction,
    }
    return MDSEncoding("low_rank_mds", factors.embedding, params, result=res, factors=factors)


def smacof(source: Any, d: int = 768, *, max_iter: int = 200) -> MDSEncoding:
    """SMACOF refinement (stress-optimal) of the MDS encoding of an ``(n, n)`` distance matrix
    ``source``, started from Algorithm 1 (``posgeom.embed.refine.smacof_refine``)."""
    from posgeom._distance_matrix import check_distance_matrix
    from posgeom.embed.mds import classical_mds
    from posgeom.embed.refine import smacof_refine

    d = check_width(d)
    target = check_distance_matrix(source, "source")
    res = classical_mds(target, model_dim=d, input_kind="distances")
    refined = smacof_refine(target, res, max_iter=max_iter)
    params = {"d": d, "max_iter": max_iter, "final_paper_stress": refined.final_stress}
    return MDSEncoding(SMACOFFamily.name, refined.embedding, params, result=refined)


def _mds_module(spec: TorchSpec, name: str) -> Any:
    if spec.geometry is None:
        raise PosgeomError(f"encoding {name!r} needs the corpus geometry (an MDS result)")
    return spec.geometry.mds


class _FittedFamily(Family):
    """A family fitted to the corpus geometry: built by ``_make(source, **params)`` from
    ``source=`` (distances or distributions of ``n_positions`` positions); its comparison row
    is the pipeline's fit of the kept positions, ``ctx.fitted[name]``, described by
    :meth:`_row`."""

    requires = ("source",)
    role = "fitted"
    _make: ClassVar[Callable[..., MDSEncoding]]

    def build(self, n_positions: int, **params: Any) -> MDSEncoding:
        if "source" not in params:
            raise PosgeomError(
                f"{self.name} needs source=<(n, n) distances or (n, V) distributions>"
            )
        enc = self._make(params.pop("source"), **params)
        if enc.n_positions != check_n(n_positions):
            raise PosgeomError(
                f"{self.name}: the input has {enc.n_positions} positions, not {n_positions}"
            )
        return enc

    def _row(self, ctx: ComparisonContext, fitted: Any) -> tuple[str, int]:
        """The row's description and parameter count."""
        raise NotImplementedError

    def encodings(self, ctx: ComparisonContext) -> dict[str, RowEncoding]:
        if self.name not in ctx.fitted:
            raise PosgeomError("the MDS rows of a comparison need the pipeline's MDS encoding")
        fitted = ctx.fitted[self.name]
        return {self.name: RowEncoding(fitted, *self._row(ctx, fitted), kept=True)}


@register
class MDSFamily(_FittedFamily):
    """Algorithm 1: the MDS-optimal table; a fixed table in the trainer."""

    name = "mds"
    order = 80
    summary = "MDS-optimal encoding of the corpus geometry (Algorithm 1)"
    torch_class = "posgeom.nn.tables:AbsolutePositionEmbedding"
    _make = staticmethod(mds)

    def refit(self, distances: np.ndarray, *, model_dim: int, low_rank: int) -> Any:
        """Classical MDS of the replicate at rank ``min(n - 1, d)``."""
        from posgeom.embed.mds import classical_mds

        n = distances.shape[0]
        return classical_mds(distances, min(n - 1, model_dim), model_dim=model_dim)

    def _row(self, ctx: ComparisonContext, fitted: Any) -> tuple[str, int]:
        description = f"Algorithm 1, rank {fitted.n_components} in d={ctx.model_dim}"
        return description, ctx.n_kept * ctx.model_dim

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        return {"source": spec.geometry.distances, "d": spec.d}

    def torch_module(self, spec: TorchSpec) -> Any:
        import torch

        cls = self.torch_class_object()
        return cls.from_mds(_mds_module(spec, self.name), trainable=False, dtype=torch.float32)


@register
class LowRankMDSFamily(_FittedFamily):
    """The rank-r MDS encoding ``P = A B^T``: ``r (n + d)`` parameters, trained by default."""

    name = "low_rank_mds"
    order = 90
    summary = "rank-r MDS encoding P = A B^T"
    torch_class = "posgeom.nn.tables:LowRankPositionEmbedding"
    trained_by_default = True
    _make = staticmethod(low_rank_mds)

    def refit(self, distances: np.ndarray, *, model_dim: int, low_rank: int) -> Any:
        """Classical MDS of the replicate at rank ``min(low_rank, n - 1, model_dim)`` (only the
        top eigenpairs: the scores need the coordinates, not the whole spectrum)."""
        from posgeom.embed.mds import classical_mds

        n = distances.shape[0]
        r = min(low_rank, n - 1, model_dim)
        return classical_mds(distances, r, model_dim=model_dim, all_eigenvalues=False)

    def _row(self, ctx: ComparisonContext, fitted: Any) -> tuple[str, int]:
        """Rank ``r = min(low_rank, the MDS rank)`` (the pipeline truncates): ``r (n + d)``
        parameters."""
        r = fitted.n_components
        return f"rank-{r} MDS, P = A B^T", r * (ctx.n_kept + ctx.model_dim)

    def check_training(self, spec: TorchSpec) -> None:
        if spec.rank > min(spec.n, spec.d):
            raise PosgeomError(
                f"rank={spec.rank} exceeds min(n, d) = min({spec.n}, {spec.d}); "
                f"choose rank <= {min(spec.n, spec.d)}"
            )
        if spec.rank > spec.n - 1:
            raise PosgeomError(
                f"rank={spec.rank}: classical MDS of n={spec.n} positions has at most "
                f"{spec.n - 1} coordinates; choose rank <= {spec.n - 1}"
            )

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        return {"source": spec.geometry.distances, "rank": spec.rank, "d": spec.d}

    def torch_module(self, spec: TorchSpec) -> Any:
        import torch

        cls = self.torch_class_object()
        return cls.from_mds(_mds_module(spec, self.name), spec.rank, dtype=torch.float32)


@register
class SMACOFFamily(_FittedFamily):
    """SMACOF refinement of the MDS encoding (stress-optimal rather than strain-optimal); not
    refitted per replicate (too slow), so its row has no interval."""

    name = "mds+smacof"
    order = 100
    summary = "SMACOF refinement started from the MDS encoding"
    pipeline_options: ClassVar[Mapping[str, Any]] = MappingProxyType({"refine": True})
    skip_reason = "refinement runs only for n <= 2048"
    _make = staticmethod(smacof)

    def _row(self, ctx: ComparisonContext, fitted: Any) -> tuple[str, int]:
        return "SMACOF from the MDS solution (200 iterations max)", ctx.n_kept * ctx.model_dim

    def encodings(self, ctx: ComparisonContext) -> dict[str, RowEncoding]:
        """None when the pipeline did not refine (it refines only for n <= 2048)."""
        return super().encodings(ctx) if self.name in ctx.fitted else {}
