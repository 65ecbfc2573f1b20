"""T5 relative position buckets (Raffel et al., 2020) as geometry.

T5 adds a learned bias ``b_h(bucket(j - i))`` to the logits of head ``h``; it has no vectors. The
bucket rule and a model's bias tables: :mod:`posgeom.encodings.t5_mechanism`
(:func:`~posgeom.encodings.t5_mechanism.t5_relative_position_bucket`).

Distance (posgeom's choice, the paper leaves it open):

- ``bias=None``: the bucket-index distance ``d_ij = bucket(-|i - j|)``, the index of ``|i-j|``
  within one direction's buckets (``|i - j|`` below ``max_exact``, logarithmic above, constant
  beyond ``max_distance``). Symmetric with a zero diagonal (not always a metric).
- ``bias`` given (a ``(num_buckets, n_heads)`` table such as ``relative_attention_bias.weight``):
  ``d_ij = mean_h (|b_h(0) - b_h(j-i)| + |b_h(0) - b_h(i-j)|) / 2``, how far the bias at offset
  ``j - i`` is from the bias at offset 0 (``b_h(0)``: the bias of offset 0's bucket).

Extension (``extend t5:num_buckets=32,max_distance=128``, :class:`T5Extension`): every distance has
a bucket, so the one strategy is ``none``; the lag kernel is the bias row of ``bucket(-k)`` (a
causal query looking ``k`` back), or the bucket index without a table (:func:`t5_lag_vectors`);
the decoder's module is a unidirectional :class:`~posgeom.nn.relative.T5RelativeBias`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval, check_int
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags
from posgeom.encodings._mechanism import Mechanism
from posgeom.encodings._registry import ComparisonContext, Family, TorchSpec, register
from posgeom.encodings.t5_mechanism import (
    RELATIVE_BIAS_NAMES,
    BucketParams,
    detect_buckets,
    t5_relative_position_bucket,
)

_TORCH_MODULE = "posgeom.nn.relative:T5RelativeBias"  # the trainer's and the decoder's bias
_BUCKET_KEYS = ("num_buckets", "max_distance", "bidirectional")


def t5_lag_vectors(
    lags: Any,
    *,
    bias: Any = None,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = False,
) -> np.ndarray:
    """``(m, H)`` bias rows of ``bucket(-k)`` (``bias``: ``(num_buckets, H)``), or ``(m, 1)``
    bucket indices without a table."""
    buckets = t5_relative_position_bucket(
        -check_lags(lags),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    if bias is None:
        return buckets.astype(np.float64)[:, None]
    table = np.asarray(bias, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != num_buckets:
        raise PosgeomError(f"bias must be (num_buckets={num_buckets}, H), got {table.shape}")
    return table[buckets]


@dataclass(frozen=True, eq=False)
class T5Encoding(PositionEncoding):
    """T5 bucket geometry; ``bucket(r)``: the bucket of relative positions ``r = j - i``."""

    def bucket(self, relative_position: np.ndarray) -> np.ndarray:
        opts = {k: self.params[k] for k in _BUCKET_KEYS}
        return t5_relative_position_bucket(relative_position, **opts)


def _as_table(bias: Any) -> np.ndarray:
    bias = getattr(bias, "weight", bias)
    if hasattr(bias, "detach"):
        bias = bias.detach().cpu().double().numpy()
    table = np.asarray(bias, dtype=np.float64)
    if table.ndim == 1:
        table = table[:, None]
    return table


def t5(
    n_positions: int,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = True,
    bias: Any = None,
) -> T5Encoding:
    """T5 relative-bucket geometry (no vectors); see the module docstring for the distance."""
    n = check_n(n_positions)
    num_buckets = check_int(num_buckets, "num_buckets", 4 if bidirectional else 2)
    max_distance = check_int(max_distance, "max_distance", 1)
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    if max_distance <= max_exact:
        raise PosgeomError(
            f"max_distance must exceed the exact-bucket range {max_exact}, got {max_distance}"
        )
    lag = np.arange(n)  # D_ij = f(|i - j|): the profile, never an (n, n) matrix
    kw = {
        "bidirectional": bool(bidirectional),
        "num_buckets": num_buckets,
        "max_distance": max_distance,
    }
    params: dict[str, Any] = dict(kw, bias=None)
    if bias is None:
        profile = t5_relative_position_bucket(-lag, **kw).astype(np.float64)
    else:
        table = _as_table(bias)
        if table.ndim != 2 or table.shape[0] != num_buckets or not np.all(np.isfinite(table)):
            raise PosgeomError(
                f"T5 bias must be a finite ({num_buckets}, n_heads) table, got shape {table.shape}"
            )
        b0 = table[t5_relative_position_bucket(np.array(0), **kw)]  # (n_heads,)

        def fwd(rel: np.ndarray) -> np.ndarray:  # mean |bias(j - i) - bias(0)| over heads
            return np.abs(table[t5_relative_position_bucket(rel, **kw)] - b0).mean(axis=-1)

        profile = 0.5 * (fwd(lag) + fwd(-lag))  # symmetrised: the mean of both directions
        params["bias"] = f"table{tuple(table.shape)}"
    profile[0] = 0.0
    return T5Encoding("t5", None, params, lag_profile=profile)


# ------------------------------------------------------------------------------ extension
def _bucket_params(source: Any, bias: Any) -> dict[str, Any]:
    """The extension's parameters of a bucket mechanism or decoder module with its bias table."""
    return {**{k: getattr(source, k) for k in _BUCKET_KEYS}, "bias": bias}


class T5Extension(Extension):
    """T5's extension side (module docstring): every distance has a bucket, one strategy."""

    spec_keys = MappingProxyType(
        {"num_buckets": Interval(Integral, 2, None), "max_distance": Interval(Integral, 1, None)}
    )
    spec_example = "t5:num_buckets=32,max_distance=128"

    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        params = {
            "num_buckets": int(spec.get("num_buckets", 32)),
            "max_distance": int(spec.get("max_distance", 128)),
        }
        t5(3, **params)  # the family's own rule on the buckets (one home)
        return params

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
        p = mechanism.params
        return _bucket_params(p, np.asarray(p.bias_table, dtype=np.float64))

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        return _bucket_params(module, module.bias.weight.detach().double().numpy())

    def extension_summary(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k != "bias"}

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        opts = {k: params[k] for k in _BUCKET_KEYS if k in params}
        return t5_lag_vectors(lags, bias=params.get("bias"), **opts)

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        return self.torch_object(_TORCH_MODULE)(
            config.n_heads,
            num_buckets=config.t5_num_buckets,
            max_distance=config.t5_max_distance,
            bidirectional=False,
            generator=generator,
        )


# ------------------------------------------------------------------------------ family
@register
class T5Family(Family):
    """T5 relative buckets: bucket-index geometry; ``relative_attention_bias`` tables."""

    name = "t5"
    order = 40
    summary = "T5 relative position buckets (Raffel et al.), bucket-index or bias distances"
    mechanism_kind = "relative_buckets"
    mechanism_params = BucketParams
    torch_class = _TORCH_MODULE
    extension_type = T5Extension
    trained_by_default = True
    looks_for = "relative buckets as nn.Embedding named " + ", ".join(RELATIVE_BIAS_NAMES)
    detect_order = 40

    def torch_module(self, spec: TorchSpec) -> Any:
        """A learned T5 bucket bias of ``n_heads`` heads (32 buckets, distance 128)."""
        import torch

        gen = None if spec.seed is None else torch.Generator().manual_seed(spec.seed)
        return self.torch_class_object()(spec.n_heads, generator=gen)

    def module_geometry(self, module: Any, spec: TorchSpec, target: Any = None) -> T5Encoding:
        """The bias-difference geometry of the module's learned table (see the module docstring)."""
        return t5(spec.n, **_bucket_params(module, module.bias.weight))

    build = staticmethod(t5)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        return t5(ctx.n_positions)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        p = encoding.params
        return (
            f"T5 bucket-index distance ({p['num_buckets']} buckets, max distance "
            f"{p['max_distance']})"
        )

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        """Tables named in :data:`RELATIVE_BIAS_NAMES` (:func:`detect_buckets`)."""
        return detect_buckets(model, config)
