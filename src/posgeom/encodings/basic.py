"""Reference encodings: NoPE (no positional signal), seeded Gaussian, and encodings from files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom._validation import check_scale
from posgeom.encodings._base import PositionEncoding, check_n, check_width, symmetrize
from posgeom.encodings._extension import Extension, ExtensionContext, Strategy, check_lags
from posgeom.encodings._mechanism import Mechanism, MechanismParams
from posgeom.encodings._registry import ComparisonContext, Family, TorchSpec, register


def nope(n_positions: int, d: int = 768) -> PositionEncoding:
    """NoPE: every position gets the zero vector ``(n, d)``; all distances are zero."""
    n = check_n(n_positions)
    d = check_width(d)
    return PositionEncoding("nope", np.zeros((n, d)), {"d": d}, lag_profile=np.zeros(n))


def random(n_positions: int, d: int = 768, seed: int = 0, scale: float = 1.0) -> PositionEncoding:
    """Gaussian vectors ``scale * numpy.random.default_rng(seed).standard_normal((n, d))``.

    Expected squared distance between two positions is ``2 d scale^2``; the order of positions plays
    no role, so the monotonicity violation rate of this encoding is about 50%.
    """
    n = check_n(n_positions)
    d = check_width(d)
    if not np.isfinite(scale) or scale <= 0:
        raise PosgeomError(f"scale must be a positive number, got {scale!r}")
    vectors = float(scale) * np.random.default_rng(seed).standard_normal((n, d))
    return PositionEncoding("random", vectors, {"d": d, "seed": seed, "scale": float(scale)})


def _read_array(path: Path, key: str | None) -> tuple[np.ndarray, str | None]:
    from posgeom.io._arrayfiles import read_array_file  # validated: damage is a PosgeomError

    arrays = read_array_file(path)
    if path.suffix.lower() == ".npy":
        return arrays[""], None
    if key is None:
        preferred = [k for k in ("vectors", "distances") if k in arrays]
        if len(arrays) == 1:
            key = next(iter(arrays))
        elif len(preferred) == 1:
            key = preferred[0]
        else:
            raise PosgeomError(f"{path} holds several arrays {sorted(arrays)}; pass key=<name>")
    if key not in arrays:
        raise PosgeomError(f"{path} has no array {key!r}; it holds {sorted(arrays)}")
    return np.asarray(arrays[key]), key


def _is_distances(a: np.ndarray) -> bool:
    """Whether the 2-D ``a`` is square, non-negative, symmetric to ``1e-6`` with a zero diagonal."""
    return (
        a.shape[0] == a.shape[1]
        and np.all(np.diag(a) == 0)
        and np.all(a >= 0)
        and np.allclose(a, a.T, rtol=1e-6, atol=1e-9)
    )


def from_file(
    path: str | os.PathLike,
    n_positions: int | None = None,
    *,
    kind: str = "auto",
    key: str | None = None,
) -> PositionEncoding:
    """Load position vectors ``(n, d)`` or a distance matrix ``(n, n)`` from a file.

    Files: ``.npy`` and ``.npz`` (``allow_pickle=False``) or ``.safetensors`` (one tensor, or the
    one named ``key``, or the only one of ``vectors``/``distances``). ``kind="auto"`` reads a
    square, non-negative, symmetric matrix with a zero diagonal as distances, any other 2-D array
    as vectors; ``kind="vectors"``/``"distances"`` says so explicitly. Distances are symmetrised
    exactly (``(M + M^T)/2``, zero diagonal) after checking they are symmetric to ``1e-6``.

    ``n_positions``: when given, the file must hold at least that many positions and only the
    first ``n_positions`` are kept (leading rows, or the leading block of a distance matrix).
    Non-finite values, wrong shapes and too few positions raise :class:`PosgeomError`.
    """
    path = Path(path)
    if not path.is_file():
        raise PosgeomError(f"encoding file {path} does not exist")
    if kind not in ("auto", "vectors", "distances"):
        raise PosgeomError(f"kind must be 'auto', 'vectors' or 'distances', got {kind!r}")
    array, key = _read_array(path, key)
    if array.dtype.kind not in "fiu":
        raise PosgeomError(f"{path}: expected a numeric array, got dtype {array.dtype}")
    array = array.astype(np.float64)
    rows = int(array.shape[0]) if array.ndim else 0
    if array.ndim != 2 or array.size == 0:
        raise PosgeomError(
            f"{path}: expected a 2-D array (n, d) or (n, n), got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise PosgeomError(
            f"{path}: the array contains NaN or Inf values; fix or drop those positions"
        )
    check_scale(
        array,
        str(path),
        fix="rescale the file (stress-1 and scale-optimal stress do not depend on the scale)",
    )
    if kind == "auto":
        kind = "distances" if array.shape[0] > 1 and _is_distances(array) else "vectors"
    elif kind == "distances" and not _is_distances(array):
        raise PosgeomError(
            f"{path}: a distance matrix must be square, non-negative, symmetric "
            "with a zero diagonal; pass kind='vectors' for position vectors"
        )
    if n_positions is not None:
        n = check_n(n_positions)
        if array.shape[0] < n:
            raise PosgeomError(f"{path} holds {array.shape[0]} positions but n_positions={n}")
        array = array[:n, :n] if kind == "distances" else array[:n]
    params: dict[str, Any] = {"path": str(path), "kind": kind, "key": key, "rows": rows}
    if kind == "distances":
        return PositionEncoding("from_file", None, params, symmetrize(array))
    return PositionEncoding("from_file", array, params)


class NoneParams(MechanismParams):
    """No positional mechanism: every position at the same point."""

    key = "nope"

    def summary(self) -> str:
        return "no positional mechanism"

    def to_encoding(self, n: int, *, head: int | None = None) -> np.ndarray:
        """Vectors ``(n, 1)`` of zeros."""
        return np.zeros((n, 1), dtype=np.float64)

    def encodings(self, n: int, *, start: int, params: dict[str, Any]) -> dict[str, Any]:
        return {"": PositionEncoding("nope", np.zeros((n, 1)), params)}


class NoPEExtension(Extension):
    """NoPE's extension side: a spec without keys, the lag kernel of no position information,
    no decoder position module."""

    spec_keys = MappingProxyType({})  # ``extend nope``: no parameters
    spec_example = "nope"

    def extension_from_mechanism(self, mechanism: Any) -> dict[str, Any]:
        return {}

    def extension_from_decoder(self, module: Any) -> dict[str, Any]:
        return {}

    def lag_vectors(
        self, params: Mapping[str, Any], strategy: Strategy, lags: Any, ctx: ExtensionContext
    ) -> np.ndarray:
        """``(m, 1)`` zeros: no position information, every lag alike."""
        return np.zeros((check_lags(lags).size, 1))

    def decoder_module(self, config: Any, generator: Any = None) -> Any:
        return None  # no position module


@register
class NoPEFamily(Family):
    """NoPE: no positional signal (paper stress exactly 1); no torch module."""

    name = "nope"
    order = 50
    summary = "no positional encoding: all positions equal"
    role = "baseline"
    mechanism_kind = "none"
    mechanism_params = NoneParams
    detect_order = 1000
    extension_type = NoPEExtension
    build = staticmethod(nope)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        return nope(ctx.n_positions, d=ctx.model_dim)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        return "all positions equal"

    def none_mechanism(self) -> Mechanism:
        """What a model without a detected mechanism reports (``on_missing="none"``)."""
        return Mechanism("none", "nothing found", NoneParams())

    def torch_module(self, spec: TorchSpec) -> Any:
        return None

    def module_geometry(self, module: Any, spec: TorchSpec, target: Any = None) -> PositionEncoding:
        """All distances 0: separation 0, paper and scale-optimal stress 1."""
        return nope(spec.n, spec.d)


@register
class RandomFamily(Family):
    """Seeded Gaussian vectors: the order-free baseline; a fixed random table when trained."""

    name = "random"
    order = 60
    summary = "seeded Gaussian vectors (no order information)"
    role = "baseline"
    torch_class = "posgeom.nn.tables:AbsolutePositionEmbedding"
    build = staticmethod(random)

    def default_encoding(self, ctx: ComparisonContext) -> PositionEncoding:
        return random(ctx.n_positions, d=ctx.model_dim, seed=ctx.seed)

    def model_reference(self, n_positions: int, width: int, seed: int) -> PositionEncoding:
        """The order-free baseline at the model's width."""
        return random(n_positions, d=width, seed=seed)

    def describe(self, ctx: ComparisonContext, encoding: PositionEncoding) -> str:
        return f"Gaussian N(0, 1) vectors, d={encoding.dim}, seed {encoding.params['seed']}"

    def parameter_count(self, ctx: ComparisonContext, encoding: PositionEncoding) -> int:
        return ctx.n_kept * int(encoding.dim or 0)

    def torch_build_params(self, spec: TorchSpec) -> dict[str, Any]:
        seed = 0 if spec.seed is None else spec.seed
        return {"d": spec.d, "seed": seed, "scale": spec.random_scale}

    def torch_module(self, spec: TorchSpec) -> Any:
        import torch

        table = random(spec.n, **self.torch_build_params(spec)).vectors
        return self.torch_class_object()(np.array(table), trainable=False, dtype=torch.float32)


@register
class FromFileFamily(Family):
    """Vectors or distances read from a file (``path=``); not part of the default comparison."""

    name = "from_file"
    order = 120
    summary = "position vectors or a distance matrix from .npy / .npz / .safetensors"
    requires = ("path",)
    in_comparison = False

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        path = params.pop("path", None)
        if path is None:
            raise PosgeomError("from_file needs path=<.npy, .npz or .safetensors file>")
        return from_file(path, n_positions, **params)
