"""The diagnostics of a target ``D``, in one record: :func:`analyse_target`.

Before any encoding is scored, the pipeline asks two questions of its target: how stationary is
``D`` (:mod:`~posgeom.geometry.stationarity`) and how much of it is sampling noise
(:mod:`~posgeom.geometry.noise`). :class:`TargetAnalysis` holds both results and what a summary
and ``arrays.npz`` read of them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.geometry.distributions import positional_distributions
from posgeom.geometry.divergences import HellingerBlocks
from posgeom.geometry.noise import NoiseFloor, SampledNoiseFloor, noise_floor, sampled_noise_floor
from posgeom.geometry.stationarity import StationarityResult, sampled_stationarity, stationarity

__all__ = ["TargetAnalysis", "analyse_target"]

log = logging.getLogger("posgeom")


@dataclass(frozen=True, eq=False)
class TargetAnalysis:
    """The diagnostics of one target: ``stationarity``; ``noise``, the noise floor (None when
    not measured); ``stationarity_summary`` and ``noise_summary`` (None without a floor), their
    JSON blocks; ``toeplitz``: the best Toeplitz approximation ``(n, n)`` of an exact target, else
    None."""

    stationarity: StationarityResult
    noise: NoiseFloor | SampledNoiseFloor | None
    stationarity_summary: Mapping[str, Any]
    noise_summary: Mapping[str, Any] | None
    toeplitz: np.ndarray | None


def analyse_target(
    matrix: Any,
    blocks: Any,
    positions: np.ndarray,
    *,
    noise_counts: Any = None,
    noise: str | None = None,
    n_repeats: int,
    seed: int,
    sample: Any = None,
) -> TargetAnalysis:
    """The :class:`TargetAnalysis` of a target: its stationarity exact on ``matrix`` (the
    ``(n, n)`` target) or, when None, sampled per lag bin from ``blocks``; its noise floor by
    ``noise`` (None: not measured) from ``noise_counts`` (on ``sample``, the scores' pair sample,
    when given; a floor that cannot be measured is skipped with a warning). ``positions``: the
    kept positions (the summary names untrusted ones by them)."""
    st = stationarity(matrix) if matrix is not None else sampled_stationarity(blocks, seed=seed)
    floor = None
    if noise:
        try:
            floor = _noise_floor(
                noise_counts, method=noise, n_repeats=n_repeats, seed=seed, sample=sample
            )
        except PosgeomError as exc:
            log.warning("noise floor skipped: %s", exc)
    return TargetAnalysis(
        stationarity=st,
        noise=floor,
        stationarity_summary=st.summary(),
        noise_summary=None if floor is None else floor.summary(positions),
        toeplitz=None if matrix is None else st.toeplitz(),
    )


def _noise_floor(
    counts: Any, *, method: str, n_repeats: int, seed: int, sample: Any = None
) -> NoiseFloor | SampledNoiseFloor:
    """The noise floor of the kept counts: exact, or split-half on the scores' pair sample
    (``sample``: a :class:`~posgeom.scores.sampled.PairSample`), the plug-in ``D`` at its pairs."""
    if sample is None:
        return noise_floor(counts, method=method, n_repeats=n_repeats, seed=seed)
    if method != "split_half":
        raise PosgeomError(
            f"the {method} noise floor needs n x n replicate matrices; at n = "
            f"{sample.n_positions} use noise='split_half'"
        )
    plugin = HellingerBlocks(positional_distributions(counts)).pairs(sample.i, sample.j)
    return sampled_noise_floor(counts, (sample.i, sample.j), plugin, n_repeats=n_repeats, seed=seed)
