"""The known silent mismatches between engines' readings of one rope configuration.

Each rule of :data:`RULES` reads a :class:`~posgeom.extension.ropecheck.read.RopeSource` and
returns :class:`Finding` s: ``theta-fallback``, ``attention-factor-dropped``, ``dynamic-switch``,
``longrope-switch``, ``context-cap``, ``legacy-type`` (what each means, which engines and
versions, and the engine sources read: ``docs/ENGINES.md``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from posgeom.extension.ropecheck.read import RopeSource

__all__ = ["RULES", "Finding", "find_mismatches", "layer_parameters"]

ALL = ("transformers5", "transformers4", "vllm", "sglang", "llamacpp", "exllamav2")


@dataclass(frozen=True)
class Finding:
    """A mismatch: ``code`` (the rule), ``message``, ``applies_to`` (engines and versions, in
    words) and ``engines`` (the engine keys whose reading it concerns)."""

    code: str
    message: str
    applies_to: str
    engines: tuple[str, ...] = ALL

    def line(self) -> str:
        return f"[{self.code}] {self.message} (applies to: {self.applies_to})"


def layer_parameters(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``layer type -> rope parameters`` as transformers 5 reads them (``""`` when not per
    layer type): ``rope_parameters``, else ``rope_scaling`` + the top-level ``rope_theta``."""
    rp = config.get("rope_parameters")
    if isinstance(rp, Mapping) and rp and all(isinstance(v, Mapping) for v in rp.values()):
        return {k: dict(v) for k, v in rp.items()}
    if isinstance(rp, Mapping) and rp:
        return {"": dict(rp)}
    scaling = config.get("rope_scaling")
    out = dict(scaling) if isinstance(scaling, Mapping) else {}
    if config.get("rope_theta") is not None:
        out.setdefault("rope_theta", config["rope_theta"])
    return {"": out} if out else {}


def kind_of(p: Mapping[str, Any]) -> str:
    return str(p.get("rope_type", p.get("type", "default")))


def _theta_fallback(src: RopeSource) -> list[Finding]:
    rp = src.config.get("rope_parameters")
    # not a rope_parameters-only config, or a file for a reader of rope_parameters
    if not isinstance(rp, Mapping) or src.config.get("rope_theta") is not None:
        return []
    if src.engine not in (None, "transformers4", "sglang"):
        return []
    out = []
    for layer, p in layer_parameters(src.config).items():
        theta = p.get("rope_theta")
        if theta is not None and float(theta) != 10000.0:
            where = f" ({layer})" if layer else ""
            out.append(
                Finding(
                    "theta-fallback",
                    f"rope_theta {float(theta):g}{where} sits only inside rope_parameters: a reader of "
                    "the top-level rope_theta runs theta = 10,000"
                    + (
                        f" (and a rope_scaling reader drops the {kind_of(p)} scaling)"
                        if kind_of(p) != "default"
                        else ""
                    ),
                    "transformers 4.x; SGLang (config.rope_theta, default 10,000); vLLM versions "
                    "before rope_parameters",
                    ("transformers4", "sglang"),
                )
            )
    return out


def _attention(src: RopeSource) -> list[Finding]:
    from posgeom.encodings.rope_types import yarn_mscale

    out = []
    if src.engine == "llamacpp" and "yarn_attn_factor" in src.settings:
        out.append(
            Finding(
                "attention-factor-dropped",
                "--yarn-attn-factor is overwritten when YaRN is on; set the GGUF key "
                "{arch}.rope.scaling.attn_factor with --override-kv instead",
                "llama.cpp since the YaRN attn_factor fix (PR 17945; llama-cpp-python 0.3.36)",
                ("llamacpp",),
            )
        )
    for p in layer_parameters(src.config).values():
        if kind_of(p) != "yarn" or src.engine in ("llamacpp", "gguf", "llama-cpp-python"):
            continue
        factor = float(p.get("factor") or 1.0)
        if p.get("attention_factor") is not None:
            wanted = float(p["attention_factor"])
        elif p.get("mscale") and p.get("mscale_all_dim"):
            wanted = (0.1 * float(p["mscale"]) * _ln(factor) + 1) / (
                0.1 * float(p["mscale_all_dim"]) * _ln(factor) + 1
            )
        else:
            continue
        engines = yarn_mscale(factor) * float(p.get("attn_factor", 1.0))
        if abs(engines / wanted - 1.0) > 1e-9:
            out.append(
                Finding(
                    "attention-factor-dropped",
                    f"YaRN attention factor {wanted:.6g} (attention_factor/mscale) is not read: "
                    f"these engines scale cos/sin by {engines:.6g}; write attn_factor = "
                    f"{wanted / yarn_mscale(factor):.6g}",
                    "vLLM before 0.32 (reads attn_factor only), SGLang (factory.py)",
                    ("vllm", "sglang"),
                )
            )
    return out


def _ln(x: float) -> float:
    import math

    return math.log(x) if x > 1 else 0.0


def _dynamic(src: RopeSource) -> list[Finding]:
    if src.engine not in (None, "vllm", "sglang", "transformers5", "transformers4"):
        return []
    if not any(kind_of(p) == "dynamic" for p in layer_parameters(src.config).values()):
        return []
    return [
        Finding(
            "dynamic-switch",
            "dynamic NTK: SGLang (and vLLM before max_trained_positions) compute the base once "
            "for max_position_embeddings x factor and use it at every length; vLLM 0.32 divides "
            "by max_trained_positions (default max_position_embeddings): the unscaled base, with "
            "no cos/sin cache past max_position_embeddings; transformers rescales only past "
            "max_position_embeddings",
            "vLLM (rope_parameters and rope_scaling versions), SGLang against transformers 4 and 5",
            ("vllm", "sglang"),
        )
    ]


def _longrope(src: RopeSource) -> list[Finding]:
    layers = layer_parameters(src.config).values()
    if not any(kind_of(p) in ("longrope", "su") for p in layers):
        return []
    out = [
        Finding(
            "longrope-switch",
            "LongRoPE switches to the long factors per sequence length in transformers, at start-up "
            "when --max-model-len exceeds original_max_position_embeddings in vLLM/SGLang (then for "
            "every prompt), on the allocated context (-c) in llama.cpp and on max_seq_len in exllamav2",
            "transformers 4/5, vLLM, SGLang, llama.cpp, exllamav2",
        )
    ]
    if src.config.get("original_max_position_embeddings") is None and src.engine in (
        None,
        "transformers4",
    ):
        out.append(
            Finding(
                "longrope-switch",
                "no top-level original_max_position_embeddings: transformers 4 switches at "
                "max_position_embeddings, so the long factors are never used",
                "transformers 4.45-4.57",
                ("transformers4",),
            )
        )
    return out


def _context(src: RopeSource) -> list[Finding]:
    from posgeom.extension.engines.servers import SERVERS, derived_cap

    out = []
    mpe = src.config.get("max_position_embeddings")
    context = src.settings.get("context") or src.settings.get("n_ctx") or mpe
    for p in layer_parameters(src.config).values():
        key = "original_max_position_embeddings"
        kind, l0 = kind_of(p), p.get(key) or src.config.get(key)
        if kind in ("default", "dynamic") or not l0 or not context:
            continue
        l0 = int(l0)
        if int(context) <= l0:
            out.append(
                Finding(
                    "context-cap",
                    f"{kind} scaling is on but the context is left at the trained length {l0} "
                    f"({context}): set it to the target length",
                    "every engine",
                )
            )
    env_name = SERVERS[src.engine][1] if src.engine in SERVERS else None
    if env_name and mpe and src.settings.get("context"):
        for p in layer_parameters(src.config).values():
            cap = derived_cap(p, int(mpe))
            if src.settings["context"] > cap and env_name not in src.settings.get("env", {}):
                out.append(
                    Finding(
                        "context-cap",
                        f"context {src.settings['context']} is past the derived cap {cap}: the engine "
                        f"refuses to start without {env_name}=1",
                        src.engine,
                        (src.engine,),
                    )
                )
    return out


def _legacy(src: RopeSource) -> list[Finding]:
    for key in ("rope_scaling", "rope_parameters"):
        p = src.config.get(key)
        if isinstance(p, Mapping) and "type" in p and "rope_type" not in p:
            return [
                Finding(
                    "legacy-type",
                    f"{key} has the legacy key 'type' ({p['type']!r}) and no 'rope_type': a reader "
                    "that looks up rope_type alone (vLLM's get_rope defaults to 'default') drops the "
                    "scaling unless the config went through a patch; write rope_type",
                    "vLLM get_rope on unpatched dicts; transformers < 4.45 for new types",
                    ("vllm", "transformers4"),
                )
            ]
    return []


RULES: dict[str, Callable[[RopeSource], list[Finding]]] = {
    "theta-fallback": _theta_fallback,
    "attention-factor-dropped": _attention,
    "dynamic-switch": _dynamic,
    "longrope-switch": _longrope,
    "context-cap": _context,
    "legacy-type": _legacy,
}


def find_mismatches(src: RopeSource) -> list[Finding]:
    """Every rule's findings on ``src``, in :data:`RULES` order."""
    return [f for rule in RULES.values() for f in rule(src)]
