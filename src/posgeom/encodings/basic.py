"""Reference encodings: NoPE (no positional signal), seeded Gaussian, and encodings from files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.encodings._base import PositionEncoding, check_n, check_positive_int, symmetrize


def nope(n_positions: int, d: int = 768) -> PositionEncoding:
    """NoPE: every position gets the zero vector ``(n, d)``; all distances are zero."""
    n = check_n(n_positions)
    d = check_positive_int(d, "d")
    return PositionEncoding("nope", np.zeros((n, d)), {"d": d})


def random(n_positions: int, d: int = 768, seed: int = 0, scale: float = 1.0) -> PositionEncoding:
    """Gaussian vectors ``scale * numpy.random.default_rng(seed).standard_normal((n, d))``.

    Expected squared distance between two positions is ``2 d scale^2``; the order of positions plays
    no role, so the monotonicity violation rate of this encoding is about 50%.
    """
    n = check_n(n_positions)
    d = check_positive_int(d, "d")
    if not np.isfinite(scale) or scale <= 0:
        raise PosgeomError(f"scale must be a positive number, got {scale!r}")
    vectors = float(scale) * np.random.default_rng(seed).standard_normal((n, d))
    return PositionEncoding("random", vectors, {"d": d, "seed": seed, "scale": float(scale)})


def _read_array(path: Path, key: str | None) -> tuple[np.ndarray, str | None]:
    from posgeom._arrayfiles import read_array_file  # validated: damage is a PosgeomError

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


def _looks_like_distances(a: np.ndarray) -> bool:
    return (
        a.ndim == 2
        and a.shape[0] == a.shape[1]
        and a.shape[0] > 1
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
    as vectors;
    ``kind="vectors"``/``"distances"`` says so explicitly. Distances are symmetrised exactly
    (``(M + M^T)/2``, zero diagonal) after checking they are symmetric to ``1e-6``.

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
    if kind == "auto":
        kind = "distances" if _looks_like_distances(array) else "vectors"
    if kind == "distances":
        if (
            array.shape[0] != array.shape[1]
            or np.any(array < 0)
            or np.any(np.diag(array) != 0)
            or not np.allclose(array, array.T, rtol=1e-6, atol=1e-9)
        ):
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
