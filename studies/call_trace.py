"""How far the counts travel: a call trace of one CLI command, folder by folder.

``docs/ARCHITECTURE.md`` draws the main job as one line, corpus -> counts -> estimates -> geometry ->
embedding -> scores -> reports. This study runs one command under :func:`sys.setprofile` and
measures how the code actually moves between the package's folders (``posgeom/<folder>/``) from the
moment the command's handler is entered until it returns:

- **moves**: cross-folder calls, i.e. a function of folder ``A`` calls a function of folder
  ``B != A``, counted once per distinct (caller function, callee function) pair, so a loop over
  positions or replicates counts as one;
- **back up**: the moves whose callee folder comes *earlier* in :data:`FLOW` than the caller's (a
  later stage calling back into an earlier one: a score re-validating a geometry, an estimate
  re-reading counts);
- **the counts' path**: the folders of the calls that receive the counts (a ``PositionCounts`` or
  ``CountMatrix`` argument) in the order they run, consecutive repeats collapsed: its moves
  between folders, the moves back up :data:`FLOW`, and the moves into a folder the path had
  already left (the issue's "following the counts from the CLI handler to the kernels");
- **folder moves**: the distinct (caller folder, callee folder) pairs among the moves, and how many
  of them go back up: the folder-level picture ``docs/ARCHITECTURE.md`` draws as arrows;
- **entry order**: the order in which folders are first entered, checked against :data:`FLOW`;
- **calls** of a few named functions (:data:`COUNTED`): distance validations, summaries built.

:data:`FLOW` is the order the main job *calls* the stages in; the ``FLOW`` of
``tests/project/test_layers.py`` is the order rooms may *import* each other in (there the scores,
pure functions on arrays, sit below the geometry, and the text below the pipeline): two concepts,
two orders, neither derived from the other. A call into any folder earlier in this ``FLOW`` is a
move back up, whichever folder holds the callee's types.

Folders outside :data:`FLOW` (root-level helpers ``posgeom/_*.py``: errors, validation, progress)
are utilities every stage may use; calls into them are not moves. Calls from or into code outside
``posgeom`` (numpy, scipy, argparse) are invisible: a callback from numpy into posgeom is attributed
to the posgeom function that called numpy.

Run: ``python -m studies.call_trace CORPUS [--text-column text] [-n 48]``; prints the numbers and the
list of back-up moves. The numbers before and after issue 25 are in ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

#: data-flow order of the folders (orchestrators first: they call every stage forward).
FLOW: tuple[str, ...] = (
    "cli",
    "pipeline",
    "corpus",
    "geometry",
    "estimators",
    "uncertainty",
    "lags",
    "embed",
    "encodings",
    "scores",
    "models",
    "text",
    "reports",
    "io",
)

#: the folders that conduct the stages: a move back to them is a return, not a step back
ORCHESTRATORS = frozenset({"cli", "pipeline"})

#: functions whose number of calls per command the study reports (path part, function name).
COUNTED: tuple[tuple[str, str], ...] = (
    ("_distance_matrix.py", "check_distance_matrix"),
    ("_distance_matrix.py", "as_distances"),  # the distance converter
    ("geometry/counts.py", "count_matrix"),
    ("text/verdict.py", "verdict_block"),  # once per summary build of GeometryResult
    ("verdict_inputs.py", "verdict_inputs"),
)


@dataclass
class CallTrace:
    """The folder-level trace of one command (see the module docstring for the definitions)."""

    handler: str
    moves: list[tuple[str, str, str, str]] = field(default_factory=list)
    entry_order: list[str] = field(default_factory=list)
    counted: Counter = field(default_factory=Counter)
    counts_path: list[str] = field(default_factory=list)

    def collapsed_path(self) -> list[str]:
        """:attr:`counts_path` with consecutive repeats collapsed."""
        p = self.counts_path
        return [f for i, f in enumerate(p) if i == 0 or f != p[i - 1]]

    def path_moves(self) -> tuple[int, int, int]:
        """The counts' path (:meth:`collapsed_path`): its moves between folders, how many go
        back up in :data:`FLOW` (a return to an orchestrator, :data:`ORCHESTRATORS`, is not
        one), and how many re-enter a folder the path had already left."""
        rank = {f: i for i, f in enumerate(FLOW)}
        path = self.collapsed_path()
        moves = list(itertools.pairwise(path))
        back = sum(rank[b] < rank[a] and b not in ORCHESTRATORS for a, b in moves)
        again = sum(b in path[:i] for i, (_, b) in enumerate(moves, start=1))
        return len(moves), back, again

    @property
    def n_moves(self) -> int:
        return len(self.moves)

    @property
    def back_up(self) -> list[tuple[str, str, str, str]]:
        rank = {f: i for i, f in enumerate(FLOW)}
        return [m for m in self.moves if rank[m[2]] < rank[m[0]]]

    @property
    def folder_pairs(self) -> Counter:
        """Distinct (caller folder, callee folder) pairs with their number of function moves."""
        return Counter((m[0], m[2]) for m in self.moves)

    @property
    def folder_back_up(self) -> list[tuple[str, str]]:
        rank = {f: i for i, f in enumerate(FLOW)}
        return [(a, b) for a, b in self.folder_pairs if rank[b] < rank[a]]

    def entry_out_of_order(self) -> list[str]:
        rank = {f: i for i, f in enumerate(FLOW)}
        out, best = [], -1
        for f in self.entry_order:
            if rank[f] < best:
                out.append(f)
            best = max(best, rank[f])
        return out


def _folder(filename: str, root: str) -> str | None:
    if not filename.startswith(root):
        return None
    rel = filename[len(root) :].lstrip("/")
    head = rel.split("/", 1)[0]
    return head if "/" in rel and head in FLOW else "_root"


def _handler_code(argv: list[str]) -> Any:
    """The code object of the function the CLI dispatches ``argv`` to (``args.handler``)."""
    from posgeom.cli.main import build_parser

    handler = build_parser().parse_known_args(argv)[0].handler
    return getattr(handler, "func", handler).__code__


class _Tracer:
    """The profile function of :func:`trace`: records moves while the handler's frame runs."""

    def __init__(self, root: str, handler_code: Any, result: CallTrace) -> None:
        self.root, self.handler_code, self.result = root, handler_code, result
        self.handler_frame: FrameType | None = None
        self.finished = False
        self.seen: set[tuple[str, str]] = set()
        from posgeom.corpus.counting import PositionCounts
        from posgeom.geometry.counts import CountMatrix

        self.count_types = (PositionCounts, CountMatrix)

    def holds_counts(self, frame: FrameType) -> bool:
        """Whether a call receives the counts (a ``PositionCounts`` or the ``CountMatrix`` made
        of it) as an argument: the functions on the counts' path."""
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        return any(isinstance(frame.f_locals.get(n), self.count_types) for n in names)

    def name(self, frame: FrameType) -> str:
        code = frame.f_code
        return f"{code.co_filename[len(self.root) + 1 :]}:{code.co_qualname}"

    def folder(self, frame: FrameType) -> str | None:
        return _folder(frame.f_code.co_filename, self.root)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame is self.handler_frame:
            self.handler_frame, self.finished = None, True
        elif event == "call" and self.handler_frame is not None:
            self.record(frame)
        elif event == "call" and frame.f_code is self.handler_code and not self.finished:
            self.handler_frame = frame
            self.result.entry_order.append("cli")

    def record(self, frame: FrameType) -> None:
        if self.holds_counts(frame) and self.folder(frame) not in (None, "_root"):
            self.result.counts_path.append(self.folder(frame))
        for part, fn in COUNTED:
            if part in frame.f_code.co_filename and frame.f_code.co_name == fn:
                self.result.counted[fn] += 1
        callee = self.folder(frame)
        if callee in (None, "_root"):
            return
        caller_frame = frame.f_back
        while caller_frame is not None and self.folder(caller_frame) in (None, "_root"):
            caller_frame = caller_frame.f_back
        if caller_frame is None:
            return
        caller = self.folder(caller_frame)
        if callee not in self.result.entry_order:
            self.result.entry_order.append(callee)
        key = (self.name(caller_frame), self.name(frame))
        if caller != callee and key not in self.seen:
            self.seen.add(key)
            self.result.moves.append((caller, key[0], callee, key[1]))


def trace(argv: list[str]) -> CallTrace:
    """Run ``posgeom <argv>`` in-process and trace it from the call of the command's handler
    (``args.handler`` of the CLI's parser) until that call returns."""
    import posgeom
    from posgeom.cli.main import main

    root = str(Path(posgeom.__file__).resolve().parent)
    handler_code = _handler_code(argv)
    result = CallTrace(
        handler=f"{handler_code.co_filename[len(root) + 1 :]}:{handler_code.co_name}"
    )
    tracer = _Tracer(root, handler_code, result)
    sys.setprofile(tracer)
    threading.setprofile(tracer)  # the MDS eigensolve runs on a thread of its own
    try:
        main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.call_trace", description=__doc__)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--text-column", default="text")
    parser.add_argument("-n", type=int, default=32)
    parser.add_argument("--command", choices=("compare", "geometry"), default="compare")
    parser.add_argument("--list", action="store_true", help="print every back-up move")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        base = [str(args.corpus), "--text-column", args.text_column, "-n", str(args.n), "-q"]
        if args.command == "compare":
            run = trace(["compare", *base, "-o", str(out / "c")])
        else:
            counts = out / "counts.npz"
            from posgeom.cli.main import main as cli

            cli(["count", *base, "-o", str(counts)])
            run = trace(["geometry", str(counts), "-o", str(out / "g"), "-q"])
    print(f"handler: {run.handler}")
    print(f"{args.command}: {run.n_moves} moves between folders, {len(run.back_up)} back up")
    moves, back, again = run.path_moves()
    print(
        f"{args.command}: the counts' path: {moves} moves between folders, {back} back up, "
        f"{again} into a folder already left"
    )
    print(
        f"{args.command}: {len(run.folder_pairs)} folder moves (distinct folder pairs), "
        f"{len(run.folder_back_up)} back up: {run.folder_back_up}"
    )
    print("entry order:", " -> ".join(run.entry_order))
    print("entered out of data-flow order:", run.entry_out_of_order() or "none")
    print("calls:", dict(run.counted))
    print("moves by folder pair:")
    for (a, b), k in sorted(run.folder_pairs.items(), key=lambda kv: -kv[1]):
        print(f"  {a} -> {b}: {k}")
    if args.list:
        print("the counts' path:", " -> ".join(run.collapsed_path()))
        for _, f, _, g in run.back_up:
            print(f"  back up: {f} -> {g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
