"""Report benchmark (issue 12): render time and size of the HTML report of a ``compare`` run.

    python -m benchmarks.bench_reports [n ...]      # default: 512 8192

For each ``n``: a synthetic three-regime corpus of ``n`` positions (``posgeom.synthetic``,
600 sequences, vocabulary 64) is compared with ``posgeom.analyze(..., kind="compare")`` (above
n = 1024, to keep the comparison itself affordable: d = 64, four encodings, rank curve to 2,
plug-in estimator; the report's size does not depend on those), then
``posgeom.report(result, path)`` is timed (figures inline in the HTML, plus the PNG/SVG files
beside it). Prints one JSON line per n: comparison seconds, report wall and CPU seconds (on a
shared machine the wall time includes waiting for a core), HTML megabytes,
whether the heatmap was downsampled. Targets: n = 512 under 10 s and 5 MB; n = 8192 under 10 MB.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import posgeom
from benchmarks.harness import names
from posgeom.reports.figures import HEATMAP_MAX


def measure(n: int) -> dict:
    d = 768 if n <= 1024 else 64
    seqs = posgeom.synthetic_corpus(600, length=n, seed=0)
    counts = posgeom.count_positions(seqs, max_positions=n)
    t = time.perf_counter()
    big = n > 1024  # a lighter comparison (the report is what is measured): 4 rows, plug-in
    config = posgeom.GeometryConfig(
        model_dim=d,
        families=("sinusoidal", "alibi", "random", "mds") if big else None,
        max_rank=2 if big else 8,
        estimator="plugin" if big else "recommended",
    )
    result = posgeom.analyze(counts, config, kind="compare")
    compare_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        t, cpu = time.perf_counter(), time.process_time()
        posgeom.report(result, path)
        report_s, report_cpu = time.perf_counter() - t, time.process_time() - cpu
        size = path.stat().st_size
        downsampled = (
            "Downsampled: n = " in path.read_text()
        )  # the caption (the title is in the SVG)
    return {
        "n": n,
        "d": d,
        "compare_seconds": round(compare_s, 1),
        "report_seconds": round(report_s, 2),
        "report_cpu_seconds": round(report_cpu, 2),
        "html_megabytes": round(size / 1e6, 2),
        "heatmap_downsampled": downsampled,
        "heatmap_shown": min(n, HEATMAP_MAX),
    }


if __name__ == "__main__":
    sizes = names(
        __doc__, sys.argv[1:], metavar="n", help="positions (default: 512 8192)", type=int
    )
    for n in sizes or [512, 8192]:
        print(json.dumps(measure(n)), flush=True)
