"""The command line run in the test's own process."""

from __future__ import annotations

from typing import Any

from posgeom.cli.main import main


def run_cli(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    """``posgeom -q ARGV`` (each argument through ``str``) in this process: (exit status,
    stdout, stderr)."""
    code = main(["-q", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err
