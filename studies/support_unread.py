"""Architectures with positions that ``extract`` does not read yet, each with what the model
computes: the support page lists them in a section of their own, so a "none" in the matrix is
never taken for a model without positions.

Each reason was read from the model's modules (``transformers`` 5.25), not from its name; a
type leaves this list when a detector reads its mechanism (its row then names the kind).
"""

from __future__ import annotations

__all__ = ["UNREAD", "section"]

_SAM = (
    "a learned 2-D table over the patch grid (vision_encoder.pos_embed, (1, H, W, d): the "
    "learned reader takes (P, d) tables) and decomposed relative positions (each attention's "
    "rel_pos_h / rel_pos_w, a learned vector per row and per column offset added to the "
    "scores); posgeom reads neither yet"
)
_HIERA = (
    "learned absolute embeddings of the Hiera backbone (pos_embed (1, d, 7, 7) interpolated to "
    "the feature map plus pos_embed_window (1, d, 8, 8) tiled per window), a 2-D layout the "
    "learned reader does not take; the mask decoder's sine embedding is computed in the forward"
)
_DETR = (
    "a 2-D sine embedding of the feature-map grid computed in the forward from the pixel mask "
    "(no table, no frequency buffer), added to the encoder's keys and queries; no reader yet"
)

#: model type -> what its positions are and why extract does not read them
UNREAD = {
    "vjepa2": (
        "3-D rotary (frame, height, width) computed inside each attention from the patch grid "
        "(VJEPA2RopeAttention: no inv_freq buffer, no rotary module); its planes split over "
        "three axes, which no rotary reader takes yet"
    ),
    "sam_vision_model": _SAM,
    "sam_hq_vision_model": _SAM,
    "sam2_vision_model": _HIERA,
    "sam2_hiera_det_model": _HIERA,
    "lightglue": (
        "positions are keypoint coordinates, not token order: a learned projection of each "
        "keypoint's (x, y) (positional_encoder.projector, (d/2, 2)) used as the rotation of "
        "queries and keys; values, like BROS's boxes"
    ),
    "d_fine": _DETR,
    "sam": (
        "the row 'learned (input)' is the prompt encoder's random Fourier-feature matrix "
        "(shared_image_embedding.positional_embedding, (2, d/2), a projection of point "
        "coordinates), not a table of positions: a misread; the image encoder's own positions "
        "are those of sam_vision_model"
    ),
}


def section(built: set[str]) -> list[str]:
    """The page's section: one row per type of :data:`UNREAD` (``built``: the types the run
    built; the others are marked as not built here)."""
    lines = [
        "## Positions not read yet",
        "",
        "Architectures whose row says `none` (or, for sam, a misread) although the model has "
        "positions, with what it computes; the commands treat those blocks as having no "
        "mechanism until a reader exists. DETR, Conditional/DAB/Deformable DETR and OmDet "
        "(the same sine embedding as d_fine) are not built here (their backbones need timm).",
        "",
        "| architecture | what the model computes |",
        "|---|---|",
    ]
    for model_type, reason in UNREAD.items():
        note = "" if model_type in built else " (not built in this run)"
        lines.append(f"| {model_type} | {reason}{note} |")
    return lines
