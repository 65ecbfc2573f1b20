"""The recommended strategy in every engine's spelling (``posgeom extend --emit ENGINE``).

:data:`ENGINES` maps an engine name to its writer (:class:`~.base.EngineTarget` ->
:class:`~.base.Emitted`), one module per engine family: :mod:`.transformers`, :mod:`.servers`
(vLLM, SGLang), :mod:`.llamacpp` (llama.cpp, llama-cpp-python, Ollama), :mod:`.exllama`. A writer
that cannot express a strategy refuses it with the reason (no file); one that writes the nearest
form states the difference in ``notes``. :func:`write_engines` writes the files and ``engines.md``
(each engine's file, notes, refusal and ``rope-check`` verdict) atomically, with the GGUF copy
llama3 needs in llama.cpp (:mod:`.gguf_tensors`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from posgeom._errors import PosgeomError
from posgeom.extension.engines.base import Emitted, EngineTarget
from posgeom.extension.engines.exllama import exllamav2
from posgeom.extension.engines.llamacpp import llamacpp, llamacpp_python, ollama
from posgeom.extension.engines.servers import sglang, vllm
from posgeom.extension.engines.transformers import transformers4, transformers5

__all__ = [
    "ENGINES",
    "Emitted",
    "EngineTarget",
    "emit",
    "engine_names",
    "gguf_architecture",
    "target_of",
    "write_engines",
]

#: engine name -> writer (like transformers' ``ROPE_INIT_FUNCTIONS``)
ENGINES: dict[str, Callable[[EngineTarget], Emitted]] = {
    "transformers5": transformers5,
    "transformers4": transformers4,
    "vllm": vllm,
    "sglang": sglang,
    "llamacpp": llamacpp,
    "llama-cpp-python": llamacpp_python,
    "ollama": ollama,
    "exllamav2": exllamav2,
}
_ALIASES = {"transformers": "transformers5", "tabby": "exllamav2", "llama.cpp": "llamacpp"}


def engine_names(names: Sequence[str] | str) -> list[str]:
    """The engines named (``"all"``: every one; aliases ``transformers``, ``tabby``,
    ``llama.cpp``), in registry order, or one line naming the unknown one."""
    wanted = [names] if isinstance(names, str) else list(names)
    out: set[str] = set()
    for name in wanted:
        key = _ALIASES.get(name, name)
        if key == "all":
            out.update(ENGINES)
        elif key in ENGINES:
            out.add(key)
        else:
            raise PosgeomError(
                f"unknown engine {name!r} for --emit; use all or one of {', '.join(ENGINES)}"
            )
    return [n for n in ENGINES if n in out]


def emit(target: EngineTarget, names: Sequence[str] | str = "all") -> list[Emitted]:
    """Each named engine's :class:`Emitted` for ``target``."""
    return [ENGINES[n](target) for n in engine_names(names)]


def gguf_architecture(path: str | os.PathLike) -> str | None:
    """``general.architecture`` of a GGUF file (its header only), or None when unreadable."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    try:
        field = GGUFReader(str(path)).fields.get("general.architecture")
    except (OSError, ValueError):
        return None
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")


def _arch(model: str, gguf_file: str | None) -> str | None:
    if gguf_file:
        return gguf_architecture(Path(model) / gguf_file)
    config = Path(model) / "config.json"
    if config.is_file():
        from posgeom.io.jsonfiles import read_json

        kind = read_json(config, max_bytes=4 << 20).get("model_type")
        return {"mistral": "llama"}.get(kind, kind) if isinstance(kind, str) else None
    return None


def target_of(result: Any, *, model: Any = "MODEL", gguf_file: str | None = None) -> EngineTarget:
    """The :class:`EngineTarget` of an :class:`~posgeom.extension.ExtensionResult`'s
    recommended strategy (RoPE models only: one line otherwise)."""
    params = result.rope_parameters
    if params is None:
        raise PosgeomError(
            f"--emit writes rotary settings; the {result.model.family} family has none (drop --emit)"
        )
    own = (result.model.params.get("rope_parameters") or {}).get("rope_theta")
    name = str(model) if isinstance(model, (str, os.PathLike)) else "MODEL"
    return EngineTarget(
        result.recommended.name,
        params,
        int(result.model.params["head_dim"]),
        result.trained_length,
        result.target_length,
        model=name,
        gguf_file=str(Path(name) / gguf_file) if gguf_file else None,
        gguf_arch=_arch(name, gguf_file) if name != "MODEL" else None,
        kind=result.recommended.kind,
        model_theta=None if own is None else float(own),
    )


def engines_markdown(target: EngineTarget, emitted: Sequence[Emitted], checks: dict) -> str:
    """``engines.md``: per engine its file or refusal, its notes and ``rope-check``'s verdict."""
    lines = [
        f"# {target.strategy} in each engine ({target.trained_length} -> {target.target_length})",
        "",
    ]
    for e in emitted:
        head = f"`{e.filename}`" if e.filename else "refused"
        lines.append(f"## {e.engine}: {head}")
        if e.refused:
            lines.append(f"- refused: {e.refused}")
        lines += [f"- {note}" for note in e.notes]
        for finding in checks.get(e.engine, []):
            lines.append(f"- rope-check: {finding}")
        if e.filename and e.engine in checks and not checks[e.engine]:
            lines.append("- rope-check: no known mismatch")
        lines.append("")
    return "\n".join(lines)


def write_engines(
    folder: str | os.PathLike, target: EngineTarget, names: Sequence[str] | str
) -> list[Emitted]:
    """Write each engine's file and ``engines.md`` into ``folder`` (module docstring); every
    emitted file is read back by ``rope-check`` (:mod:`posgeom.extension.ropecheck`), whose
    findings go into ``engines.md``."""
    from posgeom.extension.engines.gguf_tensors import write_rope_freqs_gguf
    from posgeom.extension.ropecheck import check_emitted
    from posgeom.io._atomic import atomic_write_text

    emitted = emit(target, names)
    checks = {e.engine: check_emitted(e, target) for e in emitted if e.filename}
    out = Path(folder)
    for copy in {e.gguf_copy for e in emitted if e.gguf_copy and target.gguf_file}:
        write_rope_freqs_gguf(target.gguf_file, target, out / copy)
    for e in emitted:
        if e.filename and e.text is not None:
            atomic_write_text(out / e.filename, e.text)
    atomic_write_text(out / "engines.md", engines_markdown(target, emitted, checks))
    return emitted
