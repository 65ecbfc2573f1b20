"""Estimators of the positional geometry against known truths; writes docs/ESTIMATION.md.

    python -m studies.estimation            # full run (a few minutes on 2 shared cores)
    python -m studies.estimation --quick    # fewer corpora, replicates and sizes
    python -m studies.estimation --real     # only the real-population section

Synthetic corpora with exactly known positional distributions (posgeom.synthetic.zipf_distributions:
a Zipfian vocabulary tilted by position; V from 64 to 50,000, Zipf 1.0-1.3; samples per position
decaying geometrically with position, 50 to 20,000). For every estimator of
posgeom.estimators.available() and every regime:

* RMSE and Spearman rank correlation of the estimated D against the true D (pairs i < j);
* the Procrustes disparity (scipy.spatial.procrustes) of the rank-k MDS coordinates;
* Kendall tau between the rankings of 8 encodings (scale-optimal stress) under the estimate
  and under the truth;
* coverage of the 95% Poisson-bootstrap intervals (posgeom.uncertainty.bootstrap) over simulated
  corpora (target regime), for the stresses of the 8 encodings and for every D_ij;
* real populations (``--real``, :mod:`studies.estimation.real_population`): IMDB and the long texts as
  populations, subsamples of 300 to 10,000 sequences, truth = the population's geometry at the
  estimate's resolution; the choice of the auto-resolution rule; unequal samples on stationary
  corpora (issue 16);
* time and peak memory of each estimator at n = 8192 (each in a fresh process; ratios against the
  plug-in of the same run), and the cost of 200 Poisson-bootstrap replicates against one counting
  pass on IMDB (MiniLM WordPiece, n = 512).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from studies._common import DOCS
from studies.estimation.common import (
    OUT,
    estimators,
    recommended_name,
)
from studies.estimation.measure import accuracy, all_coverage, cost, real_populations, sweep
from studies.estimation.page import figure, page


# ----------------------------------------------------------------------------- main
def _carry_over(res: dict) -> None:
    """Keep what this run did not compute from the previous estimation.json: the real-population
    section (``--real``) and, with ``--no-cost``, the cost section, marked with its own date."""
    path = OUT / "estimation.json"
    if not path.exists():
        return
    old = json.loads(path.read_text())
    if "resolution" in old and "resolution" not in res:
        res["resolution"] = old["resolution"]
    if "cost" in old and "cost" not in res:
        res["cost"] = old["cost"]
        res["cost_from"] = old.get("cost_from", old.get("date"))


def main() -> None:
    import warnings

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer corpora, replicates and sizes")
    ap.add_argument("--no-cost", action="store_true", help="skip the timing section")
    ap.add_argument(
        "--coverage-corpora",
        type=int,
        default=None,
        help="simulated corpora per coverage regime (default 3 with --quick, else 10)",
    )
    ap.add_argument(
        "--render", action="store_true", help="only rewrite the page from estimation.json"
    )
    ap.add_argument(
        "--coverage",
        action="store_true",
        help="only the coverage section (merged into estimation.json)",
    )
    ap.add_argument(
        "--real",
        action="store_true",
        help="only the real-population section (resolution; merged into estimation.json)",
    )
    args = ap.parse_args()
    if args.real:
        res = json.loads((OUT / "estimation.json").read_text())
        res["resolution"] = real_populations(quick=args.quick)
        (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    if args.coverage:
        res = json.loads((OUT / "estimation.json").read_text())
        res["coverage"] = all_coverage(res["estimators"], res["recommended"], args)
        flags = (" --quick" if args.quick else "") + (
            f" --coverage-corpora {args.coverage_corpora}" if args.coverage_corpora else ""
        )
        res["coverage_run"] = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "command": f"python -m studies.estimation --coverage{flags}",
        }
        (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    if args.render:
        res = json.loads((OUT / "estimation.json").read_text())
        figure(res, OUT / "estimation.png")
        (DOCS / "ESTIMATION.md").write_text(page(res))
        return
    warnings.filterwarnings("ignore", message="B has negative eigenvalues")
    names = estimators()
    rec = recommended_name()
    quick = args.quick
    sizes = [50, 300, 3000, 20000] if quick else [50, 200, 1000, 5000, 20000]
    vocabs = [64, 30_000] if quick else [64, 1000, 30_000]
    res: dict = {
        "quick": quick,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "estimators": names,
        "recommended": rec,
        "corpora": 1 if quick else 3,
        "sizes": sizes,
        "vocabs": vocabs,
    }
    t0 = time.perf_counter()
    res["accuracy"] = accuracy(names, res["corpora"])
    res["sweep"] = sweep(names, sizes, vocabs)
    res["interval_method"] = "bias_aware"
    res["coverage"] = all_coverage(names, rec, args)
    res.pop("coverage_run", None)
    if not args.no_cost:
        big = {1024: names} if quick else {1024: names, 8192: ["plugin", rec]}
        res["cost"] = cost(names, big, 5000 if quick else None)
    res["seconds"] = time.perf_counter() - t0
    _carry_over(res)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "estimation.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    figure(res, OUT / "estimation.png")
    (DOCS / "ESTIMATION.md").write_text(page(res))
    print(f"wrote {DOCS / 'ESTIMATION.md'} in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
