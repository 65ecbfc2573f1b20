"""Issue 27, third round: silent wrong results (items 8-15).

Each item is one named test (or a few with the item's number): the reproduction of the issue,
then the behaviour that replaces it, checked against an independent count where it is a number.
Items 21-23 are in test_round3_error_path.py, the sweep of the public API with wrong-type
arguments (item 23) in test_round3_api.py.
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
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.io.artifacts import save_artifact


def _same_size_edit(path) -> None:
    """Rewrite ``path`` with the same size and name: the words of each line in reverse order."""
    lines = path.read_text().splitlines()
    path.write_text("\n".join(" ".join(line.split()[::-1]) for line in lines) + "\n")


# ----------------------------------------------------------------------------- item 8
def test_item08_reproduce_cache_keyed_by_corpus(tmp_path):
    from posgeom.reproduction.cache import cache_key, cached_counts

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


# ----------------------------------------------------------------------------- item 11
def test_item11_token_id_lengths_validated(tmp_path):
    from posgeom.corpus.token_ids import read_token_ids

    ids = np.arange(12, dtype=np.int64).reshape(3, 4)
    good = tmp_path / "good.npz"
    np.savez(good, input_ids=ids, lengths=np.array([4, 2, 0]))
    rows = [r.tolist() for r in read_token_ids(good)]
    assert rows == [[0, 1, 2, 3], [4, 5], []]  # each row cut to its length, by hand

    bad = {
        "negative": (np.array([4, -1, 2]), "outside 0..4"),
        "too long": (np.array([4, 5, 2]), "outside 0..4"),
        "short": (np.array([4, 2]), r"shape \(2,\)"),
        "2-D": (np.array([[4, 2, 1]]), r"shape \(1, 3\)"),
        "floats": (np.array([4.0, 2.0, 1.0]), "dtype float64"),
    }
    for case, (lengths, message) in bad.items():
        path = tmp_path / f"{case}.npz"
        np.savez(path, input_ids=ids, lengths=lengths)
        with pytest.raises(PosgeomError, match=message):
            read_token_ids(path)
    flat = tmp_path / "flat.npz"
    np.savez(flat, input_ids=ids.ravel(), lengths=np.array([3]))
    with pytest.raises(PosgeomError, match="1-D id array"):
        read_token_ids(flat)


def test_item11_count_cli_refuses_bad_lengths(capsys, tmp_path):
    path = tmp_path / "ids.npz"
    np.savez(path, input_ids=np.ones((5, 6), dtype=np.int64), lengths=np.array([6, 6, -2, 6, 6]))
    code, err = cli(capsys, "count", path, "-n", "6", "-o", tmp_path / "c.npz")
    assert code == 2 and "'lengths' run from -2 to 6" in one_line(err)
    assert not (tmp_path / "c.npz").exists()


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
    from posgeom.training import TrainConfig

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
    from posgeom.training import TrainConfig, order_necessity

    base = TrainConfig(task="order", max_len=16)
    for seeds, message in (([0, 0], "repeat"), ([1.5], "integer"), ("01", "list of integers")):
        with pytest.raises(PosgeomError, match=message):
            order_necessity(tmp_path / "g", base=base, seeds=seeds)
    with pytest.raises(PosgeomError, match="unknown encoding"):
        order_necessity(tmp_path / "g", base=base, seeds=[0], encodings=["nope", "bogus"])
    assert not (tmp_path / "g").exists()


# ----------------------------------------------------------------------------- item 14
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rope:theta=nan", "theta must be a number > 1 and < inf, got nan"),
        ("rope:theta=inf", "theta must be a number > 1 and < inf, got inf"),
        ("rope:head_dim=64.7", "head_dim must be an integer >= 2"),
        ("rope:max_position_embeddings=64.5", "max_position_embeddings must be an integer"),
        ("rope:partial_rotary_factor=2", "partial_rotary_factor must be a number > 0 and <= 1"),
        ("t5:num_buckets=0", "num_buckets must be an integer >= 2"),
        ("t5:num_buckets=8,max_distance=2", "max_distance must exceed"),
        ("alibi:heads=100000", "heads must be an integer >= 1 and <= 256"),
        ("sinusoidal:base=-3", "base must be a number > 1"),
    ],
)
def test_item14_family_specs_validated(spec, message):
    from posgeom.extension.model import parse_family_spec

    with pytest.raises(PosgeomError, match=message):
        parse_family_spec(spec)


def test_item14_valid_specs_keep_their_values():
    from posgeom.extension.model import parse_family_spec

    rope = parse_family_spec("rope:theta=500000,head_dim=128,max_position_embeddings=8192")
    theta = rope.params["rope_parameters"]["rope_theta"]
    assert (rope.params["head_dim"], theta, rope.trained_length) == (128, 500000.0, 8192)
    t5 = parse_family_spec("t5:num_buckets=32,max_distance=128")
    assert dict(t5.params) == {"num_buckets": 32, "max_distance": 128}
    sinusoidal = parse_family_spec("sinusoidal:d=16,base=500")  # its own keys, not T5's
    assert dict(sinusoidal.params) == {"d": 16, "base": 500.0}


@pytest.fixture(scope="module")
def token_ids_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ids") / "ids.npy"
    np.save(path, np.random.default_rng(0).integers(0, 50, size=4000))
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--heldout-fraction", "1", "--measure"],
            "--heldout-fraction must be a number > 0 and < 1",
        ),
        (["--heldout-fraction", "nan"], "--heldout-fraction must be a number > 0 and < 1"),
        (["--windows", "0"], "--windows must be an integer >= 1"),
        (["--replicates", "1"], "--replicates must be the integer 0 or an integer >= 2"),
        (["--strategies", "{list}"], "strategy 'given 0' is a int, not a rope_parameters"),
        (["--strategies", "{nested}"], "strategy 'a' is a list, not a rope_parameters"),
    ],
)
def test_item14_extend_options_refused_before_work(
    capsys, tmp_path, token_ids_file, extra, message
):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "nested.json").write_text('{"a": [1]}')
    extra = [e.format(list=tmp_path / "list.json", nested=tmp_path / "nested.json") for e in extra]
    out = tmp_path / "ext"
    argv = ["extend", "rope", token_ids_file, "--target-length", "64", "--trained-length", "32"]
    code, err = cli(capsys, *argv, "-o", out, *extra)
    assert code == 2 and message in one_line(err) and not out.exists()
    assert "lag geometry" not in capsys.readouterr().err  # refused before the corpus was read


# ----------------------------------------------------------------------------- item 15
def test_item15_mds_rank_above_width_refused():
    from posgeom import classical_mds, count_positions, positional_distributions

    rng = np.random.default_rng(0)
    mu = positional_distributions(count_positions(rng.integers(0, 9, (300, 8)), max_positions=8))
    with pytest.raises(PosgeomError, match="n_components=5 exceeds model_dim=2"):
        classical_mds(mu, 5, model_dim=2)
    by_default = classical_mds(mu, model_dim=2)  # no rank asked: the width's
    assert by_default.n_components == 2 and by_default.embedding.shape == (8, 2)
    full = classical_mds(mu)
    assert np.allclose(np.abs(by_default.coordinates), np.abs(full.coordinates[:, :2]))
