"""The support matrix's rotary check: a model's own rotary module against posgeom's angles.

The module is called on positions ``0 .. CHECK_POSITIONS - 1`` with its own signature (every
axis at position ``p``: :func:`_position_forms`), and the angles ``atan2(sin, cos)`` of every
column it returns must be posgeom's ``p w_k`` to ``1e-6 max(1, |p w_k|)`` (every plane found, no
column left over). A module that answers none of the forms is left unchecked with its class and
signature (:func:`rotary_check`).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

__all__ = ["CHECK_POSITIONS", "rotary_check", "rotary_error"]

#: positions of the rotary check
CHECK_POSITIONS = 8


def _angles(output: Any) -> np.ndarray | None:
    """``(positions, columns)`` angles of a rotary module's output: ``(cos, sin)`` or
    ``(sin, cos)`` (the cosine is the one without zeros at position 0, whatever its attention
    scale) or complex ``exp(i p w)``; ``None`` for any other form (2-D vision grids, M-RoPE)."""
    import torch

    if isinstance(output, torch.Tensor) and torch.is_complex(output):
        t = output.detach().to(torch.complex128)
        return np.angle(t.reshape(-1, *t.shape[-2:])[0].numpy()) if t.ndim >= 2 else None
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        return None
    if any(t.ndim < 2 or t.shape[-2] != CHECK_POSITIONS for t in output):
        return None
    a, b = (t.detach().to(torch.float64).reshape(-1, *t.shape[-2:])[0].numpy() for t in output)
    cos, sin = (a, b) if np.abs(a[0]).min() > np.abs(b[0]).max() else (b, a)
    return np.arctan2(sin, cos)


def _rotary_module(model: Any, mech: Any) -> Any:
    name = mech.source.rsplit(".", 1)[0] if "." in mech.source else ""
    try:
        module = model.get_submodule(name) if name else None
    except AttributeError:  # read from the configuration: no module to call
        return None
    return module if callable(getattr(module, "forward", None)) else None


def _position_forms() -> list[tuple[str, Any]]:
    """The position arguments a rotary module is called with, every axis at position ``p``:
    ``(1, P)`` (text), ``(3, 1, P)`` (M-RoPE's temporal, height and width rows, equal: 1-D
    rotary), ``(2, P)``, ``(P, 2)`` and ``(1, P, 2)`` (a vision tower's (row, column) patch
    grid, equal)."""
    import torch

    p = torch.arange(CHECK_POSITIONS)
    return [
        ("(x, position_ids)", p[None]),
        ("(x, 3-axis position_ids)", p[None, None].expand(3, 1, -1)),
        ("(x, 2-D grid (2, P))", torch.stack([p, p])),
        ("(x, 2-D grid (P, 2))", torch.stack([p, p], dim=1)),
        ("(x, 2-D grid (1, P, 2))", torch.stack([p, p], dim=1)[None]),
    ]


def _angle_error(got: np.ndarray, mech: Any) -> float:
    p = np.arange(CHECK_POSITIONS, dtype=np.float64)[:, None]
    want = p * np.asarray(mech.params.inv_freq)[None, :]  # (P, K)
    diff = np.angle(np.exp(1j * (got[:, :, None] - want[:, None, :])))  # (P, cols, K)
    err = np.abs(diff) / np.maximum(1.0, np.abs(want))[:, None, :]
    worst = err.max(axis=0)  # (cols, K)
    per_plane, per_column = worst.min(axis=0), worst.min(axis=1)
    return float(max(per_plane.max(), per_column.max()))


def _errors(model: Any, mech: Any) -> list[tuple[str, float]]:
    """``(form, error)`` of every call form the module answers with ``(cos, sin)``, up to the
    first that matches."""
    import torch

    module = _rotary_module(model, mech)
    if module is None:
        return []
    x = torch.zeros(1, CHECK_POSITIONS, mech.params.head_dim or 2)
    kwargs = {"layer_type": mech.params.layer_type} if mech.params.layer_type else {}
    out: list[tuple[str, float]] = []
    for form, positions in _position_forms():
        try:
            with torch.no_grad():
                got = _angles(module(x, positions, **kwargs))
        except (TypeError, ValueError, RuntimeError, IndexError):  # not this signature
            continue
        if got is not None:
            out.append((form, _angle_error(got, mech)))
            if out[-1][1] <= 1e-6:
                break
    return out


def rotary_check(model: Any, mech: Any) -> tuple[float | None, str]:
    """``(error, form)``: the smallest angle error over the call forms of
    :func:`_position_forms` and the form that gave it; ``(None, why)`` when no form returns
    ``(cos, sin)`` of the positions (``why``: the module's own signature, or no module)."""
    errors = _errors(model, mech)
    if errors:
        form, err = min(errors, key=lambda e: e[1])
        return err, form
    module = _rotary_module(model, mech)
    if module is None:
        return None, "base read from the configuration (no rotary module)"
    try:
        signature = str(inspect.signature(module.forward))
    except (TypeError, ValueError):  # pragma: no cover - builtins
        signature = "(...)"
    return None, f"{type(module).__name__}{signature.split(' ->')[0]}"[:90]


def rotary_error(model: Any, mech: Any) -> float | None:
    """Largest ``|model angle - posgeom angle| / max(1, |angle|)`` (wrapped to ``(-pi, pi]``)
    over positions and planes (a plane or a model column without a match makes it large), for
    the first call form of :func:`_position_forms` that matches (else the smallest error);
    ``None`` when the module answers none of them with ``(cos, sin)`` (a vision tower called
    on pixels, a relative encoding called on hidden states, a base read from the
    configuration)."""
    return rotary_check(model, mech)[0]
