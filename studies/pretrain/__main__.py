"""``python -m studies.pretrain run|page RESULTS`` (see :mod:`studies.pretrain`)."""

from __future__ import annotations

import argparse
import os
import platform


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.pretrain")
    ap.add_argument("command", choices=("run", "page"))
    ap.add_argument("results", help="the grid's results folder (outside the repository)")
    ap.add_argument("--resume", action="store_true", help="run: continue the grid")
    ap.add_argument("--objectives", default="causal,masked", help="run: objectives, in order")
    args = ap.parse_args()
    if args.command == "page":
        from studies.pretrain.page import write_page

        write_page(args.results)
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from posgeom.training.pretrain import pretrain_grid
    from studies.pretrain.corpora import corpora

    print(f"Python {platform.python_version()}", flush=True)
    pretrain_grid(
        args.results, corpora(), objectives=args.objectives.split(","), resume=args.resume
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
