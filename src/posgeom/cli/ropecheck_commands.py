"""``posgeom rope-check``: what each engine computes from a rope configuration, and the known
silent mismatches between them (exit 0 clean, 1 when one is found, 2 on bad input)."""

from __future__ import annotations

import argparse
from typing import Any

from posgeom._errors import printable
from posgeom.cli._options import add_command


def _rope_check(args: argparse.Namespace) -> int:
    """check a rope config as each engine reads it (transformers, vLLM, SGLang, llama.cpp)

    Read a model folder, a config.json, a GGUF file or a file written by 'extend --emit', print per
    layer type the rope type, base, attention scaling, context cap and inverse-frequency range each
    engine computes from it, and flag the known silent mismatches (theta fallback, a dropped YaRN
    attention factor, the dynamic and LongRoPE switch rules, a context cap left at the trained
    length, a legacy 'type' key). Exit 0: clean; 1: a mismatch was found; 2: bad input."""
    from posgeom.extension.ropecheck import rope_check

    check = rope_check(args.source, engine=args.engine)
    for line in check.lines():
        print(printable(line))
    return 0 if check.clean else 1


def register(sub: Any) -> None:
    p = add_command(sub, "rope-check", _rope_check)
    p.add_argument("source", help="model folder, config.json, .gguf, or an emitted engine file")
    p.add_argument(
        "--engine",
        default=None,
        help="only this engine's reading: transformers5, transformers4, vllm, sglang, llamacpp",
    )
