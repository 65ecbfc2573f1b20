"""MDS-optimal encodings (the paper's Algorithm 1): thin wrappers over posgeom.embed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from posgeom.encodings._base import PositionEncoding, check_positive_int


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

    d = check_positive_int(d, "d")
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
    return MDSEncoding("mds", res.embedding, params, result=res)


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

    d = check_positive_int(d, "d")
    rank = check_positive_int(rank, "rank")
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
