"""vLLM and SGLang: a launch command with the model's config overridden and the context set.

- **vLLM** (``vllm.sh``): ``vllm serve MODEL --hf-overrides JSON --max-model-len L``; the JSON
  holds ``rope_parameters`` (theta inside, vLLM's ``get_rope`` reads ``rope_parameters`` since it
  follows transformers 5) and ``max_position_embeddings``; a second, commented line gives the
  ``rope_scaling`` + ``rope_theta`` form for vLLM versions that read those (``--rope-scaling`` /
  ``--rope-theta`` flags are gone: ``--hf-overrides`` is the way).
- **SGLang** (``sglang.sh``): ``python -m sglang.launch_server --model-path MODEL
  --json-model-override-args JSON --context-length L``; its ``get_rope(..., base,
  rope_scaling)`` reads ``rope_scaling`` and ``rope_theta``.

Both engines derive a context cap from the config (:func:`derived_cap`) and refuse a longer ``--max-model-len`` / ``--context-length`` unless
``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` / ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` is set: the
command sets it only where ``L`` is above that cap.

What they read differently from transformers, and how the file keeps the same model:

- YaRN: SGLang and vLLM before 0.32 scale cos/sin by ``(0.1 ln s + 1) x attn_factor`` and do
  not read ``attention_factor``, ``mscale`` or ``mscale_all_dim``; vLLM 0.32 reads those and not
  ``attn_factor``. A strategy whose attention factor ``a`` differs from ``0.1 ln s + 1`` gets both
  ``attention_factor = a`` and ``attn_factor = a / (0.1 ln s + 1)``: exact in every version.
- dynamic NTK: SGLang (and vLLM before ``max_trained_positions``) compute the base once for
  ``max_position_embeddings x factor`` and use it at every length (transformers rescales only
  past ``L0``): identical at ``L``, different below ``L0`` (the note gives the computed gap).
  vLLM 0.32 divides by ``max_trained_positions`` (default ``max_position_embeddings``): with
  transformers' config it runs the unscaled base, with a cos/sin cache of ``L0`` positions
  (``DynamicNTKScalingRotaryEmbedding``, run in ``tests/extension/test_engines_vllm.py``); the
  vLLM file writes the static base transformers reaches at ``L`` with
  ``max_position_embeddings = L`` instead (the same model in every vLLM version).
- LongRoPE: the long factors are chosen at start-up when ``--max-model-len`` exceeds
  ``original_max_position_embeddings`` and then used for every prompt, short ones too
  (transformers switches per sequence length); an explicit ``attention_factor`` is written as
  ``short_mscale`` / ``long_mscale``.
"""

from __future__ import annotations

from typing import Any

from posgeom.extension.engines.base import (
    Emitted,
    EngineTarget,
    dumps,
    frequency_gap,
    shell_quote,
    static_ntk_theta,
    yarn_mscale,
)

__all__ = ["derived_cap", "server_parameters", "sglang", "vllm"]

VLLM_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
SGLANG_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def derived_cap(params: dict[str, Any], max_position_embeddings: int) -> int:
    """The context cap vLLM (``ModelConfig`` max-length derivation) and SGLang derive from a
    config: ``max_position_embeddings`` times ``factor``, except llama3 and LongRoPE (unscaled)
    and YaRN (vLLM 0.32: ``max_position_embeddings``; earlier vLLM and SGLang:
    ``original_max_position_embeddings x factor``; the smaller of the two)."""
    kind = params.get("rope_type", params.get("type", "default"))
    cap = float(max_position_embeddings)
    if kind in ("su", "longrope", "llama3"):
        return int(cap)
    factor = float(params.get("factor", 1.0) or 1.0)
    if kind == "yarn":  # vLLM 0.32: max_position_embeddings; earlier: original x factor
        orig = params.get("original_max_position_embeddings")
        return int(min(cap, float(orig) * factor)) if orig else int(cap)
    return int(cap * factor)


def server_parameters(target: EngineTarget) -> tuple[dict[str, Any], list[str]]:
    """The rope parameters as vLLM/SGLang read them (theta included) and the notes."""
    p = dict(target.rope_parameters)
    notes: list[str] = []
    kind = target.rope_type
    if kind == "yarn":
        a, default = target.attention_factor, yarn_mscale(target.factor)
        if abs(a / default - 1.0) > 1e-12:
            p["attention_factor"] = a
            p["attn_factor"] = a / default
            notes.append(
                f"yarn: attention factor {a:.6g} written twice: attention_factor (read by vLLM "
                f"0.32, not by SGLang or earlier vLLM) and attn_factor = {a:.6g} / (0.1 ln "
                f"{target.factor:g} + 1) = {p['attn_factor']:.6g} (read by SGLang and earlier "
                "vLLM, which multiply it by 0.1 ln s + 1; vLLM 0.32 ignores it): exact in both"
            )
    elif kind == "dynamic":
        engine_view = {
            "rope_type": "ntk",
            "rope_theta": target.theta,
            "factor": _vllm_ratio(target),
        }
        gap, _ = frequency_gap(target, engine_view, seq_len=target.trained_length)
        notes.append(
            "dynamic: the NTK base is computed once for max_position_embeddings x factor = "
            f"{target.target_length} and used at every length; transformers rescales only past "
            f"{target.trained_length}. Same frequencies at {target.target_length}; at "
            f"{target.trained_length} tokens they differ by up to {gap:.3g} (relative)"
        )
    elif kind == "longrope":
        if target.rope_parameters.get("attention_factor") is not None:
            a = float(p.pop("attention_factor"))
            p["short_mscale"] = p["long_mscale"] = a
            notes.append(f"longrope: attention_factor {a:.6g} written as short_mscale/long_mscale")
        short = {**p, "long_factor": p["short_factor"]}
        gap, _ = frequency_gap(target, short, seq_len=target.trained_length)
        notes.append(
            f"longrope: with --max-model-len {target.target_length} > "
            f"{target.trained_length} the long factors are used for every prompt, short ones too; "
            f"transformers uses the short factors up to {target.trained_length} tokens (their "
            f"frequencies differ by up to {gap:.3g}, relative)"
        )
    return p, notes


def _vllm_ratio(target: EngineTarget) -> float:
    """The NTK ratio vLLM's dynamic NTK uses at every length: ``f^2 - f + 1`` (its
    ``f x max_len / max_position - (f - 1)`` with ``max_len = max_position x f``), as the static
    ``ntk`` type's ``factor`` (``theta' = theta ratio^(d/(d-2))``)."""
    f = target.factor
    return f * f - f + 1.0


def _legacy(p: dict[str, Any]) -> dict[str, Any]:
    """``rope_scaling`` (None for ``default``) + ``rope_theta``."""
    scaling = {k: v for k, v in p.items() if k != "rope_theta"}
    return {
        "rope_scaling": None if p.get("rope_type") == "default" else scaling,
        "rope_theta": p["rope_theta"],
    }


def _env(target: EngineTarget, p: dict[str, Any], name: str, mpe: int) -> tuple[str, int]:
    cap = derived_cap(p, mpe)
    return (f"{name}=1 " if target.target_length > cap else ""), cap


def _script(
    engine: str, text: str, settings: dict[str, Any], env: dict[str, str], cap: int, notes: list
) -> Emitted:
    """``<engine>.sh``: its ``settings`` then the environment it needs and the derived cap."""
    settings = {**settings, "env": env, "derived_cap": cap}
    return Emitted(engine, f"{engine}.sh", text, settings, tuple(notes))


def _vllm_dynamic(target: EngineTarget) -> tuple[dict[str, Any], list[str]]:
    """Dynamic NTK for vLLM 0.32: the static base at ``L`` (module docstring)."""
    theta = static_ntk_theta(target)
    p = {"rope_type": "default", "rope_theta": theta}
    gap, _ = frequency_gap(target, p, seq_len=target.trained_length)
    note = (
        "dynamic: vLLM 0.32's dynamic NTK uses theta (f max_position_embeddings / "
        "max_trained_positions - (f - 1))^(d/(d-2)) with max_trained_positions = "
        "max_position_embeddings unless set, i.e. the unscaled base for transformers' config "
        f"(max_position_embeddings = {target.trained_length}), and its cos/sin cache holds "
        f"max_position_embeddings positions (none past {target.trained_length}); written as the "
        f"static base transformers reaches at {target.target_length}, {theta:.6g}, with "
        f"max_position_embeddings = {target.target_length} (the base earlier vLLM and SGLang "
        f"compute): same frequencies at {target.target_length}; at {target.trained_length} tokens "
        f"they differ by up to {gap:.3g} (relative), where transformers does not rescale"
    )
    return p, [note]


def vllm(target: EngineTarget) -> Emitted:
    """``vllm.sh`` (module docstring)."""
    p, notes = server_parameters(target)
    mpe = target.max_position_embeddings
    if target.rope_type == "dynamic":
        p, notes = _vllm_dynamic(target)
        mpe = target.target_length
    overrides = {"rope_parameters": p, "max_position_embeddings": mpe}
    legacy = {**_legacy(p), "max_position_embeddings": mpe}
    env, cap = _env(target, p, VLLM_ENV, mpe)
    tail = f" --max-model-len {target.target_length}"
    text = (
        f"# vLLM: serve {target.strategy} at {target.target_length} tokens (derived cap {cap})\n"
        f"{env}vllm serve {shell_quote(target.gguf_file or target.model)} --hf-overrides "
        f"{shell_quote(dumps(overrides))}{tail}\n"
        "# vLLM versions that read rope_scaling + rope_theta (before rope_parameters):\n"
        f"# {env}vllm serve {shell_quote(target.gguf_file or target.model)} --hf-overrides "
        f"{shell_quote(dumps(legacy))}{tail}\n"
    )
    settings = {"hf_overrides": overrides, "max_model_len": target.target_length}
    return _script("vllm", text, settings, {VLLM_ENV: "1"} if env else {}, cap, notes)


def sglang(target: EngineTarget) -> Emitted:
    """``sglang.sh`` (module docstring)."""
    p, notes = server_parameters(target)
    overrides = {**_legacy(p), "max_position_embeddings": target.max_position_embeddings}
    env, cap = _env(target, p, SGLANG_ENV, target.max_position_embeddings)
    text = (
        f"# SGLang: serve {target.strategy} at {target.target_length} tokens (derived cap {cap})\n"
        f"{env}python -m sglang.launch_server --model-path {shell_quote(target.gguf_file or target.model)} "
        f"--json-model-override-args {shell_quote(dumps(overrides))} "
        f"--context-length {target.target_length}\n"
    )
    settings = {"json_model_override_args": overrides, "context_length": target.target_length}
    return _script("sglang", text, settings, {SGLANG_ENV: "1"} if env else {}, cap, notes)
