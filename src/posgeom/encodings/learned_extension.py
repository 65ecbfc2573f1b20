"""The learned table's extension side (:class:`LearnedExtension`, the ``extension_type`` of
:class:`~posgeom.encodings.learned.LearnedFamily`): extending an absolute table ``p``
(``(L0, d)``) to ``L > L0`` positions, its lag kernel and the decoder's extended table.

Parameters: ``{"table": (n, d) float64}`` (its first ``L0`` rows are the trained ones); no spec:
tables come from a model or a decoder file. Strategies (no ``none``: the table has no row past
``L0``):

- ``clamp``: ``p'_i = p_{min(i, L0 - 1)}``;
- ``interpolate``: ``p'_i = p(x_i)`` at ``x_i = i (L0 - 1) / (L - 1)``, linear between rows;
- ``gower``: classical MDS of the corpus's ``(L, L)`` chords ``D[:L0, :L0]`` gives coordinates
  ``X`` (positive eigenvalues), the affine map ``[X, 1] A ~ p`` is fitted by least squares, the
  new positions are placed by Gower's formula (:func:`posgeom.embed.extend.gower_extension`)
  from their squared distances to the trained ones and get ``p'_i = [x_new, 1] A``; trained
  rows are kept;
- ``gower-table``: the same with the table's own geometry (:func:`table_lag_distances`): the
  rows' own distances among the trained ones, and at lag ``k = i - j`` the root-mean-square
  ``delta(k)^2 = mean_j ||p_{j+k} - p_j||^2`` (``k < L0``; beyond, the mean over the 16 largest
  trained lags). No corpus is needed.

Lag kernel (:func:`learned_lag_vectors`): ``v_k = mean_{i < n - k} p_i * p_{i+k}``
(elementwise; its sum is ``mean_i <p_i, p_{i+k}>``) of the table extended to ``L`` rows. A
posgeom decoder gets the extended table as an
:class:`~posgeom.nn.tables.AbsolutePositionEmbedding`; a transformers model cannot (``--measure``
refuses, one line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags

__all__ = [
    "FAR_LAGS",
    "LEARNED_METHODS",
    "LearnedExtension",
    "extend_table",
    "extended_table",
    "learned_lag_vectors",
    "table_lag_distances",
]


LEARNED_METHODS = ("clamp", "interpolate", "gower", "gower-table")
FAR_LAGS = 16  # the largest trained lags whose mean distance stands for every lag >= L0


def _gower(table: np.ndarray, target: int, distances: Any, rank: int | None) -> np.ndarray:
    from posgeom.embed.extend import gower_extension
    from posgeom.embed.mds import classical_mds

    l0 = table.shape[0]
    d = np.asarray(distances, dtype=np.float64)
    if d.shape != (target, target):
        raise PosgeomError(
            f"Gower extension needs the corpus's positional distances over all {target} target "
            f"positions, got shape {d.shape}; estimate the geometry with max_positions={target}"
        )
    d2 = d**2
    mds = classical_mds(d[:l0, :l0], rank, input_kind="distances")
    keep = mds.eigenvalues[: mds.coordinates.shape[1]] > 1e-12
    x, lam = mds.coordinates[:, keep], mds.eigenvalues[: mds.coordinates.shape[1]][keep]
    if x.shape[1] == 0:
        raise PosgeomError(
            "the corpus's positional geometry is flat (no positive MDS eigenvalue): Gower "
            "extension has nothing to place new positions by; use clamp or interpolate"
        )
    design = np.hstack([x, np.ones((l0, 1))])
    coef, *_ = np.linalg.lstsq(design, table, rcond=None)
    new = gower_extension(x, lam, d2[:l0, :l0], d2[l0:, :l0])
    return np.vstack([table, np.hstack([new, np.ones((target - l0, 1))]) @ coef])


def table_lag_distances(table: Any, target_length: int) -> np.ndarray:
    """The ``(L, L)`` float64 distances of ``gower-table`` (module docstring; ``FAR_LAGS``:
    the largest trained lags that stand for every lag >= L0)."""
    p = np.asarray(table, dtype=np.float64)
    l0, target = p.shape[0], int(target_length)
    gram = p @ p.T
    sq = np.maximum(np.diag(gram)[:, None] + np.diag(gram)[None, :] - 2 * gram, 0.0)
    profile = np.array([np.mean(np.diagonal(sq, k)) for k in range(l0)])
    far = float(np.mean(profile[-min(FAR_LAGS, l0 - 1) :]))
    lag = np.abs(np.arange(target)[:, None] - np.arange(target)[None, :])
    full = np.where(lag < l0, profile[np.minimum(lag, l0 - 1)], far)
    full[:l0, :l0] = sq
    return np.sqrt(full)


def extend_table(
    table: Any,
    target_length: int,
    method: str,
    *,
    position_distances: Any = None,
    rank: int | None = None,
) -> np.ndarray:
    """The ``(L, d)`` float64 extension of the ``(L0, d)`` ``table`` by ``method`` (module
    docstring); ``position_distances``: ``(L, L)`` corpus chords (``gower`` only); ``rank``: MDS
    rank for ``gower`` and ``gower-table`` (default all positive eigenvalues up to
    ``min(L0 - 1, d)``)."""
    p = np.asarray(table, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 2:
        raise PosgeomError(f"a learned table must be (L0 >= 2, d), got shape {p.shape}")
    l0, target = p.shape[0], int(target_length)
    if target <= l0:
        raise PosgeomError(f"target length {target} must exceed the table's {l0} rows")
    if method == "clamp":
        return p[np.minimum(np.arange(target), l0 - 1)]
    if method == "interpolate":
        x = np.arange(target) * (l0 - 1) / (target - 1)
        lo = np.minimum(np.floor(x).astype(np.int64), l0 - 2)
        frac = (x - lo)[:, None]
        return (1 - frac) * p[lo] + frac * p[lo + 1]
    if method == "gower":
        if position_distances is None:
            raise PosgeomError(
                "Gower extension needs the corpus's per-position geometry at the target length "
                "(documents with a start); without it use clamp or interpolate"
            )
        return _gower(p, target, position_distances, rank or min(l0 - 1, p.shape[1]))
    if method == "gower-table":
        distances = table_lag_distances(p, target)
        return _gower(p, target, distances, rank or min(l0 - 1, p.shape[1]))
    raise PosgeomError(
        f"unknown table extension {method!r}; use one of {', '.join(LEARNED_METHODS)}"
    )


def extended_table(params: Mapping[str, Any], method: str, ctx: ExtensionContext) -> np.ndarray:
    """The table's first ``ctx.trained_length`` rows extended to ``ctx.target_length`` by
    ``method``: the one table that is scored and, with ``--measure``, run
    (``ctx.position_distances``: the corpus's geometry or an estimate of it, ``gower`` only)."""
    table = np.asarray(params["table"])[: int(ctx.trained_length)]
    return extend_table(table, ctx.target_length, method, position_distances=ctx.position_distances)


def learned_lag_vectors(table: Any, lags: Any) -> np.ndarray:
    """``(m, d)``: ``mean_{i < n-k} p_i * p_{i+k}`` of the ``(n, d)`` table; every lag ``< n``."""
    p = np.asarray(table, dtype=np.float64)
    lag = check_lags(lags)
    if p.ndim != 2 or lag.max() >= p.shape[0]:
        raise PosgeomError(
            f"a learned table of {p.shape[0] if p.ndim == 2 else '?'} rows has no lag "
            f"{int(lag.max())}; extend the table to the target length first"
        )
    return np.stack([(p[: p.shape[0] - k] * p[k:]).mean(axis=0) for k in lag])


_DESCRIPTIONS = {
    "clamp": "positions past L0 reuse the last row",
    "interpolate": "rows at i (L0-1)/(L-1)",
    "gower": "Gower extension in the corpus MDS frame",
    "gower-table": "Gower extension in the table's own MDS frame, new rows at its mean lag "
    "distances",
}


class LearnedExtension(Extension):
    """The learned table's extension protocol (module docstring)."""

    def check_extension_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        table = np.asarray(params.get("table"), dtype=np.float64)
        if table.ndim != 2 or table.shape[0] < 1:
            raise PosgeomError(f"a learned table must be (rows, d), got shape {table.shape}")
        return {**params, "table": table}

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
        return {"table": np.asarray(mechanism.params.table, dtype=np.float64)}

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        return {"table": module.table().detach().double().numpy()}

    def default_trained_length(self, params: Mapping[str, Any]) -> int:
        return int(np.asarray(params["table"]).shape[0])

    def extension_summary(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"table_shape": list(np.asarray(params["table"]).shape)}

    def strategies(
        self, params: Mapping[str, Any], trained_length: int, target_length: int
    ) -> list[Strategy]:
        return [Strategy(m, self.name, m, None, _DESCRIPTIONS[m]) for m in LEARNED_METHODS]

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        if strategy.kind == "none":  # the table as trained: lags below its rows only
            return learned_lag_vectors(np.asarray(params["table"])[: ctx.target_length], lags)
        return learned_lag_vectors(extended_table(params, strategy.kind, ctx), lags)

    def can_apply(self, strategy: Strategy, target: str) -> bool:
        return target == "decoder" and strategy.kind in LEARNED_METHODS

    def decoder_strategy_module(
        self, params: Mapping[str, Any], strategy: Strategy, trained: Any, ctx: ExtensionContext
    ) -> Any:
        """The extended table as a fixed ``AbsolutePositionEmbedding`` (the trained dtype)."""
        import torch

        self.check_apply(strategy, "decoder")
        table = extended_table(params, strategy.kind, ctx)
        module = self.torch_object("posgeom.nn.tables:AbsolutePositionEmbedding")
        weights = torch.from_numpy(np.ascontiguousarray(table))
        return module(weights, trainable=False, dtype=trained.embedding.weight.dtype)

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        """``LearnedPositionEmbedding`` of ``trained_length`` rows, N(0, 0.02^2)."""
        learned = self.torch_object("posgeom.nn.position:LearnedPositionEmbedding")
        return learned(config.trained_length, config.d_model, generator=generator)

    def decoder_weights_at_least(self, config: Any) -> int:
        return int(config.trained_length) * int(config.d_model)
