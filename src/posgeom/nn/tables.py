"""Position tables given by an MDS fit: the full table and its low-rank form ``P = A B^T``.

:class:`AbsolutePositionEmbedding` holds any ``(n, d)`` table (e.g. Algorithm 1's MDS encoding);
built by :meth:`~AbsolutePositionEmbedding.from_mds` with ``beyond="extend"`` it extends to new
positions by Gower's formula (:mod:`posgeom.embed.extend`). :class:`LowRankPositionEmbedding`
stores ``A`` (n, r) and ``B`` (d, r), ``r (n + d)`` parameters. Both follow the interface of
:class:`posgeom.nn.position.PositionEmbedding`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.nn.position import PositionEmbedding, _as_tensor

__all__ = ["AbsolutePositionEmbedding", "LowRankPositionEmbedding"]


def _placement_of(mds_result: Any, coordinates: np.ndarray, embedding: np.ndarray) -> np.ndarray:
    """The (d, r) placement ``Q`` with ``embedding = coordinates Qᵀ``: ``mds_result.placement``
    when it is a (d, r) array that fits, else recovered by least squares (the fit checked)."""
    q = getattr(mds_result, "placement", None)
    if isinstance(q, np.ndarray) and q.shape == (embedding.shape[1], coordinates.shape[1]):
        q = np.asarray(q, dtype=np.float64)
        if np.allclose(coordinates @ q.T, embedding, rtol=1e-10, atol=1e-12):
            return q
    qt, *_ = np.linalg.lstsq(coordinates, embedding, rcond=None)
    resid = np.linalg.norm(coordinates @ qt - embedding)
    scale = max(np.linalg.norm(embedding), 1e-300)
    if resid > 1e-8 * scale + 1e-12:
        raise PosgeomError(
            "the MDS result's embedding is not coordinates @ Qᵀ for any placement Q "
            f"(relative residual {resid / scale:.2e}); pass an MDSResult from classical_mds"
        )
    return qt.T


def _mds_arrays(mds_result: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        emb = np.asarray(mds_result.embedding, dtype=np.float64)
        coords = np.asarray(mds_result.coordinates, dtype=np.float64)
    except AttributeError as exc:
        raise PosgeomError(
            "from_mds needs an MDSResult (posgeom.embed.mds.classical_mds) with .embedding "
            "(n, d) and .coordinates (n, r)"
        ) from exc
    if emb.ndim != 2 or coords.ndim != 2 or emb.shape[0] != coords.shape[0]:
        raise PosgeomError(
            f"MDS result has embedding {emb.shape} and coordinates {coords.shape}; expected "
            "(n, d) and (n, r) with the same n"
        )
    return emb, coords


class AbsolutePositionEmbedding(PositionEmbedding):
    """A given position table ``P`` (n, d), e.g. the MDS-optimal encoding of Algorithm 1.

    ``forward(ids (..., L)) = P[ids]`` of shape ``(..., L, d)``. Reference: the absolute position
    table of BERT (``embeddings.position_embeddings``), here initialised from any table.

    Args:
        table: (n, d) float tensor or numpy array.
        trainable: whether ``P`` is an ``nn.Parameter`` (else a buffer).
        beyond: ``"error"`` | ``"interpolate"`` | ``"extend"`` (see the module docstring;
            ``"extend"`` needs the Gower data that :meth:`from_mds` stores).
        dtype: storage dtype (default: torch default dtype).
    """

    _allowed_policies = ("error", "interpolate", "extend")

    def __init__(
        self,
        table: Tensor | np.ndarray,
        *,
        trainable: bool = True,
        beyond: str = "error",
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        t = _as_tensor(table, dtype, "table")
        if t.ndim != 2:
            raise PosgeomError(f"table must be 2-D (n, d), got shape {tuple(t.shape)}")
        self._init_common(int(t.shape[0]), int(t.shape[1]), beyond)
        self.trainable = bool(trainable)
        if trainable:
            self.weight = nn.Parameter(t)
        else:
            self.register_buffer("weight", t)
        # Gower data (filled by from_mds(..., beyond="extend")); rows appended by extend().
        self.has_gower = False
        self.register_buffer("extension", t.new_zeros((0, self.dim)))

    def _set_gower(
        self,
        coords: np.ndarray,
        eigenvalues: np.ndarray,
        train_sq: np.ndarray,
        placement: np.ndarray,
    ) -> None:
        self.has_gower = True
        for name, arr in (
            ("gower_coordinates", coords),
            ("gower_eigenvalues", eigenvalues),
            ("gower_train_sq", train_sq),
            ("gower_placement", placement),
        ):
            self.register_buffer(name, torch.from_numpy(np.array(arr, dtype=np.float64)))

    @classmethod
    def from_mds(
        cls,
        mds_result: Any,
        *,
        trainable: bool = False,
        beyond: str = "error",
        train_sq_distances: np.ndarray | None = None,
        dtype: torch.dtype | None = None,
    ) -> AbsolutePositionEmbedding:
        """Build from an :class:`~posgeom.embed.mds.MDSResult`: the table is ``.embedding`` (n, d).

        For ``beyond="extend"`` pass ``train_sq_distances`` (n, n), the squared distances the MDS
        was fitted to (squared Hellinger distances ``D**2``). Without them the squared distances of
        the fitted configuration itself are used (``mds_result.distances**2``, the Euclidean
        distances of the coordinates): equal to ``D**2`` when the MDS is exact (full rank, ``D``
        Euclidean), otherwise the rank-``r`` approximation of it. The placement ``Q`` (d, r) is
        recovered from ``embedding = coordinates Qᵀ``.
        """
        emb, coords = _mds_arrays(mds_result)
        mod = cls(emb, trainable=trainable, beyond=beyond, dtype=dtype)
        if beyond == "extend":
            if train_sq_distances is None:  # those of the fitted configuration
                train_sq_distances = getattr(mds_result, "distances", None)
                if train_sq_distances is None:
                    raise PosgeomError(
                        "beyond='extend' needs the training distances: pass train_sq_distances="
                        "D**2 (n, n), the squared distances the MDS was fitted to"
                    )
                train_sq_distances = np.asarray(train_sq_distances, dtype=np.float64) ** 2
            n = emb.shape[0]
            train_sq = np.asarray(train_sq_distances, dtype=np.float64)
            if train_sq.shape != (n, n):
                raise PosgeomError(
                    f"train_sq_distances has shape {train_sq.shape}, expected ({n}, {n})"
                )
            eig = np.asarray(mds_result.eigenvalues, dtype=np.float64).reshape(-1)
            keep = eig[: coords.shape[1]] > 0  # components with a positive eigenvalue
            coords, eig_r = coords[:, keep], eig[: coords.shape[1]][keep]
            q = _placement_of(mds_result, coords, emb)
            mod._set_gower(coords, eig_r, train_sq, q)
        return mod

    def extend(self, new_sq_distances: np.ndarray | Tensor) -> Tensor:
        """Append Gower-extended rows for the next ``m`` positions.

        Args:
            new_sq_distances: (m, n) squared distances of positions ``n+k … n+k+m-1`` (``k`` rows
                already extended) to the n training positions.

        Returns:
            (m, d) the new rows ``x_new Qᵀ`` (computed from the MDS fit, not from a trained table).
        """
        if not self.has_gower:
            raise PosgeomError(
                "extend() needs an embedding built with AbsolutePositionEmbedding.from_mds("
                "mds_result, beyond='extend', train_sq_distances=...)"
            )
        from posgeom.embed.extend import gower_extension

        if isinstance(new_sq_distances, Tensor):
            new_sq_distances = new_sq_distances.detach().cpu().numpy()
        new = np.asarray(new_sq_distances, dtype=np.float64)
        new = new[None, :] if new.ndim == 1 else new
        x_new = gower_extension(
            self.gower_coordinates.cpu().numpy(),
            self.gower_eigenvalues.cpu().numpy(),
            self.gower_train_sq.cpu().numpy(),
            new,
        )
        rows = torch.from_numpy(x_new @ self.gower_placement.cpu().numpy().T)
        rows = rows.to(device=self.weight.device, dtype=self.weight.dtype)
        self.extension = torch.cat([self.extension, rows], dim=0)
        return rows

    def _limit(self) -> int:
        return self.n_positions + int(self.extension.shape[0])

    def _rows(self, ids: Tensor) -> Tensor:
        if self.extension.shape[0] and int(ids.max()) >= self.n_positions:
            full = torch.cat([self.weight, self.extension.to(self.weight.dtype)], dim=0)
            return nn.functional.embedding(ids, full)
        return nn.functional.embedding(ids, self.weight)

    def config(self) -> dict[str, Any]:
        return {
            "n": self.n_positions,
            "d": self.dim,
            "trainable": self.trainable,
            "beyond": self.beyond,
            "has_gower": self.has_gower,
            "gower_rank": int(self.gower_coordinates.shape[1]) if self.has_gower else 0,
            "n_extended": int(self.extension.shape[0]),
        }

    @classmethod
    def from_config(cls, cfg: dict[str, Any], dtype: torch.dtype | None = None):
        n, d = int(cfg["n"]), int(cfg["d"])
        mod = cls(
            torch.zeros(n, d), trainable=bool(cfg["trainable"]), beyond=cfg["beyond"], dtype=dtype
        )
        if cfg.get("has_gower"):
            r = int(cfg["gower_rank"])
            mod._set_gower(np.zeros((n, r)), np.ones(r), np.zeros((n, n)), np.zeros((d, r)))
        mod.extension = mod.weight.new_zeros((int(cfg.get("n_extended", 0)), d)).detach()
        return mod


class LowRankPositionEmbedding(PositionEmbedding):
    """Low-rank table ``P = A Bᵀ`` with ``A`` (n, r), ``B`` (d, r): ``r (n + d)`` parameters.

    ``forward(ids (..., L)) = A[ids] Bᵀ`` of shape ``(..., L, d)``. Reference: the paper's low-rank
    form (Section 3; n=32, d=128, r=3 gives 480 parameters instead of 4096).

    Args:
        n, d, rank: table size and rank, ``1 <= rank <= min(n, d)``.
        init: ``"random"`` (``A ~ N(0, 1)``, ``B ~ N(0, 0.02² / r)``, so entries of ``P`` have
            standard deviation 0.02 like BERT's learned table) or a pair ``(A, B)`` of tensors /
            arrays with shapes (n, r), (d, r).
        beyond: ``"error"`` | ``"interpolate"``.
        generator: optional ``torch.Generator`` for the random init.
    """

    _config_args = (("rank", int),)

    def __init__(
        self,
        n: int,
        d: int,
        rank: int,
        *,
        init: str | tuple[Tensor | np.ndarray, Tensor | np.ndarray] = "random",
        beyond: str = "error",
        dtype: torch.dtype | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self._init_common(n, d, beyond)
        check_int(rank, "rank", 1)
        if rank > min(n, d):
            raise PosgeomError(
                f"rank={rank} exceeds min(n, d) = min({n}, {d}) = {min(n, d)}; a rank above that "
                "adds parameters without adding expressiveness: choose rank <= min(n, d)"
            )
        self.rank = rank
        dt = dtype or torch.get_default_dtype()
        if isinstance(init, str):
            if init != "random":
                raise PosgeomError(f"init must be 'random' or a pair (A, B), got {init!r}")
            a = torch.randn(n, rank, generator=generator, dtype=dt)
            b = torch.randn(d, rank, generator=generator, dtype=dt) * (0.02 / math.sqrt(rank))
        else:
            if not (isinstance(init, (tuple, list)) and len(init) == 2):
                raise PosgeomError(
                    "init must be 'random' or a pair (A, B) of (n, r), (d, r) arrays"
                )
            a = _as_tensor(init[0], dt, "A")
            b = _as_tensor(init[1], dt, "B")
            if tuple(a.shape) != (n, rank) or tuple(b.shape) != (d, rank):
                raise PosgeomError(
                    f"init pair has shapes A {tuple(a.shape)}, B {tuple(b.shape)}; expected "
                    f"A ({n}, {rank}) and B ({d}, {rank})"
                )
        self.A = nn.Parameter(a)
        self.B = nn.Parameter(b)

    @classmethod
    def from_mds(
        cls,
        mds_result: Any,
        rank: int,
        *,
        beyond: str = "error",
        dtype: torch.dtype | None = None,
    ) -> LowRankPositionEmbedding:
        """Initialise from the top-``rank`` MDS coordinates.

        ``A = coordinates[:, :r]``, ``B = Q[:, :r]`` where ``Q`` (d, r_full) is the placement with
        ``embedding = coordinates Qᵀ`` (recovered by least squares), so ``A Bᵀ`` is the rank-r MDS
        embedding.
        """
        emb, coords = _mds_arrays(mds_result)
        n, d = emb.shape
        check_int(rank, "rank", 1)
        if rank > coords.shape[1]:
            raise PosgeomError(
                f"rank={rank} exceeds the {coords.shape[1]} MDS coordinates available; refit "
                "classical_mds with n_components >= rank or lower the rank"
            )
        q = _placement_of(mds_result, coords, emb)
        return cls(n, d, rank, init=(coords[:, :rank], q[:, :rank]), beyond=beyond, dtype=dtype)

    def _rows(self, ids: Tensor) -> Tensor:
        return nn.functional.embedding(ids, self.A) @ self.B.T

    def table(self) -> Tensor:
        return self.A @ self.B.T

    def extra_repr(self) -> str:
        return super().extra_repr() + f", rank={self.rank}"
