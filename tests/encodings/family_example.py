"""The worked example of docs/ARCHITECTURE.md ("Adding a positional family"): KERPLE-log.

KERPLE (Chi et al., 2022, "Kernelized relative positional embedding for length extrapolation"),
logarithmic variant: the bias ``-r1 log(1 + r2 |i - j|)`` (``r1, r2 > 0``) added to the attention
logits. Its geometry: the distance ``D_ij = r1 log(1 + r2 |i - j|)`` (a metric: ``log(1 + x)`` is
concave and vanishes at 0, so it is subadditive). In the package this file would be
``src/posgeom/encodings/kerple.py``; ``tests/encodings/test_families.py`` imports it in a fresh process and
runs the family checks on it, and ``tests/encodings/test_family_drop_in.py`` drops it into a copy of the
package and runs ``posgeom geometry``, ``compare`` and ``extend`` on it.

Its extension side (``posgeom extend kerple_log:r1=1,r2=1,max_position_embeddings=L0``): the bias
is defined at every distance, so its one strategy is ``none`` (the default); its lag kernel is the
bias magnitude at lag ``k``, ``v_k = r1 log(1 + r2 k)`` (``(m, 1)``), so the distance between
lags ``k`` and ``k'`` is ``|v_k - v_k'|``, compared with the corpus's lag geometry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import Interval
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags
from posgeom.encodings._registry import ComparisonContext, Family, register

_POSITIVE = Interval(Real, 0, math.inf, closed="neither")


def kerple_log(n_positions: int, r1: float = 1.0, r2: float = 1.0) -> PositionEncoding:
    """KERPLE-log geometry: ``D_ij = r1 log(1 + r2 |i - j|)``, ``(n, n)``, no vectors."""
    n = check_n(n_positions)
    if not (r1 > 0 and r2 > 0):
        raise PosgeomError(f"KERPLE needs r1 > 0 and r2 > 0, got r1={r1!r}, r2={r2!r}")
    gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(np.float64)
    return PositionEncoding("kerple_log", None, {"r1": r1, "r2": r2}, r1 * np.log1p(r2 * gap))


class KerpleLogExtension(Extension):
    """The extension side: the spec of ``posgeom extend`` and the lag kernel."""

    spec_keys = MappingProxyType({"r1": _POSITIVE, "r2": _POSITIVE})
    spec_example = "kerple_log:r1=1,r2=1"

    def extension_params(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {"r1": float(spec.get("r1", 1.0)), "r2": float(spec.get("r2", 1.0))}

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        k = check_lags(lags).astype(np.float64)
        return (params["r1"] * np.log1p(params["r2"] * k))[:, None]


@register
class KerpleLogFamily(Family):
    """KERPLE-log: a logarithmic distance bias; compared with r1 = r2 = 1."""

    name = "kerple_log"
    order = 45  # after t5 in listings and in the default comparison
    summary = "KERPLE logarithmic bias -r1 log(1 + r2 |i - j|) (Chi et al., 2022)"
    extension_type = KerpleLogExtension

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        return kerple_log(n_positions, **params)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        return kerple_log(ctx.n_positions)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        p = encoding.params
        return f"KERPLE-log distance r1 log(1 + r2 |i-j|), r1 = {p['r1']:g}, r2 = {p['r2']:g}"
