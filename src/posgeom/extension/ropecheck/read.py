"""What ``rope-check`` reads: a model folder, a ``config.json``, a GGUF file or a file ``extend
--emit`` wrote, as one :class:`RopeSource`: a transformers-style configuration plus, for an
engine's file, the engine and its run settings. GGUF keys and llama.cpp settings become that
configuration (``{arch}.rope.freq_base`` -> ``rope_theta``, ``rope.scaling.*`` -> ``rope_type``,
``factor``, ``original_max_position_embeddings``; ``{arch}.context_length`` ->
``max_position_embeddings``)."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.extension.engines.llamacpp import FLAGS, ROPE_SCALING_TYPES

__all__ = ["RopeSource", "read_source"]

_MAX = 64 << 20


@dataclass(frozen=True)
class RopeSource:
    """``config`` (transformers keys), ``engine`` (None: a model's own config, read by every
    engine), ``settings`` (the engine's run settings) and ``path``."""

    path: str
    config: dict[str, Any]
    engine: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def _gguf_value(field: Any) -> Any:
    part = field.parts[field.data[0]]
    if field.types and field.types[0].name == "STRING":
        return bytes(part).decode("utf-8", errors="replace")
    return part.tolist()[0]


def read_gguf(path: str | os.PathLike) -> RopeSource:
    """A GGUF file's rotary keys as a transformers-style configuration (module docstring)."""
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise PosgeomError("reading a GGUF file needs the gguf package (pip install gguf)") from exc
    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise PosgeomError(f"{path} is not a readable GGUF file ({exc})") from None
    kv = {name: _gguf_value(f) for name, f in reader.fields.items() if f.data}
    arch = kv.get("general.architecture", "llama")
    settings = {"n_ctx_train": kv.get(f"{arch}.context_length"), "arch": arch}
    for key in ("type", "factor", "attn_factor", "original_context_length"):
        if f"{arch}.rope.scaling.{key}" in kv:
            settings[f"scaling_{key}"] = kv[f"{arch}.rope.scaling.{key}"]
    settings["rope_freq_base"] = kv.get(f"{arch}.rope.freq_base", 10000.0)
    settings["tensors"] = sorted({t.name for t in reader.tensors if "rope" in t.name})
    freqs = next((t for t in reader.tensors if t.name == "rope_freqs.weight"), None)
    if freqs is not None:  # llama3's bands: llama.cpp divides plane k's angle by entry k
        settings["rope_freqs"] = [float(x) for x in freqs.data.reshape(-1)]
    heads = kv.get(f"{arch}.attention.head_count")
    config = llamacpp_config(settings)
    config["head_dim"] = kv.get(f"{arch}.rope.dimension_count") or (
        kv.get(f"{arch}.embedding_length", 0) // heads if heads else None
    )
    return RopeSource(str(path), config, "gguf", settings)


def llamacpp_config(s: dict[str, Any]) -> dict[str, Any]:
    """The transformers-style configuration llama.cpp runs from its settings (GGUF keys as
    ``scaling_*``, or llama-cpp-python keywords)."""
    kind = s.get("rope_scaling_type", s.get("scaling_type", "linear"))
    kind = {v: k for k, v in ROPE_SCALING_TYPES.items()}.get(kind, kind)
    scale = s.get("rope_freq_scale")
    factor = 1.0 / scale if scale else float(s.get("scaling_factor") or 1.0)
    params: dict[str, Any] = {"rope_theta": float(s.get("rope_freq_base") or 10000.0)}
    if kind == "none" or (factor == 1.0 and kind != "yarn"):
        params["rope_type"] = "default"
    elif kind == "linear":
        params.update(rope_type="linear", factor=factor)
    elif kind == "yarn":
        orig = (
            s.get("yarn_orig_ctx")
            or s.get("scaling_original_context_length")
            or s.get("n_ctx_train")
        )
        params.update(rope_type="yarn", factor=factor, original_max_position_embeddings=orig)
        params["beta_fast"] = float(s.get("yarn_beta_fast") or 32.0)
        params["beta_slow"] = float(s.get("yarn_beta_slow") or 1.0)
    else:
        params["rope_type"] = str(kind)
    return {
        "rope_parameters": params,
        "max_position_embeddings": s.get("n_ctx") or s.get("n_ctx_train"),
    }


def _after(words: list[str], flag: str) -> str | None:
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def _script(path: Path) -> RopeSource:
    text = path.read_text(encoding="utf-8", errors="strict")
    line = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise PosgeomError(f"{path}: cannot parse the command ({exc})") from None
    env = dict(w.split("=", 1) for w in words if "=" in w and w.split("=", 1)[0].isupper())
    from posgeom.extension.engines.servers import SERVERS

    for engine, (*_, flag, length) in SERVERS.items():
        if flag in words:
            try:
                config = json.loads(_after(words, flag) or "")
            except json.JSONDecodeError as exc:
                raise PosgeomError(f"{path}: {flag} is not JSON ({exc})") from None
            ctx = _after(words, length)
            return RopeSource(
                str(path), config, engine, {"context": int(ctx) if ctx else None, "env": env}
            )
    return _llamacpp_flags(path, words)


#: llama.cpp flag -> setting: those ``llamacpp.sh`` writes and the other spellings of them
_LLAMA_FLAGS = {flag: key for key, flag in FLAGS} | {
    "--ctx-size": "n_ctx",
    "--rope-freq-scale": "rope_freq_scale",
    "--yarn-attn-factor": "yarn_attn_factor",
}


def _llamacpp_flags(path: Path, words: list[str]) -> RopeSource:
    if not any(w in _LLAMA_FLAGS or w == "--rope-scale" for w in words):
        raise PosgeomError(
            f"{path}: no vLLM, SGLang or llama.cpp command found; give a config.json, a GGUF "
            "file, a model folder or a file that extend --emit wrote"
        )
    s: dict[str, Any] = {}
    for flag, key in _LLAMA_FLAGS.items():
        value = _after(words, flag)
        if value is not None:
            s[key] = value if key == "rope_scaling_type" else float(value)
    if _after(words, "--rope-scale"):
        s["rope_freq_scale"] = 1.0 / float(_after(words, "--rope-scale") or 1)
    s["override_kv"] = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--override-kv"]
    for key in ("n_ctx", "yarn_orig_ctx"):
        if key in s:
            s[key] = int(s[key])
    return RopeSource(str(path), llamacpp_config(s), "llamacpp", s)


def _yaml_model(path: Path) -> RopeSource:
    values: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and value.strip() and not line.lstrip().startswith("#"):
            values[key.strip()] = float(value) if key.strip() != "model_name" else value.strip()
    if "max_seq_len" not in values:
        raise PosgeomError(f"{path}: no model: max_seq_len (a TabbyAPI config.yml section)")
    return RopeSource(str(path), {}, "exllamav2", values)


def read_source(path: str | os.PathLike) -> RopeSource:
    """The :class:`RopeSource` of ``path`` (module docstring), or one line naming the problem."""
    p = Path(path)
    if p.is_dir():
        if (p / "config.json").is_file():
            return read_source(p / "config.json")
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return read_gguf(ggufs[0])
        raise PosgeomError(
            f"{p} holds no config.json and not exactly one .gguf file; name the file"
        )
    if not p.is_file():
        raise PosgeomError(f"{p} does not exist; give a model folder, a config.json or a GGUF file")
    if p.suffix == ".gguf":
        return read_gguf(p)
    if p.name == "Modelfile":
        return RopeSource(str(p), {}, "ollama", {})
    if p.suffix in (".yml", ".yaml"):
        return _yaml_model(p)
    if p.suffix == ".json":
        from posgeom.io.jsonfiles import read_json

        data = read_json(p, max_bytes=_MAX)
        if not isinstance(data, dict):
            raise PosgeomError(f"{p} is not a JSON object")
        if "n_ctx" in data:
            return RopeSource(str(p), llamacpp_config(data), "llama-cpp-python", data)
        return RopeSource(str(p), data)
    return _script(p)
