"""A report figure's canvas and bytes: a matplotlib :class:`~matplotlib.figure.Figure` made
without pyplot (no global state, no display), and its SVG (deterministic ids, no date) and PNG
(no software stamp) bytes, so the same figure gives the same files; and, for the figures still
drawn with pyplot (a model analysis's and a training run's PNGs), :func:`pyplot` on Agg."""

from __future__ import annotations

import io
from typing import Any

from posgeom._errors import require

__all__ = ["encode", "encode_png", "encode_svg", "figure", "pyplot"]


def figure(width: float, height: float) -> Any:
    """A new ``width x height`` inch figure with constrained layout."""
    require("matplotlib", "plot")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    matplotlib = require("matplotlib", "plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def encode_svg(fig: Any) -> bytes:
    """SVG bytes of ``fig`` (the same figure gives the same bytes)."""
    import matplotlib

    out = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "posgeom"}):  # deterministic SVG ids
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def encode_png(fig: Any, *, dpi: int = 110) -> bytes:
    """PNG bytes of ``fig``."""
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=dpi, metadata={"Software": None})
    return out.getvalue()


def encode(fig: Any, *, dpi: int = 110) -> tuple[bytes, bytes]:
    """``(svg, png)`` bytes of ``fig``."""
    return encode_svg(fig), encode_png(fig, dpi=dpi)
