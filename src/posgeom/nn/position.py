"""Additive absolute position embeddings as torch modules, with one interface.

Every module here is a :class:`PositionEmbedding`:

- ``module(position_ids)`` with an integer tensor of shape ``(..., L)`` returns ``(..., L, d)``;
- ``module(seq_len)`` with a Python int returns ``(L, d)`` for positions ``0 … L-1``;
- ``module.table()`` returns the ``(n, d)`` rows of the known positions ``0 … n-1``;
- ``module.n_positions`` (n), ``module.dim`` (d), ``module.n_parameters`` (trainable scalars),
  ``module.beyond`` (the policy for positions ``>= n``).

Policies for positions ``>= n`` (``beyond=``):

- ``"error"``: raise :class:`~posgeom._errors.PosgeomError` naming ``n`` and the options.
- ``"interpolate"``: position interpolation (Chen et al. 2023, "Extending context window of
  large language models via positional interpolation"): when the largest requested id
  ``p_max >= n``, every id ``p`` is mapped to ``t = p (n-1) / p_max`` and the embedding is the
  linear interpolation ``(1 - w) P[floor t] + w P[floor t + 1]`` with ``w = t - floor t``.
  Requests that stay below ``n`` are exact lookups.
- ``"extend"`` (:class:`AbsolutePositionEmbedding` built by ``from_mds`` only): out-of-sample
  extension of the MDS embedding by Gower's formula (:mod:`posgeom.embed.extend`). Call
  :meth:`AbsolutePositionEmbedding.extend` with the new positions' squared distance rows to
  the n training positions; positions ``n … n+m-1`` then resolve to the extended rows.
- ``"compute"`` (:class:`SinusoidalPositionEmbedding` only): evaluate the formula.

Position math is done in float32 or better; tables are stored in ``dtype`` (default: torch's
default dtype).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError

__all__ = [
    "AbsolutePositionEmbedding",
    "LearnedPositionEmbedding",
    "LowRankPositionEmbedding",
    "PositionEmbedding",
    "SinusoidalPositionEmbedding",
    "sinusoidal_table",
]

_POLICIES = ("error", "interpolate", "extend", "compute")


def _as_tensor(x: Tensor | np.ndarray, dtype: torch.dtype | None, name: str) -> Tensor:
    if isinstance(x, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(x))
    elif isinstance(x, Tensor):
        t = x.detach().clone()
    else:
        raise PosgeomError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if not (t.is_floating_point()):
        t = t.to(torch.get_default_dtype())
    return t.to(dtype or torch.get_default_dtype())


def _placement_matrix(coordinates: np.ndarray, embedding: np.ndarray) -> np.ndarray:
    """Recover the (d, r) placement ``Q`` from ``P = X Qᵀ`` by least squares; check the fit."""
    qt, *_ = np.linalg.lstsq(coordinates, embedding, rcond=None)
    resid = np.linalg.norm(coordinates @ qt - embedding)
    scale = max(np.linalg.norm(embedding), 1e-300)
    if resid > 1e-8 * scale + 1e-12:
        raise PosgeomError(
            "the MDS result's embedding is not coordinates @ Qᵀ for any placement Q "
            f"(relative residual {resid / scale:.2e}); pass an MDSResult from classical_mds"
        )
    return qt.T


def _placement_of(mds_result: Any, coordinates: np.ndarray, embedding: np.ndarray) -> np.ndarray:
    """``Q`` (d, r): ``mds_result.placement`` when it is a (d, r) array, else least squares."""
    q = getattr(mds_result, "placement", None)
    if isinstance(q, np.ndarray) and q.shape == (embedding.shape[1], coordinates.shape[1]):
        q = np.asarray(q, dtype=np.float64)
        if np.allclose(coordinates @ q.T, embedding, rtol=1e-10, atol=1e-12):
            return q
    return _placement_matrix(coordinates, embedding)


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


class PositionEmbedding(nn.Module):
    """Base class: ``forward(position_ids (..., L) | seq_len) -> (..., L, d) | (L, d)``.

    Subclasses implement :meth:`_rows` (lookup of ids known to be in ``[0, n)``; for sinusoidal,
    any id) and set ``n_positions``, ``dim`` and ``beyond``.
    """

    n_positions: int
    dim: int
    beyond: str
    _allowed_policies: tuple[str, ...] = ("error", "interpolate")

    def _init_common(self, n: int, d: int, beyond: str) -> None:
        if not isinstance(n, int) or n < 1:
            raise PosgeomError(f"n (number of positions) must be a positive int, got {n!r}")
        if not isinstance(d, int) or d < 1:
            raise PosgeomError(f"d (embedding width) must be a positive int, got {d!r}")
        if beyond not in self._allowed_policies:
            raise PosgeomError(
                f"beyond={beyond!r} is not available for {type(self).__name__}; "
                f"choose one of {list(self._allowed_policies)}"
            )
        self.n_positions = n
        self.dim = d
        self.beyond = beyond

    # -- to implement ---------------------------------------------------------------------
    def _rows(self, ids: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def config(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """JSON-serialisable constructor arguments (used by :func:`posgeom.nn.io.save_module`)."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------
    @property
    def n_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def table(self) -> Tensor:
        """The ``(n, d)`` embedding of the known positions ``0 … n-1``."""
        dev = next(iter(self.buffers()), None)
        if dev is None:
            dev = next(iter(self.parameters()))
        return self._rows(torch.arange(self.n_positions, device=dev.device))

    def _limit(self) -> int:
        """Positions below this resolve without a policy (n, or n + extended rows)."""
        return self.n_positions

    def forward(self, positions: Tensor | int) -> Tensor:
        """Embed positions.

        Args:
            positions: integer tensor ``(..., L)`` of position ids, or an int ``L`` meaning
                ``0 … L-1``.

        Returns:
            ``(..., L, d)`` (or ``(L, d)`` for an int) in the module's dtype.
        """
        if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
            if positions < 0:
                raise PosgeomError(f"sequence length must be >= 0, got {positions}")
            ref = self._ref_tensor()
            ids = torch.arange(int(positions), device=ref.device)
        elif isinstance(positions, Tensor):
            if (
                positions.is_floating_point()
                or positions.is_complex()
                or (positions.dtype == torch.bool)
            ):
                raise PosgeomError(
                    f"position ids must be an integer tensor, got dtype {positions.dtype}; "
                    "use torch.long"
                )
            ids = positions.long()
        else:
            raise PosgeomError(
                f"positions must be an int (sequence length) or an integer tensor, got "
                f"{type(positions).__name__}"
            )
        if ids.numel() == 0:
            return self._ref_tensor().new_zeros((*ids.shape, self.dim))
        if int(ids.min()) < 0:
            raise PosgeomError(f"position ids must be >= 0, got {int(ids.min())}")
        p_max = int(ids.max())
        if p_max < self._limit():
            return self._rows(ids)
        return self._beyond(ids, p_max)

    def _ref_tensor(self) -> Tensor:
        for t in self.parameters():
            return t
        for t in self.buffers():
            return t
        raise RuntimeError("module without tensors")  # pragma: no cover

    def _beyond(self, ids: Tensor, p_max: int) -> Tensor:
        n = self.n_positions
        if self.beyond == "interpolate":
            if n == 1:
                return self._rows(torch.zeros_like(ids))
            t = ids.to(torch.float64) * ((n - 1) / p_max)
            lo = torch.floor(t).long().clamp_(0, n - 1)
            hi = (lo + 1).clamp_(max=n - 1)
            w = (t - lo.to(torch.float64)).unsqueeze(-1)
            r_lo, r_hi = self._rows(lo), self._rows(hi)
            w = w.to(r_lo.dtype if r_lo.dtype in (torch.float64,) else torch.float32)
            out = r_lo.to(w.dtype) * (1 - w) + r_hi.to(w.dtype) * w
            return out.to(r_lo.dtype)
        extra = ""
        if self.beyond == "extend":
            extra = (
                f" (beyond='extend': only {self._limit() - n} extended rows are known; call "
                ".extend(new_sq_distances) with the missing positions' squared distances to the "
                f"{n} training positions)"
            )
        raise PosgeomError(
            f"position id {p_max} is out of range for {type(self).__name__} with n={n} "
            f"positions (0 … {n - 1}){extra}; set beyond='interpolate' (linear position "
            "interpolation), beyond='extend' (Gower extension of an MDS embedding, "
            "AbsolutePositionEmbedding.from_mds), or use shorter sequences"
        )

    def extra_repr(self) -> str:
        return f"n={self.n_positions}, d={self.dim}, beyond={self.beyond!r}"


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

        For ``beyond="extend"`` also pass ``train_sq_distances`` (n, n), the squared distances the
        MDS was fitted to (squared Hellinger distances), unless the result carries them as
        ``.distances``; the placement ``Q`` (d, r) is recovered from ``embedding = coordinates Qᵀ``.
        """
        emb, coords = _mds_arrays(mds_result)
        mod = cls(emb, trainable=trainable, beyond=beyond, dtype=dtype)
        if beyond == "extend":
            if train_sq_distances is None:
                dist = getattr(mds_result, "distances", None)
                if dist is None:
                    raise PosgeomError(
                        "beyond='extend' needs the training distances: pass "
                        "train_sq_distances=D**2 (n, n), the squared distances the MDS was "
                        "fitted to"
                    )
                train_sq_distances = np.asarray(dist, dtype=np.float64) ** 2
            n = emb.shape[0]
            train_sq = np.asarray(train_sq_distances, dtype=np.float64)
            if train_sq.shape != (n, n):
                raise PosgeomError(
                    f"train_sq_distances has shape {train_sq.shape}, expected ({n}, {n})"
                )
            eig = np.asarray(mds_result.eigenvalues, dtype=np.float64).reshape(-1)
            r = coords.shape[1]
            keep = eig[:r] > 0
            if not np.all(keep):  # drop components with non-positive eigenvalues (zero columns)
                coords, eig_r = coords[:, keep], eig[:r][keep]
            else:
                eig_r = eig[:r]
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

        new = new_sq_distances
        if isinstance(new, Tensor):
            new = new.detach().cpu().numpy()
        new = np.asarray(new, dtype=np.float64)
        if new.ndim == 1:
            new = new[None, :]
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
        if not isinstance(rank, int) or rank < 1:
            raise PosgeomError(f"rank must be an int >= 1, got {rank!r}")
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
        if not isinstance(rank, int) or rank < 1:
            raise PosgeomError(f"rank must be an int >= 1, got {rank!r}")
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

    def config(self) -> dict[str, Any]:
        return {"n": self.n_positions, "d": self.dim, "rank": self.rank, "beyond": self.beyond}

    @classmethod
    def from_config(cls, cfg: dict[str, Any], dtype: torch.dtype | None = None):
        return cls(
            int(cfg["n"]), int(cfg["d"]), int(cfg["rank"]), beyond=cfg["beyond"], dtype=dtype
        )

    def extra_repr(self) -> str:
        return super().extra_repr() + f", rank={self.rank}"


def sinusoidal_table(positions: Tensor, d: int, base: float = 10000.0) -> Tensor:
    """Vaswani et al. (2017) sinusoids, interleaved, computed in float64.

    ``PE[p, 2i] = sin(p / base^{2i/d})``, ``PE[p, 2i+1] = cos(p / base^{2i/d})``; for odd ``d`` the
    last column is the sine of the last frequency. Shape ``(*positions.shape, d)``, float64.
    """
    i2 = torch.arange(0, d, 2, dtype=torch.float64, device=positions.device)
    inv = base ** (-i2 / d)
    ang = positions.to(torch.float64).unsqueeze(-1) * inv
    out = torch.empty((*positions.shape, d), dtype=torch.float64, device=positions.device)
    out[..., 0::2] = torch.sin(ang)
    out[..., 1::2] = torch.cos(ang[..., : d // 2])
    return out


class SinusoidalPositionEmbedding(PositionEmbedding):
    """Fixed sinusoidal encoding (Vaswani et al. 2017), a non-trainable buffer of n rows.

    Convention: interleaved, ``PE[p, 2i] = sin(p ω_i)``, ``PE[p, 2i+1] = cos(p ω_i)``,
    ``ω_i = base^{-2i/d}`` (as in fairseq/tensor2tensor's interleaved form and Hugging Face
    DistilBERT's ``create_sinusoidal_embeddings``). Computed in float64, stored in ``dtype``.
    ``beyond="compute"`` (default) evaluates the formula for positions ``>= n``.
    """

    _allowed_policies = ("compute", "error", "interpolate")

    def __init__(
        self,
        n: int,
        d: int,
        base: float = 10000.0,
        *,
        beyond: str = "compute",
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self._init_common(n, d, beyond)
        if not base > 1:
            raise PosgeomError(f"base must be > 1, got {base}")
        self.base = float(base)
        dt = dtype or torch.get_default_dtype()
        self.register_buffer("weight", sinusoidal_table(torch.arange(n), d, self.base).to(dt))

    def _limit(self) -> int:
        return math.inf if self.beyond == "compute" else self.n_positions  # type: ignore[return-value]

    def _rows(self, ids: Tensor) -> Tensor:
        if int(ids.max()) < self.n_positions:
            return nn.functional.embedding(ids, self.weight)
        return sinusoidal_table(ids, self.dim, self.base).to(self.weight.dtype)

    def config(self) -> dict[str, Any]:
        return {"n": self.n_positions, "d": self.dim, "base": self.base, "beyond": self.beyond}

    @classmethod
    def from_config(cls, cfg: dict[str, Any], dtype: torch.dtype | None = None):
        return cls(
            int(cfg["n"]), int(cfg["d"]), float(cfg["base"]), beyond=cfg["beyond"], dtype=dtype
        )


class LearnedPositionEmbedding(PositionEmbedding):
    """Learned absolute table as in BERT/GPT-2: ``nn.Embedding(n, d)``, init ``N(0, 0.02²)``.

    Reference: Hugging Face ``BertEmbeddings.position_embeddings`` with
    ``initializer_range=0.02``. ``forward(ids (..., L)) -> (..., L, d)``.
    """

    def __init__(
        self,
        n: int,
        d: int,
        *,
        beyond: str = "error",
        dtype: torch.dtype | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self._init_common(n, d, beyond)
        self.embedding = nn.Embedding(n, d, dtype=dtype)
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, 0.02, generator=generator)

    def _rows(self, ids: Tensor) -> Tensor:
        return self.embedding(ids)

    def config(self) -> dict[str, Any]:
        return {"n": self.n_positions, "d": self.dim, "beyond": self.beyond}

    @classmethod
    def from_config(cls, cfg: dict[str, Any], dtype: torch.dtype | None = None):
        return cls(int(cfg["n"]), int(cfg["d"]), beyond=cfg["beyond"], dtype=dtype)
