"""llama.cpp (command line and GGUF keys), llama-cpp-python keyword arguments, Ollama.

Spellings from llama.cpp's ``common/arg.cpp``, ``src/llama-context.cpp`` and
``src/llama-model.cpp`` (the copy vendored by llama-cpp-python 0.3.36; ``docs/ENGINES.md``):
``--rope-scaling {none,linear,yarn}``, ``--rope-scale N`` (``freq_scale = 1/N``),
``--rope-freq-base``, ``--yarn-orig-ctx`` and the other YaRN flags, ``-c N`` and
``--override-kv KEY=TYPE:VALUE`` over the GGUF keys ``{arch}.rope.*``. YaRN's cos/sin scale is
``{arch}.rope.scaling.attn_factor x (1 + 0.1 ln s)`` (``--yarn-attn-factor`` is overwritten), so an attention factor ``a`` is written as that key
``= a / (0.1 ln s + 1)`` (exact). Dynamic NTK is written as the static base it reaches at ``L``;
llama3 and LongRoPE live in GGUF tensors only (llama3: a copy carrying ``rope_freqs`` with
``--gguf-file``, :mod:`.gguf_tensors`), else refused. Ollama reads the rotary settings from the
GGUF only: its ``Modelfile`` (``num_ctx``) is written for the model as trained, the rest refused
with the GGUF keys a converted model must carry."""

from __future__ import annotations

from typing import Any

from posgeom.extension.engines.base import (
    Emitted,
    EngineTarget,
    attention_ratio,
    dumps,
    shell_quote,
    static_ntk_theta,
    trained_gap,
)
from posgeom.extension.engines.gguf_tensors import copy_name

__all__ = ["FLAGS", "llamacpp", "llamacpp_python", "llamacpp_settings", "ollama"]

#: llama.cpp's ``enum llama_rope_scaling_type``
ROPE_SCALING_TYPES = {"none": 0, "linear": 1, "yarn": 2, "longrope": 3}

_CONVERT = (
    "convert the model again with llama.cpp's convert_hf_to_gguf.py from a config.json that holds "
    "transformers4.config.json's rope_scaling (it writes the factors as GGUF tensors)"
)
#: rope type -> (the GGUF tensor llama.cpp reads it from, what else gives it)
_TENSORS = {
    "llama3": ("rope_freqs", " or give extend --gguf-file: it writes a copy carrying it"),
    "longrope": ("rope_factors_long/short", ""),
}


def llamacpp_settings(target: EngineTarget) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``(settings, kv_overrides, notes)``: the llama.cpp context settings (llama-cpp-python's
    keyword names: ``n_ctx``, ``rope_scaling_type``, ``rope_freq_base``, ``rope_freq_scale``,
    ``yarn_*``), the GGUF key overrides and the notes; raises ``ValueError(reason)`` for a
    strategy llama.cpp cannot run."""
    kind, notes = target.rope_type, []
    s: dict[str, Any] = {"n_ctx": target.target_length, "rope_freq_base": target.theta}
    kv: dict[str, Any] = {}
    if kind == "default":
        s.update(rope_scaling_type="none", rope_freq_scale=1.0)
    elif kind == "linear":
        s.update(rope_scaling_type="linear", rope_freq_scale=1.0 / target.factor)
    elif kind == "yarn":
        p = target.rope_parameters
        s.update(
            rope_scaling_type="yarn",
            rope_freq_scale=1.0 / target.factor,
            yarn_orig_ctx=int(p["original_max_position_embeddings"]),
            yarn_ext_factor=1.0,
            yarn_beta_fast=float(p.get("beta_fast") or 32.0),
            yarn_beta_slow=float(p.get("beta_slow") or 1.0),
        )
        if p.get("truncate") is False:
            raise ValueError("llama.cpp always truncates YaRN's correction range (truncate=false)")
        ratio = attention_ratio(target)
        if abs(ratio - 1.0) > 1e-12:
            kv[f"{target.gguf_prefix}.rope.scaling.attn_factor"] = ratio
            notes.append(
                f"yarn: attention factor {target.attention_factor:.6g} written as the GGUF key "
                f"{target.gguf_prefix}.rope.scaling.attn_factor = {ratio:.6g} (llama.cpp "
                "multiplies it by 1 + 0.1 ln s and overwrites --yarn-attn-factor): exact"
            )
    elif kind == "dynamic":
        theta = static_ntk_theta(target)
        s.update(rope_scaling_type="none", rope_freq_scale=1.0, rope_freq_base=theta)
        gap = trained_gap(target, {"rope_type": "default", "rope_theta": theta})
        notes.append(
            f"dynamic: llama.cpp has no dynamic NTK; written as the static base it reaches at "
            f"{target.target_length} tokens, {theta:.6g} (same frequencies there; at "
            f"{target.trained_length} tokens they differ by up to {gap:.3g}, relative)"
        )
    elif kind == "llama3" and target.gguf_file:
        s.update(
            rope_scaling_type="none", rope_freq_scale=1.0, gguf_copy=copy_name(target.gguf_file)
        )
        notes.append(
            f"llama3: llama.cpp reads it from the GGUF tensor rope_freqs only; written "
            f"{s['gguf_copy']}, a copy of the GGUF carrying it (as convert_hf_to_gguf.py writes it), "
            "run unscaled at the target length: the same frequencies as transformers' llama3"
        )
    elif kind in _TENSORS:
        tensor, more = _TENSORS[kind]
        raise ValueError(
            f"llama.cpp has no command-line spelling for {kind} (it reads the GGUF tensor "
            f"{tensor}); {_CONVERT}{more}"
        )
    else:
        raise ValueError(f"llama.cpp has no spelling for rope type {kind!r}")
    if target.gguf_arch is None and kv:
        notes.append("replace ARCH by the GGUF's general.architecture (e.g. llama)")
    return s, kv, notes


def _kv_flag(key: str, value: Any) -> str:
    kind = "float" if isinstance(value, float) else "int" if isinstance(value, int) else "str"
    return f"{key}={kind}:{value}"


#: setting -> the llama.cpp flag that sets it, in the order ``llamacpp.sh`` writes them
FLAGS = (
    ("n_ctx", "-c"),
    ("rope_scaling_type", "--rope-scaling"),
    ("rope_freq_base", "--rope-freq-base"),
    ("yarn_orig_ctx", "--yarn-orig-ctx"),
    ("yarn_ext_factor", "--yarn-ext-factor"),
    ("yarn_beta_fast", "--yarn-beta-fast"),
    ("yarn_beta_slow", "--yarn-beta-slow"),
)


def llamacpp(target: EngineTarget) -> Emitted:
    """``llamacpp.sh``: a ``llama-server`` command (the same flags serve ``llama-cli`` and
    ``llama-perplexity``)."""
    try:
        s, kv, notes = llamacpp_settings(target)
    except ValueError as exc:
        return Emitted.refuse("llamacpp", str(exc))
    flags = [
        f"{flag} {s[key]:g}" if isinstance(s[key], float) else f"{flag} {s[key]}"
        for key, flag in FLAGS
        if key in s
    ]
    if s["rope_freq_scale"] != 1.0:
        flags.insert(2, f"--rope-scale {1.0 / s['rope_freq_scale']:g}")
    flags += [f"--override-kv {shell_quote(_kv_flag(k, v))}" for k, v in kv.items()]
    copy = s.pop("gguf_copy", None)
    model = shell_quote(target.gguf_file or target.model)
    if copy:  # beside this script
        model = f'"$(dirname "$0")"/{shell_quote(copy)}'
    text = (
        f"# llama.cpp: run {target.strategy} at {target.target_length} tokens\n"
        f"llama-server -m {model} {' '.join(flags)}\n"
    )
    settings = {**s, "override_kv": kv}
    return Emitted("llamacpp", "llamacpp.sh", text, settings, tuple(notes), gguf_copy=copy)


def llamacpp_python(target: EngineTarget) -> Emitted:
    """``llama_cpp_python.json``: keyword arguments of ``llama_cpp.Llama(model_path, **kwargs)``
    (``rope_scaling_type`` as llama.cpp's enum value, ``kv_overrides`` for the GGUF keys)."""
    try:
        s, kv, notes = llamacpp_settings(target)
    except ValueError as exc:
        return Emitted.refuse("llama-cpp-python", str(exc))
    copy = s.pop("gguf_copy", None)
    kwargs = {**s, "rope_scaling_type": ROPE_SCALING_TYPES[s["rope_scaling_type"]]}
    if kv:
        kwargs["kv_overrides"] = kv
    if copy:
        notes.append(f"load the copy: Llama(model_path=FOLDER/{copy}, **kwargs)")
    text = dumps(kwargs).replace(",", ", ") + "\n"
    return Emitted(
        "llama-cpp-python", "llama_cpp_python.json", text, kwargs, tuple(notes), gguf_copy=copy
    )


def ollama(target: EngineTarget) -> Emitted:
    """``Modelfile``: ``FROM`` the GGUF and ``PARAMETER num_ctx L`` (module docstring)."""
    if target.kind != "none":
        keys = {
            f"{target.gguf_prefix}.rope.scaling.type": target.rope_type,
            f"{target.gguf_prefix}.rope.scaling.factor": target.factor,
            f"{target.gguf_prefix}.rope.scaling.original_context_length": target.trained_length,
        }
        return Emitted.refuse(
            "ollama",
            "Ollama reads the rotary settings from the GGUF only (a Modelfile sets num_ctx); "
            f"{target.strategy} needs a GGUF carrying {target.gguf_prefix}.rope.freq_base = "
            f"{target.theta:g}"
            + (f" and {dumps(keys)}" if target.rope_type in ("linear", "yarn") else "")
            + (
                f" (llama.cpp's GGUF loader has no {target.rope_type} type)"
                if target.rope_type == "dynamic"
                else ""
            )
            + (f" or tensors ({_CONVERT})" if target.rope_type in ("llama3", "longrope") else ""),
        )
    notes = ["the model as trained: Ollama reads its rotary settings from the GGUF"]
    model = target.gguf_file or target.model
    text = f"FROM {model}\nPARAMETER num_ctx {target.target_length}\n"
    return Emitted("ollama", "Modelfile", text, {"num_ctx": target.target_length}, tuple(notes))
