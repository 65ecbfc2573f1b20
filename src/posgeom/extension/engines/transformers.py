"""transformers: the keys to merge into ``config.json``, in the 5 and the 4 spelling.

- **transformers 5** (``transformers5.config.json``): ``rope_parameters`` (theta inside) and
  ``max_position_embeddings``;
- **transformers 4** (4.45 to 4.57, ``transformers4.config.json``): ``rope_scaling`` (or null),
  ``rope_theta`` and ``max_position_embeddings``; LongRoPE also the top-level
  ``original_max_position_embeddings = L0``, where transformers 4 reads the trained length.

``max_position_embeddings`` is ``L0`` for dynamic NTK, else ``L``. A transformers 4 reader of the
version-5 file falls back to theta 10,000 (``posgeom rope-check`` flags the mix)."""

from __future__ import annotations

from typing import Any

from posgeom.extension.engines.base import Emitted, EngineTarget
from posgeom.io.jsonfiles import json_text

__all__ = ["transformers4", "transformers5"]


def _text(body: dict[str, Any]) -> str:
    return json_text(body, indent=2) + "\n"


def transformers5(target: EngineTarget) -> Emitted:
    """``transformers5.config.json`` (module docstring)."""
    body = {
        "rope_parameters": dict(target.rope_parameters),
        "max_position_embeddings": target.max_position_embeddings,
    }
    notes = (
        "merge these keys into the model's config.json (transformers >= 5.0 reads rope_theta "
        "inside rope_parameters)",
    )
    return Emitted("transformers5", "transformers5.config.json", _text(body), body, notes)


def transformers4(target: EngineTarget) -> Emitted:
    """``transformers4.config.json`` (module docstring)."""
    scaling = target.scaling()
    body: dict[str, Any] = {
        "rope_scaling": scaling or None,
        "rope_theta": target.theta,
        "max_position_embeddings": target.max_position_embeddings,
    }
    notes = [
        "merge these keys into config.json for transformers 4.45-4.57 (rope_scaling + rope_theta)"
    ]
    if target.rope_type == "longrope":
        body["original_max_position_embeddings"] = target.trained_length
        notes.append(
            "longrope: transformers 4 reads the trained length from the top-level "
            "original_max_position_embeddings (written here); without it the long factors "
            "are never used"
        )
    return Emitted("transformers4", "transformers4.config.json", _text(body), body, tuple(notes))
