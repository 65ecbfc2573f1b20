"""Positions over an image or video grid, or of keypoint coordinates, that the sequence readers
do not take (kind ``spatial_positions``): posgeom names them instead of calling the model
"none", and every command that needs a geometry of token positions refuses them in one line
(:func:`refusal`). The ``form`` of each is read from the modules, never from the model's name:

``learned 2-D grid``
    a parameter named as a position table (:data:`~posgeom.encodings.learned.LEARNED_NAMES`)
    with three axes after its leading ones (SAM's ``pos_embed`` ``(1, H, W, d)``, Hiera's
    ``(1, d, h, w)``); which axis is the width is not read from the shape (a tiny SAM has
    ``H = W = d``), so no table of sequence positions is made from it.
``rotary over grid axes``
    an attention with ``apply_rotary_embeddings`` and no frequency buffer whose
    ``get_position_ids``, called on ``(1, P, 1)``, answers one index tensor per axis (V-JEPA 2).
``2-D sine``
    a module whose forward takes a feature map's ``height`` and ``width`` (with its
    ``temperature`` and ``embed_dim``: D-FINE, RT-DETR's encoder) and answers 6 rows of
    ``embed_dim`` for a ``2 x 3`` grid.
``rotary of keypoint coordinates``
    a module with a ``nn.Linear`` of 2 or 3 inputs whose forward, called on coordinates
    ``(1, P, k)``, answers ``(cos, sin)`` of the projection (LightGlue).
``Fourier features of coordinates``
    a matrix named as a position table that projects coordinates
    (:func:`~posgeom.encodings.value_sinusoid.projects_coordinates`: SAM's prompt encoder).

As a family it builds the one geometry a grid defines alone: positions in raster order on a
grid of ``grid_width`` columns, vectors ``(row, column)``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._validation import check_int, is_integer
from posgeom.encodings import _hf
from posgeom.encodings._base import PositionEncoding, check_n
from posgeom.encodings._extension import refusing_extension
from posgeom.encodings._mechanism import Mechanism, RefusingParams
from posgeom.encodings._registry import Family, register
from posgeom.encodings.value_sinusoid import projects_coordinates

__all__ = ["SpatialPositionParams", "refusal"]


def refusal(what: str) -> str:
    """The one line a command prints when it cannot use these positions (``what``: the use)."""
    return (
        f"{what}: the model's positions are spatial (kind 'spatial_positions': a 2-D or 3-D "
        "grid of patches, or keypoint coordinates), not an order of tokens, and posgeom has no "
        "geometry of token positions for them; extract lists them"
    )


@dataclass(frozen=True, eq=False)
class SpatialPositionParams(RefusingParams):
    """``form`` (module docstring), ``axes`` (grid axes or coordinates), ``width`` (features
    per position; rotary: the projection's outputs), ``base`` (a sine's temperature, else 0),
    ``shape`` (a learned grid's parameter shape, else ``()``)."""

    key = "spatial_positions"
    refusal = staticmethod(refusal)

    form: str = ""
    axes: int = 2
    width: int = 0
    base: float = 0.0
    shape: tuple[int, ...] = ()

    @property
    def scope(self) -> str:
        """Where it acts: a learned grid is added to the patch grid before the first block
        (``"input"``); the others act in the blocks that hold or use them (``""``: placed by
        the layer map)."""
        return "input" if self.form == "learned 2-D grid" else ""

    def summary(self) -> str:
        extra = f", width {self.width}" if self.width else ""
        extra += f", shape {tuple(self.shape)}" if self.shape else ""
        extra += f", temperature {self.base:g}" if self.base else ""
        return f"spatial positions: {self.form} ({self.axes} axes{extra})"

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "shape": list(self.shape)}


def _mech(source: str, **params: Any) -> Mechanism:
    return Mechanism("spatial_positions", source, SpatialPositionParams(**params))


def _learned(model: Any) -> list[Mechanism]:
    """Learned grids and Fourier-feature matrices named as position tables."""
    from posgeom.encodings.learned import LEARNED_NAMES

    found = []
    tensors = [*model.named_parameters(), *model.named_buffers()]
    for name, tensor in tensors:
        if _hf.last_name(name) not in LEARNED_NAMES or not tensor.is_floating_point():
            continue
        squeezed = _hf.squeezed(tensor)
        shape = tuple(int(v) for v in tensor.shape)
        if squeezed.ndim == 3:
            found.append(_mech(name, form="learned 2-D grid", axes=2, shape=shape))
        elif tensor.ndim == 2 and projects_coordinates(_hf.parent(model, name), tensor):
            form = "Fourier features of coordinates"
            found.append(_mech(name, form=form, axes=shape[0], width=2 * shape[1]))
    return found


def _axis_rotary(module: Any) -> int:
    """Axes of an attention that computes rotary from per-axis patch indices (0: not one)."""
    import torch

    if not callable(getattr(module, "apply_rotary_embeddings", None)):
        return 0
    if any(n.endswith("inv_freq") for n, _ in module.named_buffers()):
        return 0
    try:
        with torch.no_grad():
            ids = module.get_position_ids(torch.zeros(1, 8, 1))
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return 0
    ok = isinstance(ids, tuple) and len(ids) >= 2
    return len(ids) if ok and all(isinstance(t, torch.Tensor) for t in ids) else 0


def _grid_sine(module: Any) -> bool:
    """Whether ``module`` builds a sine table of a ``height x width`` grid (module docstring)."""
    import torch

    try:
        names = set(inspect.signature(module.forward).parameters)
    except (AttributeError, TypeError, ValueError):
        return False
    width = getattr(module, "embed_dim", None)
    if not {"height", "width"} <= names or not is_integer(width):
        return False
    if not isinstance(getattr(module, "temperature", None), (int, float)):
        return False
    given = {"height": 2, "width": 3, "device": torch.device("cpu"), "dtype": torch.float64}
    try:
        with torch.no_grad():
            out = module(**{k: v for k, v in given.items() if k in names})
    except (TypeError, ValueError, RuntimeError):
        return False
    return isinstance(out, torch.Tensor) and tuple(out.shape[-2:]) == (6, width)


def _coordinate_rotary(module: Any) -> Any:
    """The ``nn.Linear`` whose projection of coordinates ``module`` answers as ``(cos, sin)``
    (module docstring), else ``None``."""
    import torch

    linears = [m for m in module.children() if isinstance(m, torch.nn.Linear)]
    if len(linears) != 1 or linears[0].in_features not in (2, 3):
        return None
    coords = torch.rand(1, 5, linears[0].in_features, generator=torch.Generator().manual_seed(0))
    try:
        with torch.no_grad():
            out = module(coords)
    except (TypeError, ValueError, RuntimeError):
        return None
    pair = out[0] if isinstance(out, tuple) and out else None
    if not (isinstance(pair, tuple) and len(pair) == 2):
        return None
    cos, sin = pair
    if not all(isinstance(t, torch.Tensor) for t in pair) or cos.shape != sin.shape:
        return None
    return linears[0] if torch.allclose(cos**2 + sin**2, torch.ones_like(cos)) else None


def _computed(model: Any) -> list[Mechanism]:
    """Modules that compute spatial positions (rotary over grid axes, 2-D sine, keypoints)."""
    found = []
    for name, module in model.named_modules():
        axes = _axis_rotary(module)
        if axes:
            width = int(getattr(module, "attention_head_size", 0) or 0)
            found.append(_mech(name, form="rotary over grid axes", axes=axes, width=width))
        elif _grid_sine(module):
            base = float(module.temperature)
            width = int(module.embed_dim)
            found.append(_mech(name, form="2-D sine", width=width, base=base))
        elif (linear := _coordinate_rotary(module)) is not None:
            form = "rotary of keypoint coordinates"
            axes, width = linear.in_features, linear.out_features
            found.append(_mech(name, form=form, axes=axes, width=width))
    return found


@register
class SpatialPositionFamily(Family):
    """Spatial positions (patch grids, keypoints): detected and named, refused where a geometry
    of token positions is needed."""

    name = "spatial_positions"
    extension_type = refusing_extension(refusal)
    order = 98
    summary = "positions over an image/video grid or of keypoints (SAM, V-JEPA 2); detection only"
    in_comparison = False
    mechanism_kind = "spatial_positions"
    mechanism_params = SpatialPositionParams
    looks_for = (
        "a learned position grid (pos_embed with three axes), a coordinate projection, an "
        "attention computing rotary per grid axis, a height x width sine module, a keypoint "
        "rotary"
    )
    detect_order = 65

    def build(self, n_positions: int, **params: Any) -> PositionEncoding:
        """Raster order on ``grid_width`` columns (default 16): vectors ``(i // grid_width,
        i % grid_width)``, Euclidean distances (module docstring); not a model's geometry."""
        n = check_n(n_positions)
        w = check_int(params.get("grid_width", 16), "grid_width", 1)
        i = np.arange(n)
        vectors = np.stack([i // w, i % w], axis=1).astype(np.float64)
        return PositionEncoding("spatial_positions", vectors, {"grid_width": w})

    def detect(self, model: Any, config: Any, **options: Any) -> list[Mechanism]:
        return [*_learned(model), *_computed(model)]
