"""The support matrix: every architecture of transformers' model mapping, built tiny, extracted.

``python -m studies.support [--only TYPE ...]`` builds a tiny random model (2 blocks, width 64,
vocabulary 256, every size field of the configuration and its sub-configurations shrunk) of each
``model_type`` in ``transformers.models.auto.modeling_auto.MODEL_MAPPING_NAMES``, runs
:func:`posgeom.models.find_positional_mechanisms` on it and checks each rotary mechanism against
what the model computes: the model's own rotary module is called on positions ``0 .. 7`` and the
angles ``atan2(sin, cos)`` of every column it returns must be posgeom's ``p w_k`` to
``1e-6 max(1, |p w_k|)`` (every plane found, no column left over). It writes
``docs/SUPPORT.md``: one row per architecture (what ``extract`` found, with the layers; whether
``analyze-model``, ``probe`` and ``extend`` accept that mechanism), then every skip with its
reason. A new architecture of a later transformers release is a new row, never silence.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studies._common import CACHE, DOCS, read_jsonl
from studies.support_build import fill_zeros, fit_sections
from studies.support_check import CHECK_POSITIONS, rotary_check, rotary_error
from studies.support_runs import COMMANDS, cell, run_tally, runs
from studies.support_unread import section

__all__ = [
    "CHECK_POSITIONS",
    "Row",
    "build",
    "main",
    "page",
    "rotary_check",
    "rotary_error",
    "run_one",
]

#: size fields and their tiny values (set where the configuration has the field)
TINY = {
    **dict.fromkeys(
        ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers"), 2
    ),
    **dict.fromkeys(("encoder_layers", "decoder_layers"), 2),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model", "embed_dim", "dim"), 64),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads", "n_heads"), 4),
    **dict.fromkeys(("encoder_attention_heads", "decoder_attention_heads"), 4),
    "num_key_value_heads": 2,
    **dict.fromkeys(("intermediate_size", "n_inner", "d_ff", "ffn_dim", "hidden_dim"), 64),
    **dict.fromkeys(("encoder_ffn_dim", "decoder_ffn_dim", "intermediate_size_mlp"), 64),
    "vocab_size": 256,
    "head_dim": 16,
    "d_kv": 16,
    **dict.fromkeys(("num_local_experts", "n_routed_experts", "num_experts"), 4),
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "n_group": 1,
    "topk_group": 1,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "rotary_dim": 8,
}
#: token-id fields kept inside the tiny vocabulary
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
#: per-layer lists resized to the tiny depth (both values kept when there are two)
PER_LAYER = ("layer_types", "no_rope_layers")
#: kinds whose mechanism without layers is a table added to the input
INPUT_KINDS = ("learned", "sinusoidal", "conv_positions")
#: a model above this many parameters after shrinking is skipped (CPU time of the matrix)
MAX_PARAMETERS = 30_000_000


@dataclass
class Row:
    """One architecture: ``status`` ``"ok"`` / ``"skip"``, the mechanisms (``kind``,
    ``layers``), the rotary check's largest angle error and the other commands' verdicts."""

    model_type: str
    cls: str = ""
    status: str = "skip"
    reason: str = ""
    mechanisms: list[dict[str, Any]] = field(default_factory=list)
    rotary_error: float | None = None
    rotary_unchecked: int = 0
    rotary_notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    commands: dict[str, str] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)


def _per_layer(values: list[Any], depth: int) -> list[Any]:
    distinct = list(dict.fromkeys(values))
    picked = distinct[:depth] if len(distinct) >= depth else values[:depth]
    return (picked * depth)[:depth]


def _shrink(config: Any, seen: set[int] | None = None) -> None:
    """Shrink ``config`` and its sub-configurations in place (see :data:`TINY`)."""
    from transformers import PretrainedConfig

    seen = set() if seen is None else seen
    if id(config) in seen:
        return
    seen.add(id(config))
    mla = isinstance(getattr(config, "qk_rope_head_dim", None), int)
    for name, value in TINY.items():
        if name == "head_dim" and mla:  # MLA: head_dim is derived from the rope part
            continue
        if name == "num_key_value_heads" and mla:  # MLA: every head has its own key
            value = TINY["num_attention_heads"]
        if isinstance(getattr(config, name, None), int) and not isinstance(
            getattr(config, name), bool
        ):
            setattr(config, name, value)
    depth = next(
        (getattr(config, n) for n in ("num_hidden_layers", "num_layers") if hasattr(config, n)), 2
    )
    for name in PER_LAYER:
        values = getattr(config, name, None)
        if isinstance(values, (list, tuple)) and values:
            setattr(config, name, _per_layer(list(values), int(depth)))
    layers = getattr(config, "attention_layers", None)  # GPT-Neo: spelt by attention_types
    if isinstance(layers, list) and layers and len(layers) != depth:
        config.attention_layers = _per_layer(layers, int(depth))
        config.attention_types = [[config.attention_layers, 1]]
    for name in TOKEN_IDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value >= TINY["vocab_size"]:
            setattr(config, name, 1)
    for value in list(vars(config).values()):
        if isinstance(value, PretrainedConfig):
            _shrink(value, seen)
    config._attn_implementation = "eager"


def build(model_type: str) -> Any:
    """A tiny random model of ``model_type`` (``AutoModel.from_config``, seed 0, eval mode)."""
    import torch
    from transformers import AutoConfig, AutoModel

    default = AutoConfig.for_model(model_type)
    sizes = {k: v for k, v in TINY.items() if isinstance(getattr(default, k, None), int)}
    if "qk_rope_head_dim" in sizes:  # MLA: head_dim is derived from the rope part; every
        sizes.pop("head_dim", None)  # head has its own key
        sizes["num_key_value_heads"] = TINY["num_attention_heads"]
    sizes.update(
        {  # per-layer lists with both of their values, so NoPE and global layers stay
            name: _per_layer(list(values), 2)
            for name in PER_LAYER
            if isinstance(values := getattr(default, name, None), (list, tuple)) and values
        }
    )
    try:  # through the constructor, so derived fields (MLA's qk_head_dim, layer_types) follow
        config = AutoConfig.for_model(model_type, **sizes)
    except Exception:
        config = default
    _shrink(config)
    torch.manual_seed(0)
    model = AutoModel.from_config(config)
    fit_sections(model)
    fill_zeros(model)
    return model.eval()


# ------------------------------------------------------------------------------ commands
def _commands(model: Any, found: list[Any]) -> dict[str, str]:
    """What analyze-model, probe and extend do with the mechanisms (per the per-layer map)."""
    from posgeom._errors import PosgeomError
    from posgeom.extension.model import model_from_config

    kinds = {m.kind for m in found}
    none_layers = [i for m in found if m.kind == "none" for i in (m.layers or ())]
    scored = [
        m.kind for m in found if m.kind != "none" and m.params.encodings(2, start=0, params={})
    ]
    nope = f"; no mechanism on layers {none_layers}" if none_layers else ""
    analyze = ("scores " + "+".join(dict.fromkeys(scored)) if scored else "layers only") + nope
    probe = ("table + layers" if "learned" in kinds else "layers") + nope
    try:
        ext = model_from_config(model.config, model=model, name="model")
        rotating = ext.params.get("layers")
        extend = ext.family + (f" (scales layers {rotating})" if rotating else "")
    except PosgeomError as exc:
        extend = "refused: " + str(exc).split(";")[0][:80]
    return {"analyze-model": analyze, "probe": probe, "extend": extend}


def _at_input(mech: Any) -> bool:
    """Whether ``mech`` is a table added to the input (a relative sinusoid is not)."""
    return getattr(mech.params, "scope", "input" if mech.kind in INPUT_KINDS else "") == "input"


def run_one(model_type: str) -> Row:
    """Build, extract and check one architecture (a failure to build is a skip with its reason)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    from posgeom.models import find_positional_mechanisms

    row = Row(model_type, str(MODEL_MAPPING_NAMES.get(model_type, "")))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = build(model_type)
    except Exception as exc:
        row.reason = f"cannot be built from its config alone: {type(exc).__name__}: {exc}"
        row.reason = row.reason.splitlines()[0][:160]
        return row
    size = sum(p.numel() for p in model.parameters())
    if size > MAX_PARAMETERS:
        row.reason = f"{size / 1e6:.0f}M parameters after shrinking (sub-models not shrunk)"
        return row
    try:
        found = list(find_positional_mechanisms(model, on_missing="none"))
    except Exception as exc:
        row.status, row.reason = "error", f"extract failed: {type(exc).__name__}: {exc}"[:160]
        return row
    row.status = "ok"
    row.mechanisms = [
        {"kind": m.kind, "layers": m.layers, "stack": m.stack, "input": _at_input(m)} for m in found
    ]
    checks = [rotary_check(model, m) for m in found if m.kind == "rotary"]
    errors = [e for e, _ in checks if e is not None]
    row.rotary_error = max(errors) if errors else None
    row.rotary_unchecked = len(checks) - len(errors)
    row.rotary_notes = sorted({why for e, why in checks if e is None})
    row.commands = _commands(model, found)
    row.runs = runs(model, {m.kind for m in found})
    return row


# ------------------------------------------------------------------------------ page
def _found(row: Row) -> str:
    parts = []
    for m in row.mechanisms:
        where = ",".join(map(str, m["layers"] or ())) or "-"
        if m["layers"] is None:  # an input table, or blocks the layer map does not find
            where = "input" if m.get("input", m["kind"] in INPUT_KINDS) else "blocks not mapped"
        stack = f"{m['stack']} " if m["stack"] else ""
        parts.append(f"{m['kind']} ({stack}{where})")
    return "; ".join(parts)


def _tally(ok: list[Row]) -> str:
    """Architectures per mechanism kind and the rotary checks, as one sentence."""
    kinds: dict[str, int] = {}
    for r in ok:
        for kind in dict.fromkeys(m["kind"] for m in r.mechanisms):
            kinds[kind] = kinds.get(kind, 0) + 1
    rotary = [r for r in ok if r.rotary_error is not None or r.rotary_unchecked]
    checked = sum(r.rotary_error is not None and r.rotary_error <= 1e-6 for r in rotary)
    unchecked = sum(r.rotary_unchecked for r in rotary)
    only_none = sum(all(m["kind"] == "none" for m in r.mechanisms) for r in ok)
    per_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (
        f"Architectures per kind: {per_kind}; with no mechanism at all: {only_none}. Rotary: "
        f"{len(rotary)} architectures, {checked} checked to 1e-6, {unchecked} rotary modules "
        "left unchecked (their reason in the row)."
    )


def page(rows: list[Row], *, total: int | None = None) -> str:
    """``docs/SUPPORT.md`` from the rows."""
    import transformers

    seconds = sum(r.seconds for r in rows)
    ran = sum(run["seconds"] for r in rows for run in r.runs.values())
    ok = [r for r in rows if r.status == "ok"]
    positional = [r for r in ok if any(m["kind"] != "none" for m in r.mechanisms)]
    lines = [
        "# Support matrix: every architecture of transformers' model mapping",
        "",
        f"Generated by `python -m studies.support` (transformers {transformers.__version__}, "
        f"{len(rows)} model types, {seconds:.0f} s of building, checking and running in all on "
        f"this machine, {ran:.0f} s of it the smoke runs, one thread per process). Each model is a tiny random "
        "one (2 blocks, width 64) built from its configuration class; `extract` is "
        "`posgeom.models.find_positional_mechanisms`, with the 0-based blocks of each mechanism "
        "in brackets (`input`: a table added before the first block). The rotary check calls "
        "the model's own rotary module on positions 0-7 with its own signature, every axis at "
        "position p (`(x, position_ids)` of shape (1, P); M-RoPE's (3, 1, P); a vision "
        "tower's patch grid (2, P), (P, 2) or (1, P, 2)), and compares the angles of the "
        "`(cos, sin)` it returns with posgeom's (largest error relative to max(1, |angle|); "
        "`ok` is below 1e-6); a module that answers none of these forms is left unchecked, "
        "with its class and signature in the row. "
        "Where a mechanism is rotary or a learned table, `analyze-model`, `probe` and `extend` "
        "are run (`studies/support_runs.py`: the library functions the commands call, on 48 "
        "synthetic sequences of 10 token ids whose distribution drifts with position; "
        "analyze-model on 8 positions: the layers scored, the range of their scale-optimal "
        "stress and the encodings scored; probe: the learned table's absolute-position error "
        "and the layers' linear-probe error against chance; extend on the model saved to a "
        "folder, trained length 16, target 32: the family, the recommended strategy and the "
        "layers it scales); **refused** is posgeom's one-line refusal, **tiny** a fault of the "
        "tiny model itself (its own forward on token ids fails too, or it does not save and load "
        "back), **error** a posgeom bug. Other rows say what the command would do "
        "with the mechanism (`not run`).",
        "",
        f"Rows: {len(rows)} of {total or len(rows)} model types"
        + ("" if total in (None, len(rows)) else " (a partial run: rerun to add the rest)")
        + f". Built: {len(ok)}; with a positional mechanism: {len(positional)}; skipped or "
        f"failed: {len(rows) - len(ok)} (reasons at the end). {_tally(ok)}",
        "",
        run_tally([r.runs for r in ok]),
        "",
        "| architecture | class | extract | rotary check | analyze-model | probe | extend |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ok:
        err = r.rotary_error
        check = "-" if err is None else ("ok" if err <= 1e-6 else f"**{err:.1e}**")
        if r.rotary_unchecked:
            why = "; ".join(r.rotary_notes) or "not callable with positions"
            check += f" ({r.rotary_unchecked} unchecked: {why})"
        cells = " | ".join(cell(r.runs.get(c), r.commands[c]) for c in COMMANDS)
        lines.append(f"| {r.model_type} | {r.cls} | {_found(r)} | {check} | {cells} |")
    lines += ["", *section({r.model_type for r in ok})]
    lines += ["", "## Skipped", "", "| architecture | reason |", "|---|---|"]
    lines += [
        f"| {r.model_type} | {r.reason.replace('|', '/')} |" for r in rows if r.status != "ok"
    ]
    return "\n".join(lines) + "\n"


def _row(record: dict[str, Any]) -> Row:
    return Row(**record)


def main(argv: list[str] | None = None) -> int:
    """Build every model type (or ``--only``), keeping each row in ``--cache`` (JSON lines,
    resumable; ``--shard i/k`` runs every k-th type from the i-th, for parallel processes), then
    write the page from the cache when every type has a row."""
    import dataclasses
    import json

    import torch
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    from posgeom.io._atomic import atomic_write_text

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="these model types only")
    parser.add_argument("--shard", default="0/1", help="i/k: every k-th type from the i-th")
    parser.add_argument("--cache", default=str(CACHE / "support.jsonl"))
    parser.add_argument("--output", default=str(DOCS / "SUPPORT.md"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    i, k = (int(v) for v in args.shard.split("/"))
    types = args.only or sorted(MODEL_MAPPING_NAMES)
    cache = Path(args.cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = {r["model_type"]: r for r in read_jsonl(cache)}
    for t in types[i::k]:
        if t in done:
            continue
        t0 = time.perf_counter()
        row = run_one(t)
        row.seconds = round(time.perf_counter() - t0, 3)
        with cache.open("a") as f:
            f.write(json.dumps(dataclasses.asdict(row)) + "\n")
        print(t, row.status, _found(row) or row.reason, flush=True)
    done = {r["model_type"]: r for r in read_jsonl(cache)}
    rows = [_row(done[t]) for t in types if t in done]
    atomic_write_text(args.output, page(rows, total=len(types)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
