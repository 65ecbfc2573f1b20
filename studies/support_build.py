"""What the support matrix's tiny build adjusts after ``AutoModel.from_config``: M-RoPE's
sections rescaled to the tiny rotary width, and parameters that initialise to all zeros drawn
small (a trained checkpoint has none)."""

from __future__ import annotations

from typing import Any

__all__ = ["fill_zeros", "fit_sections"]


def _rescaled(sections: list[int], planes: int) -> list[int]:
    """``sections`` scaled to sum to ``planes`` (each at least 1)."""
    new = [max(1, round(v * planes / sum(sections))) for v in sections]
    new[0] += planes - sum(new)
    return new


def fit_sections(model: Any) -> None:
    """M-RoPE's ``mrope_section`` (the rotary planes of its temporal, height and width axes,
    from the configuration or the module's default for a full-size head) rescaled to the tiny
    rotary width, in the module and its configuration, as a real checkpoint's sections sum to
    its planes."""
    for module in model.modules():
        sections, freqs = getattr(module, "mrope_section", None), getattr(module, "inv_freq", None)
        if not isinstance(sections, list) or freqs is None or sum(sections) == freqs.shape[-1]:
            continue
        module.mrope_section = _rescaled(sections, int(freqs.shape[-1]))
        params = getattr(getattr(module, "config", None), "rope_parameters", None)
        if isinstance(params, dict):
            params["mrope_section"] = list(module.mrope_section)


def fill_zeros(model: Any) -> None:
    """Every parameter that initialises to all zeros (Zaya's query-key temperature, zero output
    projections, biases) drawn from ``N(0, 0.02^2)`` (seed 1), as a trained checkpoint has none:
    a zero temperature makes every attention score 0, and no rotation could then be seen."""
    import torch

    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            if param.numel() and not bool(param.any()):
                noise = torch.randn(param.shape, generator=generator, dtype=torch.float32)
                param.copy_(0.02 * noise)
