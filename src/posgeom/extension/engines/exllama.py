"""exllamav2 and TabbyAPI: ``max_seq_len``, ``rope_scale``, ``rope_alpha`` and the model's
``config.json``.

exllamav2 (``ExLlamaV2Config``; TabbyAPI's ``config.yml`` ``model:`` section) computes in
``device.prepare_sincos`` / ``rope.py``: ``rope_scale`` divides the positions (linear);
``rope_alpha`` gives the base ``base x alpha^(h/(h-2))`` (``h`` the head width), so a static NTK
base ``theta'`` is ``alpha = (theta'/theta)^((h-2)/h)``; YaRN, llama3 and LongRoPE come from
``config.json``'s ``rope_scaling``, with YaRN's betas and attention factor fixed (others refused)
and its ramp found at ``max_seq_len``, and LongRoPE's long factors used for every prompt past the
trained length (an explicit ``attention_factor`` refused). Dynamic NTK is written as the static
alpha it reaches at ``L``; every gap is stated in the notes (``docs/ENGINES.md``)."""

from __future__ import annotations

from typing import Any

from posgeom.extension.engines.base import (
    Emitted,
    EngineTarget,
    attention_ratio,
    frequency_gap,
    ntk_ratio,
    trained_gap,
)
from posgeom.io.jsonfiles import json_text

__all__ = ["exllamav2"]


def _yarn(target: EngineTarget) -> tuple[dict[str, Any], list[str]]:
    p = target.rope_parameters
    betas = (float(p.get("beta_fast") or 32.0), float(p.get("beta_slow") or 1.0))
    if betas != (32.0, 1.0):
        raise ValueError(
            f"exllamav2's YaRN fixes beta_fast/beta_slow at 32/1 (the strategy: {betas})"
        )
    if abs(attention_ratio(target) - 1.0) > 1e-12:
        raise ValueError(
            "exllamav2's YaRN fixes the attention factor at 0.1 ln s + 1 (the strategy: "
            f"{target.attention_factor:.6g})"
        )
    view = {**p, "original_max_position_embeddings": target.target_length}
    gap, _ = frequency_gap(target, view)
    note = (
        "yarn: exllamav2 finds the ramp's planes at max_seq_len "
        f"{target.target_length} instead of {target.trained_length}: frequencies differ by up to "
        f"{gap:.3g} (relative)"
    )
    return {}, [note]


def _settings(target: EngineTarget) -> tuple[dict[str, Any], list[str]]:
    """``(tabby model settings beyond max_seq_len, notes)``; ``ValueError(reason)`` if refused."""
    kind, h = target.rope_type, int(target.head_dim)
    if float(target.rope_parameters.get("partial_rotary_factor") or 1.0) != 1.0:
        raise ValueError("exllamav2's rope_alpha and YaRN assume a full-width rotary head")
    if kind == "linear":
        return {"rope_scale": target.factor}, []
    if kind == "dynamic":
        ratio = ntk_ratio(target)
        gap = trained_gap(target, {"rope_type": "ntk", "rope_theta": target.theta, "factor": ratio})
        return {"rope_alpha": ratio}, [
            f"dynamic: exllamav2 has no dynamic NTK; written as the static alpha {ratio:g} it "
            f"reaches at {target.target_length} tokens (at {target.trained_length} tokens the "
            f"frequencies differ by up to {gap:.3g}, relative)"
        ]
    if kind == "yarn":
        return _yarn(target)
    if kind == "longrope":
        if target.rope_parameters.get("attention_factor") is not None:
            raise ValueError("exllamav2's LongRoPE ignores an explicit attention_factor")
        return {}, [
            f"longrope: with max_seq_len {target.target_length} > {target.trained_length} "
            "exllamav2 uses the long factors for every prompt (transformers: only past "
            f"{target.trained_length} tokens)"
        ]
    if kind == "default" and target.model_theta and target.theta != target.model_theta:
        return {"rope_alpha": (target.theta / target.model_theta) ** ((h - 2) / h)}, [
            f"base {target.theta:g} written as rope_alpha (base x alpha^(h/(h-2))): exact"
        ]
    return {}, []


def exllamav2(target: EngineTarget) -> Emitted:
    """``tabby_config.yml`` (module docstring): TabbyAPI's ``model:`` section, and the same
    values for an ``ExLlamaV2Config`` in its comments."""
    try:
        extra, notes = _settings(target)
    except ValueError as exc:
        return Emitted.refuse("exllamav2", str(exc))
    settings: dict[str, Any] = {"max_seq_len": target.target_length, **extra}
    lines = [
        f"# TabbyAPI config.yml (exllamav2): {target.strategy} at {target.target_length} tokens",
        "# ExLlamaV2Config: max_seq_len, scale_pos_emb (= rope_scale), scale_alpha_value (= rope_alpha)",
    ]
    if target.rope_type in ("yarn", "llama3", "longrope"):
        scaling = json_text({"rope_scaling": target.scaling()}, indent=None)
        lines.append(f"# and in the model's config.json: {scaling}")
    lines += ["model:", f"  max_seq_len: {target.target_length}"]
    lines += [f"  {k}: {v:.9g}" for k, v in extra.items()]
    return Emitted("exllamav2", "tabby_config.yml", "\n".join(lines) + "\n", settings, tuple(notes))
