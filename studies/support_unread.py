"""Architectures with positions that ``extract`` does not read yet, each with what the model
computes: the support page lists them in a section of their own, so a "none" in the matrix is
never taken for a model without positions.

Each reason was read from the model's modules (``transformers`` 5.25), not from its name; a
type leaves this list when a detector reads its mechanism (its row then names the kind).
"""

from __future__ import annotations

__all__ = ["UNREAD", "section"]

_DETR_SINE = (
    "a 2-D sine of the pixel mask's cumulative sums computed in the forward (a module called "
    "with (shape, device, dtype, mask), not with a height and width as the 2-D sine reader "
    "calls it), or, by configuration, learned row and column embeddings (row_embeddings / "
    "column_embeddings, 50 x d each, concatenated per patch); posgeom reads neither yet"
)

#: model type -> what its positions are and why extract does not read them
UNREAD = {
    "detr": _DETR_SINE,
    "conditional_detr": _DETR_SINE,
    "deformable_detr": _DETR_SINE,
    "dab-detr": (
        "a 2-D sine with a temperature per axis (temperature_height, temperature_width) of "
        "the pixel mask, computed in the forward from (pixel_values, pixel_mask); not read yet"
    ),
    "omdet-turbo": (
        "a 2-D sine of the feature map built in the encoder's forward by a function of its "
        "own (no position module to call); not read yet"
    ),
}


def section(built: set[str]) -> list[str]:
    """The page's section: one row per type of :data:`UNREAD` (``built``: the types the run
    built; the others are marked as not built here)."""
    lines = [
        "## Positions not read yet",
        "",
        "Architectures whose positions extract does not read yet, with what they compute; "
        "their row would say `none` and the commands would treat those blocks as having no "
        "mechanism until a reader exists. Every architecture built in this run that has "
        "positions is read (at least named: kinds `relative_embeddings`, `conv_positions`, "
        "`spatial_positions` are named and refused by the commands that need a geometry). "
        "The DETR family below is not built here (its backbones need timm).",
        "",
        "| architecture | what the model computes |",
        "|---|---|",
    ]
    for model_type, reason in UNREAD.items():
        note = "" if model_type in built else " (not built in this run)"
        lines.append(f"| {model_type} | {reason}{note} |")
    return lines
