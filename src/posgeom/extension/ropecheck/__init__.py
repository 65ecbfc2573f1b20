"""``posgeom rope-check``: what each engine computes from one rope configuration, and the known
silent mismatches between them.

:func:`rope_check` reads a source (:mod:`.read`), lists per layer type and engine the rope type,
base, attention factor (the cos/sin scale), context cap and the range of inverse frequencies that
engine computes (by :func:`posgeom.encodings.rope_types.rope_frequencies`, with the engine's own
reading of the keys), and runs the rules of :mod:`.rules`. The command exits 0 when no rule fires,
1 when one does, 2 on bad input. :func:`check_emitted` runs the rules on what ``extend --emit``
writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posgeom._errors import PosgeomError
from posgeom.extension.ropecheck.read import RopeSource, read_source
from posgeom.extension.ropecheck.rules import Finding, find_mismatches, kind_of, layer_parameters

__all__ = ["RopeCheck", "check_emitted", "read_source", "rope_check"]

CONFIG_READERS = ("transformers5", "transformers4", "vllm", "sglang")
_LLAMA = ("llamacpp", "gguf", "llama-cpp-python")


@dataclass(frozen=True)
class RopeCheck:
    """``source``, ``readings`` (one dict per layer type and engine) and ``findings``."""

    source: RopeSource
    readings: list[dict[str, Any]]
    findings: list[Finding]

    @property
    def clean(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        src = self.source
        out = [
            f"{src.path}: " + (f"{src.engine} settings" if src.engine else "model configuration")
        ]
        for r in self.readings:
            layer = f"[{r['layer']}] " if r["layer"] else ""
            freq = r.get("inv_freq")
            span = f", w in [{freq[0]:.3g}, {freq[1]:.3g}]" if freq else ""
            out.append(
                f"  {layer}{r['engine']}: {r['rope_type']}, theta {r['theta']:g}, attention x"
                f"{r['attention']:.4g}, cap {r['cap']}{span}"
            )
        out += [f"  MISMATCH {f.line()}" for f in self.findings]
        out.append(
            "  clean: no known mismatch" if self.clean else f"  {len(self.findings)} mismatch(es)"
        )
        return out


def _head_dim(config: Mapping[str, Any]) -> int | None:
    if config.get("head_dim"):
        return int(config["head_dim"])
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    return int(hidden) // int(heads) if hidden and heads else None


def _as_read(
    engine: str, src: RopeSource, p: dict[str, Any]
) -> tuple[dict[str, Any], float | None]:
    """``(parameters as the engine reads them, attention factor override or None)``."""
    from posgeom.encodings.rope_types import yarn_mscale

    if engine in ("transformers4", "sglang") and src.config.get("rope_theta") is None:
        p = {**p, "rope_theta": 10000.0}  # the top-level default these readers fall back to
    if engine == "transformers4" and "rope_scaling" not in src.config:
        p = {"rope_type": "default", "rope_theta": p.get("rope_theta", 10000.0)}
    kind, factor = kind_of(p), float(p.get("factor") or 1.0)
    if engine in ("vllm", "sglang") and kind == "dynamic":
        ratio = factor * factor - factor + 1  # SGLang, vLLM before max_trained_positions
        if engine == "vllm":  # 0.32: f max_position / max_trained_positions - (f - 1)
            mpe = float(src.config.get("max_position_embeddings") or 1.0)
            ratio = factor * mpe / float(p.get("max_trained_positions") or mpe) - (factor - 1)
        theta = p.get("rope_theta", 10000.0)
        if ratio == 1.0:
            return {"rope_type": "default", "rope_theta": theta}, None
        return {"rope_type": "ntk", "rope_theta": theta, "factor": ratio}, None
    if engine in ("vllm", "sglang") and kind == "yarn":
        return p, yarn_mscale(factor) * float(p.get("attn_factor", 1.0))
    if engine in _LLAMA and kind == "yarn":
        return p, yarn_mscale(factor) * float(src.settings.get("scaling_attn_factor", 1.0))
    return p, None


def _cap(engine: str, src: RopeSource, p: dict[str, Any]) -> Any:
    from posgeom.extension.engines.servers import derived_cap

    mpe = src.config.get("max_position_embeddings")
    if engine in ("vllm", "sglang") and mpe:
        return src.settings.get("context") or derived_cap(p, int(mpe))
    return mpe


def _reading(engine: str, src: RopeSource, layer: str, p: dict[str, Any]) -> dict[str, Any]:
    from posgeom.encodings.rope_types import rope_frequencies

    q, attention = _as_read(engine, src, p)
    kind, theta = kind_of(q), float(q.get("rope_theta", 10000.0))
    cap = _cap(engine, src, q)
    out = {"layer": layer, "engine": engine, "rope_type": kind, "theta": theta, "cap": cap}
    hd = _head_dim(src.config)
    try:
        w, a = rope_frequencies(
            kind if kind != "su" else "longrope", hd or 64, theta, q, seq_len=cap, context=cap
        )
    except PosgeomError:
        w, a = None, 1.0
    out["attention"] = a if attention is None else attention
    factors = src.settings.get("rope_freqs") if engine in _LLAMA else None
    if factors is not None and w is not None and len(factors) == w.size:
        w = w / np.asarray(factors, dtype=np.float64)  # ggml_rope_ext's freq_factors
        out["rope_type"] = f"{kind} / rope_freqs"
    if hd and w is not None:
        positive = w[w > 0]
        out["inv_freq"] = [float(positive.min()), float(positive.max())] if positive.size else None
    return out


def rope_check(path: str | os.PathLike, *, engine: str | None = None) -> RopeCheck:
    """Read ``path`` and check it (module docstring); ``engine``: only that engine's reading of a
    model configuration (default: every configuration reader)."""
    src = read_source(path)
    if engine is not None and engine not in (*CONFIG_READERS, "llamacpp"):
        raise PosgeomError(
            f"unknown --engine {engine!r}; use one of {', '.join((*CONFIG_READERS, 'llamacpp'))}"
        )
    engines = (src.engine,) if src.engine else ((engine,) if engine else CONFIG_READERS)
    readings = [
        _reading(e, src, layer, p)
        for layer, p in layer_parameters(src.config).items()
        for e in engines
        if src.config
    ]
    findings = [f for f in find_mismatches(src) if engine is None or engine in f.engines]
    return RopeCheck(src, readings, findings)


def check_emitted(emitted: Any, target: Any) -> list[str]:
    """The rules' findings on one engine's emitted settings, as lines (``extend --emit``)."""
    from posgeom.extension.engines.servers import SERVERS, setting_name

    s, engine, name = emitted.settings, emitted.engine, emitted.filename
    if engine in SERVERS:
        *_, flag, length = SERVERS[engine]
        run = {"context": s[setting_name(length)], "env": s["env"]}
        src = RopeSource(name, dict(s[setting_name(flag)]), engine, run)
    elif engine in ("llamacpp", "llama-cpp-python"):
        from posgeom.extension.ropecheck.read import llamacpp_config

        src = RopeSource(name, llamacpp_config(s), "llamacpp", dict(s))
    elif engine in ("transformers5", "transformers4"):
        src = RopeSource(name, dict(s), engine)
    else:
        return []
    return [f.line() for f in find_mismatches(src)]
