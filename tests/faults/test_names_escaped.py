"""Issue 36, item 11: names a user chose are printed escaped on success too. An output folder or
file named with ESC sequences retitled and cleared the terminal (``results in ...``,
``wrote ...``); a strategy name with a line break forged a ``posgeom: error:`` line on stdout and
split its row of ``table.md``. Every such name now passes through
:func:`posgeom._errors.printable` (tests/project/test_printed_names.py checks the CLI's source)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.cli import run_cli
from posgeom._errors import printable

ESC_NAME = "out\x1b]0;PWNED\x07\x1b[2J"  # retitle the terminal, then clear it
FORGED = "pi\nposgeom: error: forged\x1b[2J"  # a line of its own, then clear the screen


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert not any(line.startswith("posgeom: error") for line in text.splitlines()), text


@pytest.fixture(scope="module")
def ids(tmp_path_factory):
    path = tmp_path_factory.mktemp("ids") / "ids.npy"
    np.save(path, np.random.default_rng(0).integers(0, 12, size=(2, 2000)))
    return path


def test_printable_by_hand():
    assert printable("a\nb\r\tc") == "a\\nb\\r\\tc"
    assert printable(ESC_NAME) == "out\\x1b]0;PWNED\\x07\\x1b[2J"
    assert printable("x\x9b2Jy\x85z\u2028\u202e") == "x\\x9b2Jy\\x85z\\u2028\\u202e"
    assert printable(printable(FORGED)) == printable(FORGED)  # idempotent
    assert printable("modèle – 東京 |ok|") == "modèle – 東京 |ok|"  # printable text as it is
    assert printable(12) == "12"


def test_an_escape_laden_output_name_is_printed_escaped(ids, tmp_path, capsys):
    counts = tmp_path / f"{ESC_NAME}.npz"
    code, out, err = run_cli(capsys, "count", ids, "-n", 16, "-o", counts)
    assert code == 0, err
    _no_raw_controls(out + err)
    assert f"wrote {printable(counts)}" in out
    run = tmp_path / ESC_NAME
    code, out, err = run_cli(capsys, "geometry", counts, "-d", 4, "--noise", "none", "-o", run)
    assert code == 0, err
    _no_raw_controls(out + err)
    assert f"results in {printable(run)}/" in out
    assert run.is_dir()  # the folder itself has the name the user chose


def test_a_table_named_with_escapes_is_probed_and_printed_escaped(tmp_path, capsys):
    table = tmp_path / f"t{ESC_NAME}.npy"
    t = np.arange(32.0)[:, None] / 32
    np.save(table, np.hstack([np.sin(t * k) for k in range(1, 5)]))
    out_dir = tmp_path / ESC_NAME
    code, out, err = run_cli(capsys, "probe", table, "-o", out_dir, "--seeds", 2, "--pairs", 128)
    assert code == 0, err
    _no_raw_controls(out + err)
    _no_raw_controls((out_dir / "table.md").read_text())


@pytest.mark.filterwarnings("ignore")
def test_a_strategy_name_with_a_line_break_stays_in_its_row(ids, tmp_path, capsys):
    pytest.importorskip("torch")
    strategies = tmp_path / "s.json"
    params = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}
    strategies.write_text(json.dumps({FORGED: params}))
    spec = "rope:theta=10000,head_dim=16,max_position_embeddings=64"
    out_dir = tmp_path / ESC_NAME
    argv = ["extend", spec, ids, "--target-length", 128, "--replicates", 2, "--no-fit"]
    code, out, err = run_cli(
        capsys, *argv, "--classes", "top:12", "--strategies", strategies, "-o", out_dir
    )
    assert code == 0, err
    _no_raw_controls(out + err)
    assert f"results in {printable(out_dir)}/" in out
    table = (out_dir / "table.md").read_text()
    _no_raw_controls(table)
    header = next(line for line in table.splitlines() if line.startswith("| rank |"))
    (row,) = [line for line in table.splitlines() if line.startswith("| ") and "forged" in line]
    assert row.count(" | ") == header.count(" | ")  # one row, every column
    assert f"| {printable(FORGED)} |" in row
    # the name itself is kept as given in the machine-readable summary
    summary = json.loads((out_dir / "summary.json").read_text())
    assert FORGED in _strings(summary)


def _strings(value: object) -> set[str]:
    """Every string (key or value) of a JSON document."""
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return {value} if isinstance(value, str) else set()
