"""Sinusoidal encoding (Vaswani et al., 2017): the formula, its geometry and its family.

Extension (``extend sinusoidal:d=128,base=10000``): the formula is evaluated at every position, so
the one strategy is ``none``; its lag kernel is the learned-table kernel of the formula's table
at the target length, ``v_k = mean_{i < L-k} PE_i * PE_{i+k}``. Parameters ``{"d", "base"}``; the
decoder's module is :class:`~posgeom.nn.position.SinusoidalPositionEmbedding` (base
``sinusoidal_base``, computed at any position).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval
from posgeom.encodings._base import (
    PositionEncoding,
    check_base,
    check_even,
    check_n,
    vector_lag_profile,
)
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy
from posgeom.encodings._mechanism import Mechanism
from posgeom.encodings._registry import ComparisonContext, Family, TorchSpec, register
from posgeom.encodings.learned import LEARNED_NAMES
from posgeom.encodings.learned_extension import learned_lag_vectors
from posgeom.encodings.sinusoidal_mechanism import SinusoidalParams, detect_sinusoids, refusal

_TORCH_MODULE = "posgeom.nn.position:SinusoidalPositionEmbedding"  # trainer and decoder


def sinusoidal_vectors(positions: Any, d: int, base: float = 10000.0) -> np.ndarray:
    """``(*positions.shape, d)`` float64: ``PE[p, 2k] = sin(p omega_k)``, ``PE[p, 2k+1] =
    cos(p omega_k)`` (interleaved), ``omega_k = base^(-2k/d)``; for odd ``d`` the last column
    is the sine of the last frequency. The one implementation of the formula (``posgeom.nn``
    uses it too)."""
    pos = np.asarray(positions, dtype=np.float64)
    d, base = int(d), float(base)
    angles = pos[..., None] * base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    out = np.empty((*pos.shape, d))
    out[..., 0::2] = np.sin(angles)
    out[..., 1::2] = np.cos(angles[..., : d // 2])
    return out


def sinusoidal(n_positions: int, d: int = 768, base: float = 10000.0) -> PositionEncoding:
    """Vaswani sinusoidal vectors, interleaved layout, Euclidean distances.

    ``PE[i, 2k] = sin(i omega_k)``, ``PE[i, 2k+1] = cos(i omega_k)``, ``omega_k = base^(-2k/d)``,
    positions ``i = 0 .. n-1``. Every vector has norm ``sqrt(d/2)`` and
    ``||PE_i - PE_j||^2 = sum_k (2 - 2 cos((i-j) omega_k))`` depends only on ``|i - j|``.

    Returns a :class:`PositionEncoding` with ``vectors`` of shape ``(n, d)``.
    Raises :class:`PosgeomError` for ``n < 1``, odd ``d`` or ``d < 2``, and ``base <= 1``.
    """
    n = check_n(n_positions)
    d = check_even(d, "sinusoidal width d")
    base = check_base(base)
    vec = sinusoidal_vectors(np.arange(n), d, base)
    return PositionEncoding(
        "sinusoidal", vec, {"d": d, "base": base}, lag_profile=vector_lag_profile(vec)
    )


class SinusoidalExtension(Extension):
    """The sinusoids' extension side (module docstring): evaluated at every position."""

    spec_keys = MappingProxyType(
        {
            "d": Interval(Integral, 2, None),
            "base": Interval(Real, 1, math.inf, closed="neither"),
        }
    )
    spec_example = "sinusoidal:d=128,base=10000"

    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {"d": int(spec.get("d", 128)), "base": float(spec.get("base", 10000.0))}

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
        """``{"d", "base"}`` of a detected sinusoid with Vaswani's frequencies (one line
        otherwise)."""
        base = mechanism.params.standard_base()
        if base is None:
            raise PosgeomError(refusal(mechanism.params))
        return {"d": 2 * int(mechanism.params.inv_freq.shape[0]), "base": base}

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        return {"d": int(module.dim), "base": float(module.base)}

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        table = sinusoidal_vectors(np.arange(ctx.target_length), params["d"], params["base"])
        return learned_lag_vectors(table, lags)

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        return self.torch_object(_TORCH_MODULE)(
            config.trained_length, config.d_model, config.sinusoidal_base
        )

    def decoder_weights_at_least(self, config: Any) -> int:
        return int(config.trained_length) * int(config.d_model)  # its table, a buffer


@register
class SinusoidalFamily(Family):
    """Vaswani sinusoids: geometry, comparison row, fixed table in the trainer."""

    name = "sinusoidal"
    order = 10
    summary = "fixed sinusoids (Vaswani et al.), interleaved sin/cos"
    torch_class = _TORCH_MODULE
    extension_type = SinusoidalExtension
    mechanism_kind = "sinusoidal"
    mechanism_params = SinusoidalParams
    looks_for = (
        "sinusoids computed in the forward pass (position modules named "
        + ", ".join((*LEARNED_NAMES, "encode_positions"))
        + " without a table; relative_positional_encoding methods)"
    )
    detect_order = 15

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        """See :mod:`posgeom.encodings.sinusoidal_mechanism`."""
        return detect_sinusoids(model, config, (*LEARNED_NAMES, "encode_positions"))

    build = staticmethod(sinusoidal)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        return sinusoidal(ctx.n_positions, d=ctx.model_dim)

    def model_reference(self, n_positions: int, width: int, seed: int) -> PositionEncoding:
        """The standard formula at the model's width (rounded up to even)."""
        return sinusoidal(n_positions, d=width + width % 2)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        return f"Vaswani, d={encoding.dim}, base {encoding.params['base']:g}, norm sqrt(d/2)"

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        return {"d": spec.d}

    def torch_module(self, spec: TorchSpec) -> Any:
        return self.torch_class_object()(spec.n, spec.d, beyond="error")
