"""``python -m studies.pretrain run|control|page RESULTS`` (see :mod:`studies.pretrain`)."""

from __future__ import annotations

import argparse
import os
import platform


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.pretrain")
    ap.add_argument("command", choices=("run", "control", "page"))
    ap.add_argument("results", help="the grid's results folder (outside the repository)")
    ap.add_argument("--resume", action="store_true", help="run, control: continue the grid")
    ap.add_argument("--objectives", default="causal,masked", help="run: objectives, in order")
    ap.add_argument("--control", default=None, help="page: the control's results folder")
    args = ap.parse_args()
    if args.command == "page":
        from studies.pretrain.page import write_page

        write_page(args.results, control=args.control)
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from posgeom.training.pretrain import pretrain_grid
    from studies.pretrain.corpora import corpora

    print(f"Python {platform.python_version()}", flush=True)
    if args.command == "control":  # the MDS table at the token embeddings' scale, causal
        pretrain_grid(
            args.results,
            corpora(),
            arms=["mds_scaled"],
            objectives=["causal"],
            resume=args.resume,
        )
        return 0
    pretrain_grid(
        args.results, corpora(), objectives=args.objectives.split(","), resume=args.resume
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
