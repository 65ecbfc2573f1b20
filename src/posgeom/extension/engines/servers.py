"""vLLM and SGLang: a launch command with the model's config overridden and the context set.

- **vLLM** (``vllm.sh``): ``vllm serve MODEL --hf-overrides JSON --max-model-len L``, the JSON in
  the ``rope_parameters`` spelling, and a commented line in the ``rope_scaling`` + ``rope_theta``
  one for older versions;
- **SGLang** (``sglang.sh``): ``python -m sglang.launch_server --model-path MODEL
  --json-model-override-args JSON --context-length L`` (``rope_scaling`` + ``rope_theta``).

Both derive a context cap from the config (:func:`derived_cap`); the command sets
``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` / ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` only where
``L`` is above it. What they read differently from transformers (YaRN's attention factor, dynamic
NTK, LongRoPE's switch) and how each file keeps the same model: ``docs/ENGINES.md``; each
difference left is stated in the notes with its computed gap."""

from __future__ import annotations

from typing import Any

from posgeom.extension.engines.base import (
    Emitted,
    EngineTarget,
    attention_ratio,
    dumps,
    ntk_ratio,
    shell_quote,
    static_ntk_theta,
    trained_gap,
)

__all__ = ["SERVERS", "derived_cap", "server_parameters", "setting_name", "sglang", "vllm"]

#: engine -> (its name, the environment variable past the derived cap, the command, the flag of
#: the config overrides, the flag of the context length); the settings name the flags' values
SERVERS = {
    "vllm": (
        "vLLM",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
        "vllm serve",
        "--hf-overrides",
        "--max-model-len",
    ),
    "sglang": (
        "SGLang",
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
        "python -m sglang.launch_server --model-path",
        "--json-model-override-args",
        "--context-length",
    ),
}


def setting_name(flag: str) -> str:
    """The settings key of a command-line flag: ``--max-model-len`` -> ``max_model_len``."""
    return flag.lstrip("-").replace("-", "_")


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
        a, ratio = target.attention_factor, attention_ratio(target)
        if abs(ratio - 1.0) > 1e-12:
            p["attention_factor"] = a
            p["attn_factor"] = ratio
            notes.append(
                f"yarn: attention factor {a:.6g} written twice: attention_factor (read by vLLM "
                f"0.32, not by SGLang or earlier vLLM) and attn_factor = {a:.6g} / (0.1 ln "
                f"{target.factor:g} + 1) = {p['attn_factor']:.6g} (read by SGLang and earlier "
                "vLLM, which multiply it by 0.1 ln s + 1; vLLM 0.32 ignores it): exact in both"
            )
    elif kind == "dynamic":
        engine_view = {"rope_type": "ntk", "rope_theta": target.theta, "factor": ntk_ratio(target)}
        gap = trained_gap(target, engine_view)
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
        gap = trained_gap(target, {**p, "long_factor": p["short_factor"]})
        notes.append(
            f"longrope: with --max-model-len {target.target_length} > "
            f"{target.trained_length} the long factors are used for every prompt, short ones too; "
            f"transformers uses the short factors up to {target.trained_length} tokens (their "
            f"frequencies differ by up to {gap:.3g}, relative)"
        )
    return p, notes


def _legacy(p: dict[str, Any]) -> dict[str, Any]:
    """``rope_scaling`` (None for ``default``) + ``rope_theta``."""
    scaling = {k: v for k, v in p.items() if k != "rope_theta"}
    return {
        "rope_scaling": None if p.get("rope_type") == "default" else scaling,
        "rope_theta": p["rope_theta"],
    }


def _vllm_dynamic(target: EngineTarget) -> tuple[dict[str, Any], list[str]]:
    """Dynamic NTK for vLLM 0.32: the static base at ``L`` (module docstring)."""
    theta = static_ntk_theta(target)
    p = {"rope_type": "default", "rope_theta": theta}
    gap = trained_gap(target, p)
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


def _launch(
    engine: str, target: EngineTarget, p: dict, notes: list, overrides: dict, legacy: Any = None
) -> Emitted:
    """``<engine>.sh`` (:data:`SERVERS`): the command with ``overrides`` (and, commented, with
    ``legacy``), its settings, the environment it needs and the derived cap."""
    name, env_name, command, flag, length = SERVERS[engine]
    cap = derived_cap(p, overrides["max_position_embeddings"])
    env = f"{env_name}=1 " if target.target_length > cap else ""
    model = shell_quote(target.gguf_file or target.model)

    def line(body: dict) -> str:
        return f"{env}{command} {model} {flag} {shell_quote(dumps(body))} {length} {target.target_length}\n"

    text = (
        f"# {name}: serve {target.strategy} at {target.target_length} tokens (derived cap {cap})\n"
    )
    text += line(overrides)
    if legacy is not None:
        text += "# vLLM versions that read rope_scaling + rope_theta (before rope_parameters):\n"
        text += "# " + line(legacy)
    settings = {
        setting_name(flag): overrides,
        setting_name(length): target.target_length,
        "env": {env_name: "1"} if env else {},
        "derived_cap": cap,
    }
    return Emitted(engine, f"{engine}.sh", text, settings, tuple(notes))


def vllm(target: EngineTarget) -> Emitted:
    """``vllm.sh`` (module docstring)."""
    p, notes = server_parameters(target)
    mpe = target.max_position_embeddings
    if target.rope_type == "dynamic":
        p, notes = _vllm_dynamic(target)
        mpe = target.target_length
    legacy = {**_legacy(p), "max_position_embeddings": mpe}
    return _launch(
        "vllm", target, p, notes, {"rope_parameters": p, "max_position_embeddings": mpe}, legacy
    )


def sglang(target: EngineTarget) -> Emitted:
    """``sglang.sh`` (module docstring)."""
    p, notes = server_parameters(target)
    overrides = {**_legacy(p), "max_position_embeddings": target.max_position_embeddings}
    return _launch("sglang", target, p, notes, overrides)
