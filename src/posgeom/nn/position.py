"""Additive absolute position embeddings as torch modules, with one interface.

Every module here is a :class:`PositionEmbedding`:

- ``module(position_ids)`` with an integer tensor of shape ``(..., L)`` returns ``(..., L, d)``;
- ``module(seq_len)`` with a Python int returns ``(L, d)`` for positions ``0 … L-1``;
- ``module.table()`` returns the ``(n, d)`` rows of the known positions ``0 … n-1``;
- ``module.n_positions`` (n), ``module.dim`` (d), ``module.n_parameters`` (trainable scalars),
  ``module.beyond`` (the policy for positions ``>= n``).

Policies for positions ``>= n`` (``beyond=``):

- ``"error"``: raise :class:`~posgeom._errors.PosgeomError` naming ``n`` and the options.
- ``"interpolate"``: position interpolation (Chen et al. 2023): when the largest requested id
  ``p_max >= n``, every id ``p`` is mapped to ``t = p (n-1) / p_max`` and the embedding is the
  linear interpolation ``(1 - w) P[floor t] + w P[floor t + 1]`` with ``w = t - floor t``.
- ``"extend"`` (:class:`~posgeom.nn.tables.AbsolutePositionEmbedding` built by ``from_mds``):
  Gower's out-of-sample extension of the MDS embedding; positions ``n … n+m-1`` resolve to the
  rows :meth:`~posgeom.nn.tables.AbsolutePositionEmbedding.extend` appended.
- ``"compute"`` (:class:`SinusoidalPositionEmbedding` only): evaluate the formula.

Position math is done in float32 or better; tables are stored in ``dtype`` (default: torch's
default dtype).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from posgeom._errors import PosgeomError
from posgeom._validation import check_int
from posgeom.encodings.sinusoidal import sinusoidal_vectors

__all__ = [
    "LearnedPositionEmbedding",
    "PositionEmbedding",
    "SinusoidalPositionEmbedding",
    "sinusoidal_table",
]


def _as_tensor(x: Tensor | np.ndarray, dtype: torch.dtype | None, name: str) -> Tensor:
    if isinstance(x, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(x))
    elif isinstance(x, Tensor):
        t = x.detach().clone()
    else:
        raise PosgeomError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t.to(dtype or torch.get_default_dtype())


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
        check_int(n, "n (number of positions)", 1)
        check_int(d, "d (embedding width)", 1)
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

    #: the constructor's positional arguments after ``n`` and ``d``, as (attribute, type): what
    #: :meth:`config` records and :meth:`from_config` passes back (a subclass with more state
    #: overrides both)
    _config_args: tuple[tuple[str, type], ...] = ()

    def config(self) -> dict[str, Any]:
        """JSON-serialisable constructor arguments (used by :func:`posgeom.nn.io.save_module`):
        ``{"n", "d", *_config_args, "beyond"}``."""
        extra = {name: getattr(self, name) for name, _ in self._config_args}
        return {"n": self.n_positions, "d": self.dim, **extra, "beyond": self.beyond}

    @classmethod
    def from_config(cls, cfg: dict[str, Any], dtype: torch.dtype | None = None):
        """The module :meth:`config` describes (its weights are loaded separately)."""
        extra = (kind(cfg[name]) for name, kind in cls._config_args)
        return cls(int(cfg["n"]), int(cfg["d"]), *extra, beyond=cfg["beyond"], dtype=dtype)

    # -- shared ---------------------------------------------------------------------------
    @property
    def n_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def table(self) -> Tensor:
        """The ``(n, d)`` embedding of the known positions ``0 … n-1``."""
        return self._rows(torch.arange(self.n_positions, device=self._ref_tensor().device))

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
            ids = torch.arange(int(positions), device=self._ref_tensor().device)
        elif isinstance(positions, Tensor):
            dtype = positions.dtype
            if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
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
        """The module's first parameter, else its first buffer (its device and dtype)."""
        return next(itertools.chain(self.parameters(), self.buffers()))

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


def sinusoidal_table(positions: Tensor, d: int, base: float = 10000.0) -> Tensor:
    """Vaswani et al. (2017) sinusoids, interleaved, computed in float64.

    ``PE[p, 2i] = sin(p / base^{2i/d})``, ``PE[p, 2i+1] = cos(p / base^{2i/d})``; for odd ``d`` the
    last column is the sine of the last frequency. Shape ``(*positions.shape, d)``, float64. The
    formula is :func:`posgeom.encodings.sinusoidal.sinusoidal_vectors` (one implementation).
    """
    table = sinusoidal_vectors(positions.detach().cpu().numpy(), d, base)
    return torch.from_numpy(table).to(positions.device)


class SinusoidalPositionEmbedding(PositionEmbedding):
    """Fixed sinusoidal encoding (Vaswani et al. 2017), a non-trainable buffer of n rows.

    Convention: interleaved, ``PE[p, 2i] = sin(p ω_i)``, ``PE[p, 2i+1] = cos(p ω_i)``,
    ``ω_i = base^{-2i/d}`` (as in fairseq/tensor2tensor's interleaved form and Hugging Face
    DistilBERT's ``create_sinusoidal_embeddings``). Computed in float64, stored in ``dtype``.
    ``beyond="compute"`` (default) evaluates the formula for positions ``>= n``.
    """

    _allowed_policies = ("compute", "error", "interpolate")
    _config_args = (("base", float),)

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
