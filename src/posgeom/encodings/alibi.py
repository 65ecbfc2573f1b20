"""ALiBi (Press et al., 2022) as geometry.

ALiBi adds the bias ``-m_h |i - j|`` to the attention logits of head ``h``; it has no vectors. The
bias implies a one-dimensional (rank-1) geometry per head: position vector ``m_h * i`` (an
``(n, 1)`` column) and distance ``m_h |i - j|``, with the slopes of :func:`alibi_slopes` (for
``H = 12``: ``2^-1 .. 2^-8`` then ``2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5``).

``head=None`` stacks all heads as columns, vectors ``(n, H)`` with column ``h`` equal to ``m_h * i``
(Euclidean distance ``||m|| |i - j|``); ``head=h`` is one head; ``head="best"`` picks the head
with the lowest stress against ``target`` (see :meth:`ALiBiEncoding.best_head`).

Extension (``extend alibi:heads=12``): the bias is defined at every distance, so the one strategy
is ``none``; the lag kernel is the bias of each head, ``v_k = (m_h k)_h`` (:func:`alibi_lag_vectors`).
Parameters ``{"slopes": (H,)}``; the decoder's module is :class:`~posgeom.nn.alibi.ALiBiBias`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, check_int, is_integer
from posgeom.encodings import _hf
from posgeom.encodings._base import (
    MAX_HEADS,
    PositionEncoding,
    check_n,
)
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags
from posgeom.encodings._mechanism import Mechanism, MechanismParams, head_select
from posgeom.encodings._registry import ComparisonContext, Family, RowEncoding, TorchSpec, register

#: the posgeom torch module of the bias (trainer and decoder)
_TORCH_MODULE = "posgeom.nn.alibi:ALiBiBias"


def alibi_slopes(n_heads: int, *, style: str = "bloom", alibi_bias_max: float = 8.0) -> np.ndarray:
    """``(n_heads,)`` float64 ALiBi slopes ``m_h`` as the model family computes them.

    ``style="bloom"`` (Press et al.'s reference ``get_slopes``, BLOOM's ``build_alibi_tensor``,
    Falcon): with ``P = 2^floor(log2 H)``, ``m_h = 2^(-8h/P)`` for ``h = 1..P``; when ``H`` is not a
    power of two the remaining heads take the odd powers ``2^(-4k/P)``, ``k = 1, 3, 5, ...`` (every
    other slope of ``2P``). ``style="mpt"`` (``build_mpt_alibi_tensor``): with
    ``P = 2^ceil(log2 H)``, ``m_h = 2^(-h alibi_bias_max / P)`` for ``h = 1..P``; when ``P != H``
    the odd-indexed then the even-indexed slopes are kept, the first ``H`` of them.
    """
    h = check_int(n_heads, "ALiBi n_heads", 1)
    if style == "bloom":
        closest = 2 ** math.floor(math.log2(h))
        slopes = (2.0 ** (-8.0 / closest)) ** np.arange(1, closest + 1, dtype=np.float64)
        if closest != h:
            extra = (2.0 ** (-4.0 / closest)) ** np.arange(
                1, 2 * (h - closest), 2, dtype=np.float64
            )
            slopes = np.concatenate([slopes, extra])
        return slopes
    if style == "mpt":
        p = 2 ** math.ceil(math.log2(h))
        slopes = 1.0 / np.power(
            2.0, np.arange(1, p + 1, dtype=np.float64) * (float(alibi_bias_max) / p)
        )
        return np.concatenate([slopes[1::2], slopes[::2]])[:h] if p != h else slopes
    raise PosgeomError(f"unknown ALiBi style {style!r}; use 'bloom' or 'mpt'")


def alibi_lag_vectors(slopes: Any, lags: Any) -> np.ndarray:
    """``(m, H)`` lag kernel: ``m_h k`` per lag ``k`` and head ``h`` (the bias magnitude)."""
    return check_lags(lags).astype(np.float64)[:, None] * np.asarray(slopes, dtype=np.float64)[None]


@dataclass(frozen=True, eq=False)
class ALiBiEncoding(PositionEncoding):
    """ALiBi geometry; ``slopes`` holds all ``H`` slopes, ``head`` the chosen head or ``None``."""

    slopes: tuple[float, ...] = ()
    head: int | None = None

    def per_head(self) -> list[ALiBiEncoding]:
        """One rank-1 encoding per head, in head order."""
        return [alibi(self.n_positions, len(self.slopes), head=h) for h in range(len(self.slopes))]

    def head_stresses(self, target: Any, *, kind: str = "paper") -> np.ndarray:
        """``(H,)`` stress of every head against ``target`` (``posgeom.scores.stress.stress``)."""
        from posgeom.scores.stress import stress

        return np.array([stress(enc, target, kind=kind) for enc in self.per_head()])

    def best_head(self, target: Any, *, kind: str = "paper") -> ALiBiEncoding:
        """The single-head encoding with the lowest stress against ``target`` (first on ties)."""
        return self.per_head()[int(np.argmin(self.head_stresses(target, kind=kind)))]


def alibi(
    n_positions: int,
    n_heads: int = 12,
    head: int | str | None = None,
    *,
    target: Any = None,
    kind: str = "paper",
) -> ALiBiEncoding:
    """ALiBi geometry: vectors ``m_h * i`` (see the module docstring).

    ``head``: ``None`` (all heads as columns), an index ``0 .. H-1``, or ``"best"`` (needs
    ``target``, an ``(n, n)`` distance matrix such as the Hellinger matrix; ``kind``: the stress).
    """
    n = check_n(n_positions)
    slopes = alibi_slopes(n_heads)
    if isinstance(head, str):
        if head != "best":
            raise PosgeomError(f"ALiBi head must be None, an integer or 'best', got {head!r}")
        if target is None:
            raise PosgeomError(
                "ALiBi head='best' needs target=<(n, n) distance matrix> to score heads"
            )
        return alibi(n, n_heads).best_head(target, kind=kind)
    pos = np.arange(n, dtype=np.float64)[:, None]
    if head is None:
        vectors, params = pos * slopes[None, :], {"n_heads": int(n_heads), "head": None}
    else:
        if not is_integer(head) or not 0 <= head < len(slopes):
            raise PosgeomError(f"ALiBi head must be in 0 .. {len(slopes) - 1}, got {head!r}")
        head = int(head)
        vectors = pos * slopes[head]
        params = {"n_heads": int(n_heads), "head": head, "slope": float(slopes[head])}
    scale = float(np.linalg.norm(vectors[1])) if n > 1 else 0.0  # ||m|| or m_h
    return ALiBiEncoding(
        "alibi",
        vectors,
        params,
        lag_profile=scale * pos[:, 0],  # D_ij = ||m|| |i - j|, never an (n, n) matrix
        slopes=tuple(float(s) for s in slopes),
        head=head,
    )


# ------------------------------------------------------------------------------ mechanism
@dataclass(frozen=True, eq=False)
class ALiBiParams(MechanismParams):
    """A model's ALiBi: ``slopes`` ``(num_heads,)`` (bias ``-m_h |i - j|``), ``alibi_style``
    (``"bloom"``: Press et al.'s reference, also Falcon; ``"mpt"``) and ``num_heads``."""

    key = "alibi"
    _arrays = ("slopes",)
    representation = "distances"

    slopes: np.ndarray
    alibi_style: str = "bloom"
    num_heads: int = 0

    def summary(self) -> str:
        return f"ALiBi ({self.alibi_style}) {self.num_heads} heads"

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Distances ``D_ij = m_h |i - j|`` per head: ``(H, n, n)``, or ``(n, n)`` for ``head``."""
        gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(np.float64)
        return head_select(self.slopes[:, None, None] * gap[None], head)

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        """All heads as columns ``m_h i`` (``""``) and one head per key ``"_h<h>"``."""
        column = np.arange(start, start + n, dtype=np.float64)[:, None]
        params = dict(params, alibi_style=self.alibi_style, n_heads=self.num_heads, head=None)
        out = {"": PositionEncoding("alibi", column * self.slopes[None, :], params)}
        for h, slope in enumerate(self.slopes):
            out[f"_h{h}"] = PositionEncoding(
                "alibi", column * float(slope), {**params, "head": h, "slope": float(slope)}
            )
        return out


def _attn_config(config: Any, key: str) -> Any:
    attn = getattr(config, "attn_config", None)
    return attn.get(key) if isinstance(attn, Mapping) else getattr(attn, key, None)


def _alibi_style(model: Any, config: Any) -> tuple[str | None, str, float]:
    """``(style, source, alibi_bias_max)`` from the configuration, else from the model's
    ``build_alibi_tensor`` / ``build_mpt_alibi_tensor`` methods; style ``None``: no ALiBi."""
    if _attn_config(config, "alibi"):
        bias_max = _attn_config(config, "alibi_bias_max")
        return "mpt", "config.attn_config.alibi", 8.0 if bias_max is None else float(bias_max)
    if getattr(config, "alibi", None) is True:
        return "bloom", "config.alibi", 8.0
    if getattr(config, "position_embedding_type", None) == "alibi":
        return "bloom", "config.position_embedding_type", 8.0
    for name, module in model.named_modules():
        for style, method in (("mpt", "build_mpt_alibi_tensor"), ("bloom", "build_alibi_tensor")):
            if callable(getattr(type(module), method, None)):
                return style, f"{name or type(module).__name__}.{method}", 8.0
    return None, "", 8.0


# ------------------------------------------------------------------------------ extension
class ALiBiExtension(Extension):
    """ALiBi's extension side (module docstring): the spec ``heads``, parameters ``{"slopes":
    (H,)}``, the one strategy ``none``, the lag kernel of every head's bias."""

    spec_keys = MappingProxyType({"heads": Interval(Integral, 1, MAX_HEADS)})
    spec_example = "alibi:heads=12"

    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {"slopes": alibi_slopes(int(spec.get("heads", 12)))}

    def check_extension_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        slopes = np.asarray(params.get("slopes"), dtype=np.float64)
        if slopes.ndim != 1 or not slopes.size:
            raise PosgeomError(f"ALiBi needs a 1-D array of slopes, got shape {slopes.shape}")
        return {**params, "slopes": slopes}

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
        return {"slopes": np.asarray(mechanism.params.slopes)}

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        return {"slopes": module.slopes.double().numpy()}

    def extension_summary(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"slopes": [float(s) for s in params["slopes"]]}

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        return alibi_lag_vectors(params["slopes"], lags)

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        return self.torch_object(_TORCH_MODULE)(config.n_heads)


# ------------------------------------------------------------------------------ family
@register
class ALiBiFamily(Family):
    """ALiBi: rank-1 geometry per head; compared by its best head (every head reported)."""

    name = "alibi"
    order = 30
    summary = "attention with linear biases (Press et al.), per-head rank-1 geometry"
    mechanism_kind = "alibi"
    mechanism_params = ALiBiParams
    looks_for = (
        "ALiBi via config.alibi, config.attn_config.alibi, position_embedding_type='alibi' or a "
        "build_alibi_tensor / build_mpt_alibi_tensor method"
    )
    detect_order = 30
    excludes = ("rotary",)
    torch_class = _TORCH_MODULE
    extension_type = ALiBiExtension
    build = staticmethod(alibi)
    row_choice = "paper"  # the row is the head of lowest paper stress

    def default_encoding(self, ctx: ComparisonContext) -> ALiBiEncoding:
        """All ``n_heads`` heads as columns (the comparison row is the best single head)."""
        return alibi(ctx.n_positions, ctx.n_heads)

    def encodings(self, ctx: ComparisonContext) -> dict[str, RowEncoding]:
        """One encoding per head (``alibi/h<h>``, distance ``m_h |i - j|``); the row is the head
        of lowest paper stress (:attr:`row_choice`), each head in the per-head table."""
        slopes = alibi_slopes(ctx.n_heads)
        return {
            f"{self.name}/h{h}": RowEncoding(
                alibi(ctx.n_positions, ctx.n_heads, head=h),
                f"ALiBi best of {ctx.n_heads} heads: head {h}, m = {slopes[h]:.4g} "
                "(distance m|i-j|)",
                head={"head": h, "slope": float(slopes[h])},
            )
            for h in range(ctx.n_heads)
        }

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        style, source, bias_max = _alibi_style(model, config)
        if style is None:
            return []
        heads = _hf.num_heads(config)
        if heads is None:
            raise PosgeomError(
                "the model uses ALiBi but its configuration has no head count "
                "(num_attention_heads / n_head / n_heads)"
            )
        slopes = alibi_slopes(heads, style=style, alibi_bias_max=bias_max)
        return [Mechanism("alibi", source, ALiBiParams(slopes, style, heads))]

    def module_geometry(self, module: Any, spec: TorchSpec, target: Any = None) -> ALiBiEncoding:
        """The head of lowest paper stress against ``target`` (the slopes are not trained)."""
        return alibi(spec.n, module.n_heads, head="best", target=target)

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        return {"n_heads": spec.n_heads, "head": 0}

    def torch_module(self, spec: TorchSpec) -> Any:
        return self.torch_class_object()(spec.n_heads)
