"""The default command at scale (issue 15): posgeom's whole `posgeom geometry` and its MDS step
against the peer's MDS, both estimators, whole processes one after another.

    python -m benchmarks.bench_default                 # n = 1,024, 8,192 and 131,072
    python -m benchmarks.bench_default --sizes 1024    # one size

Every measurement is one fresh process run under ``/usr/bin/time`` (wall time and the kernel's
peak resident memory of the whole process: interpreter, imports, loading the counts included):

  peer           dense square-root probabilities, one GEMM ``S S^T`` for the chords, then
                 scikit-bio ``pcoa`` (top 64): what a user without posgeom runs
  sklearn        the same distances, then scikit-learn ``ClassicalMDS`` (top 64)
  mds plugin     ``classical_mds(positional_distributions(C), 64)``
  mds corrected  ``classical_mds(estimate_geometry(C), 64)`` (the recommended estimator)
  geometry       ``posgeom geometry c.npz -d 768 -o DIR`` (every default: recommended
                 estimator, all baselines, rank curve, noise floor, refinement where it runs),
                 and the same with ``--estimator plugin``
  compare        ``posgeom compare --counts c.npz -d 768 -o DIR`` (every default: the
                 comparison table, heads, rank curve 1..16, stationarity; sampled above
                 n = 2,048)

Counts: n = 1,024 and 8,192 are the synthetic Zipf counts of ``benchmarks.workloads.zipf_counts``
(V = 30,522); n = 131,072 is the IMDB long-context corpus of ``bench_scale`` (44 documents of
131,072 words, V = 50,000), where the peers cannot run (an n x n float64 is 128 GiB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import CACHE, ROOT

PEER = """
import sys, numpy as np, scipy.sparse as sp
from posgeom import PositionCounts
c = PositionCounts.load(sys.argv[1]).counts.astype(np.float64)
s = np.sqrt(c.multiply(1.0 / np.asarray(c.sum(axis=1))).toarray())
g = s @ s.T
del s
d = np.sqrt(np.clip(2.0 - 2.0 * g, 0.0, None), out=g)
np.fill_diagonal(d, 0.0)
d = 0.5 * (d + d.T)
if sys.argv[2] == "pcoa":
    from skbio import DistanceMatrix
    from skbio.stats.ordination import pcoa
    print(pcoa(DistanceMatrix(d, validate=False), dimensions=64).eigvals.to_numpy()[:3])
else:
    from sklearn.manifold import ClassicalMDS
    print(ClassicalMDS(n_components=64, metric="precomputed").fit_transform(d)[:1, :2])
"""

MDS = """
import sys
from posgeom import PositionCounts, classical_mds, estimate_geometry, positional_distributions
c = PositionCounts.load(sys.argv[1])
data = positional_distributions(c) if sys.argv[2] == "plugin" else estimate_geometry(c)
print(classical_mds(data, 64).eigenvalues[:3])
"""

# the plug-in MDS step's eigenproblem as before issue 25 (ARPACK, k = 64 + 8), the same run
ARPACK = """
import sys, numpy as np
from posgeom import PositionCounts, positional_distributions
from posgeom.embed.eigensolvers import arpack_top_eigh
from posgeom.geometry.gram import FactoredGram
d = positional_distributions(PositionCounts.load(sys.argv[1]))
k = int(sys.argv[2]) + 8  # classical_mds's margin for ties
print(arpack_top_eigh(FactoredGram(d, np.zeros(d.n_positions)).operator(), k, 0, 0.0).values[:3])
"""

# the plug-in eigenproblem at the rank `geometry -d 768` asks for (block Krylov, as classical_mds)
RANK768 = """
import sys
from posgeom import PositionCounts, classical_mds, positional_distributions
print(classical_mds(positional_distributions(PositionCounts.load(sys.argv[1])), 768).eigenvalues[:3])
"""


def synthetic_counts(n: int) -> Path:
    """``benchmarks.workloads.zipf_counts(n)`` as a PositionCounts file (what `posgeom geometry` reads)."""
    path = CACHE / f"zipf_counts_{n}.npz"
    if path.exists():
        return path
    from benchmarks.workloads import zipf_counts
    from posgeom.corpus.counting import PositionCounts

    c = zipf_counts(n).astype(np.int64)
    totals = np.asarray(c.sum(axis=1)).ravel().astype(np.int64)
    CACHE.mkdir(exist_ok=True)
    PositionCounts(
        counts=c,
        totals=totals,
        n_sequences=int(totals.max()),
        n_tokens=int(totals.sum()),
        options={"max_positions": n, "vocab_size": int(c.shape[1])},
    ).save(path)
    return path


def counts_for(n: int) -> Path:
    if n == 131_072:
        from benchmarks import bench_scale

        return bench_scale.long_counts_path()
    return synthetic_counts(n)


def timed(argv: list[str], cap: float) -> dict:
    """Run ``argv`` under /usr/bin/time: wall seconds and peak RSS bytes, or a note."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        cmd = ["/usr/bin/time", "-f", "%e %M", "-o", tf.name, *argv]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cap)
        except subprocess.TimeoutExpired:
            return {"seconds": None, "peak_bytes": None, "note": f"stopped at the {cap:.0f} s cap"}
        fields = Path(tf.name).read_text().split()
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
        return {"seconds": None, "peak_bytes": None, "note": f"failed: {tail}"}
    return {
        "seconds": float(fields[-2]),
        "peak_bytes": int(fields[-1]) * 1024,
        "stderr_tail": proc.stderr.strip().splitlines()[-12:],
    }


#: processes of a few seconds, whose wall time on this VM varies by 2x from run to run (the
#: kernel's cost of a first touch of memory): the median of SHORT_REPEATS runs, all kept
SHORT = frozenset({"mds_plugin", "mds_plugin_arpack", "mds_corrected"})
SHORT_REPEATS = 5


def median_of(argv: list[str], cap: float, repeats: int) -> dict:
    """:func:`timed` ``repeats`` times: the run of median wall time, with every run's seconds."""
    runs = [timed(argv, cap) for _ in range(repeats)]
    done = sorted((r for r in runs if r.get("seconds") is not None), key=lambda r: r["seconds"])
    if not done:
        return runs[0]
    return {**done[len(done) // 2], "runs_seconds": [r.get("seconds") for r in runs]}


def measure(n: int, cap: float, skip: tuple[str, ...] = ()) -> dict:
    path = str(counts_for(n))
    py = sys.executable
    out: dict = {
        "n": n,
        "counts": Path(path).name,
    }  # the cache file's name, not this machine's path
    tasks = {
        "mds_plugin": [py, "-c", MDS, path, "plugin"],
        "mds_plugin_arpack": [py, "-c", ARPACK, path, "64"],
        "mds768_plugin": [py, "-c", RANK768, path],
        "mds768_plugin_arpack": [py, "-c", ARPACK, path, "768"],
        "mds_corrected": [py, "-c", MDS, path, "recommended"],
        "peer_pcoa": [py, "-c", PEER, path, "pcoa"],
        "peer_sklearn": [py, "-c", PEER, path, "sklearn"],
    }

    def geometry(label: str, *extra: str) -> list[str]:
        folder = tempfile.mkdtemp(prefix=f"bench_default_{n}_{label}_")
        return [
            py,
            "-m",
            "posgeom.cli.main",
            "geometry",
            path,
            "-d",
            "768",
            "-o",
            f"{folder}/out",
            *extra,
        ]

    tasks["geometry_recommended"] = geometry("recommended")
    tasks["geometry_plugin"] = geometry("plugin", "--estimator", "plugin")
    # the default estimator at the plug-in's resolution
    tasks["geometry_recommended_full"] = geometry("full", "--resolution", "full")
    folder = tempfile.mkdtemp(prefix=f"bench_default_{n}_compare_")
    tasks["compare_recommended"] = [
        py,
        "-m",
        "posgeom.cli.main",
        "compare",
        "--counts",
        path,
        "-d",
        "768",
        "-o",
        f"{folder}/out",
    ]
    for name, argv in tasks.items():
        if name in skip or f"{name}@{n}" in skip:
            out[name] = {"seconds": None, "peak_bytes": None, "note": "not run (time budget)"}
        elif name.startswith("peer") and n > 16_384:
            out[name] = {
                "seconds": None,
                "peak_bytes": None,
                "note": f"cannot run: n x n float64 is {8 * n * n / 2**30:.0f} GiB",
            }
        elif name in SHORT:
            out[name] = median_of(argv, cap, SHORT_REPEATS)
        else:
            out[name] = timed(argv, cap)
        r = out[name]
        print(
            f"  n={n:>7,} {name:22s} {r.get('seconds')} s {r.get('peak_bytes')} B "
            f"{r.get('note', '')}",
            flush=True,
        )
    return out


def _cell(r: dict) -> str:
    if r.get("seconds") is None:
        return r.get("note", "—")
    return f"{r['seconds']:.1f} s / {r['peak_bytes'] / 2**20:,.0f} MB"


def section(rows: list[dict]) -> list[str]:
    lines = [
        HEADER,
        "",
        "Whole processes one after another, each under `/usr/bin/time` (wall time; peak resident "
        "memory of the whole process, interpreter, imports and the counts included). The machine "
        "was shared with other engineers' jobs during the run (2 cores; load is not controlled), "
        "so ratios from the same run are the comparable numbers. Counts: synthetic Zipf, "
        "V = 30,522 for n = 1,024 and 8,192; the IMDB long-context corpus (44 documents of "
        "131,072 words, V = 50,000) for n = 131,072. Peer = dense GEMM chords + scikit-bio "
        "`pcoa` (top 64); MDS step = `classical_mds(..., 64)` of the plug-in distributions or "
        "of `estimate_geometry(C)`; geometry = `posgeom geometry c.npz -d 768` (every default).",
        "",
        "| n | peer MDS (GEMM + pcoa) | GEMM + sklearn ClassicalMDS | MDS step, plug-in | MDS "
        "step, corrected | `geometry` (recommended) | `geometry --estimator plugin` | "
        "`compare` (recommended) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['n']:,} | {_cell(row['peer_pcoa'])} | {_cell(row['peer_sklearn'])} | "
            f"{_cell(row['mds_plugin'])} | {_cell(row['mds_corrected'])} | "
            f"{_cell(row['geometry_recommended'])} | {_cell(row['geometry_plugin'])} | "
            f"{_cell(row.get('compare_recommended', {}))} |"
        )
    lines += ["", *targets(rows), ""]
    return lines


def _ratio(a: dict, b: dict, key: str) -> float | None:
    if a.get(key) is None or b.get(key) is None:
        return None
    return a[key] / b[key]


def targets(rows: list[dict]) -> list[str]:
    """The issue's targets against this run's numbers (met, or by how much not)."""
    by_n = {r["n"]: r for r in rows}
    out = ["Targets (issue 15, 2 cores):", ""]
    r = by_n.get(8192)
    if r:
        g, peer = r["geometry_recommended"], r["peer_pcoa"]
        speed = _ratio(peer, g, "seconds")
        out.append(
            f"- default `geometry` at n = 8,192 <= 60 s: {_cell(g)}; >= 2x faster than the "
            f"peer's MDS alone: {'—' if speed is None else f'{speed:.2f}x'}."
        )
        for est in ("plugin", "corrected"):
            m = r[f"mds_{est}"]
            speed, mem = _ratio(peer, m, "seconds"), _ratio(m, peer, "peak_bytes")
            out.append(
                f"- MDS step ({est}) at n = 8,192 >= 50x the peer at <= 1/10 of its memory: "
                + ("—" if speed is None or mem is None else f"{speed:.1f}x, {mem:.3f} of its peak")
                + "."
            )
        out += ["", "Targets (issue 25):", "", *plugin_targets(r)]
    r = by_n.get(131_072)
    if r:
        out.append(
            f"- default `geometry` at n = 131,072 <= 15 min and 4 GB: "
            f"{_cell(r['geometry_recommended'])}."
        )
        if "compare_recommended" in r:
            out.append(
                "- default `compare` at n = 131,072 runs with no n x n matrix (item 4; held to "
                f"the same 15 min and 4 GB here): {_cell(r['compare_recommended'])}."
            )
    return out


def plugin_targets(r: dict) -> list[str]:
    """Issue 25: ``--estimator plugin`` within 1.5x of the default end to end; its MDS step
    >= 50x the peer (and how much the block solver gained over ARPACK in the same run)."""
    g, p = r["geometry_recommended"], r["geometry_plugin"]
    slower = _ratio(p, g, "seconds")
    m, peer = r["mds_plugin"], r["peer_pcoa"]
    speed = _ratio(peer, m, "seconds")
    before = _ratio(r.get("mds_plugin_arpack", {}), m, "seconds")
    full = r.get("geometry_recommended_full", {})
    return [
        f"- `geometry --estimator plugin` within 1.5x of the default: {_cell(p)} against "
        f"{_cell(g)}, {'—' if slower is None else f'{slower:.2f}x'}; against the default "
        f"estimator at the plug-in's resolution (`--resolution full`): {_cell(full)}, "
        f"{_fmt(_ratio(p, full, 'seconds'))}.",
        f"- MDS step (plug-in) >= 50x the peer: {'—' if speed is None else f'{speed:.1f}x'}"
        f"; the same step with ARPACK's eigenproblem: {_cell(r.get('mds_plugin_arpack', {}))}"
        f" ({'—' if before is None else f'{before:.2f}x'} the block solver's time).",
        f"- the rank-768 plug-in MDS (what `geometry -d 768` solves): block Krylov "
        f"{_cell(r.get('mds768_plugin', {}))}, ARPACK {_cell(r.get('mds768_plugin_arpack', {}))}"
        f" ({_fmt(_ratio(r.get('mds768_plugin_arpack', {}), r.get('mds768_plugin', {}), 'seconds'))}"
        " the block solver's time).",
    ]


def _fmt(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}x"


HEADER = "## The default command at scale (issue 15)"


def default_section(
    sizes: list[int], cap: float, json_path: Path, skip: tuple[str, ...] = ()
) -> list[str]:
    """Measure every size and return the page section (bench_geometry.py calls this too)."""
    rows = []
    t = time.time()
    before = os.getloadavg()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    for n in sizes:
        print(f"\n== default command, n = {n:,}", flush=True)
        rows.append(measure(n, cap, skip))
    load = os.getloadavg()
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(
        json.dumps(
            {
                "rows": rows,
                "commit": commit,
                "load_average_before": before,
                "load_average_after": load,
            },
            indent=2,
        )
    )
    lines = section(rows)
    lines.insert(
        -1,
        f"Run: ended {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit "
        f"{commit}, {time.time() - t:.0f} s in all; load average (1 / 5 / 15 min) "
        f"before {before[0]:.1f} / {before[1]:.1f} / {before[2]:.1f}, after "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on 2 cores.",
    )
    return lines


def splice(page: Path, lines: list[str]) -> None:
    """Put ``lines`` into ``page`` in place of its section (or at its end)."""
    from posgeom.io._atomic import atomic_write_text

    text = page.read_text(encoding="utf-8").splitlines()
    if HEADER in text:
        start = text.index(HEADER)
        end = next((k for k in range(start + 1, len(text)) if text[k].startswith("## ")), None)
        text = [*text[:start], *lines, *([] if end is None else text[end:])]
    else:
        text = [*text, "", *lines]
    atomic_write_text(page, "\n".join(text) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 8192, 131_072])
    ap.add_argument("--cap", type=float, default=900.0, help="seconds per process")
    ap.add_argument("--json", default=str(ROOT / "docs" / "benchmarks" / "default.json"))
    ap.add_argument("--page", default=None, help="splice the section into this Markdown page")
    ap.add_argument("--skip", nargs="*", default=[], help="TASK or TASK@N to leave out")
    args = ap.parse_args()
    lines = default_section(args.sizes, args.cap, Path(args.json), tuple(args.skip))
    print("\n".join(lines))
    if args.page:
        splice(Path(args.page), lines)


if __name__ == "__main__":
    main()
