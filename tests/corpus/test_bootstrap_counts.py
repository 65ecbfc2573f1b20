"""Bootstrap counts: every replicate equals a direct recount of the corpus with each sequence
repeated ``w_sb`` times, shards merge exactly, weights are Bernoulli(1/2) or Poisson(1) and
deterministic."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from posgeom import PosgeomError, PositionCounts, count_positions, synthetic_corpus
from posgeom.cli.main import main
from posgeom.corpus.bootstrap import BootstrapCounter, BootstrapCounts
from posgeom.corpus.bootstrap_weights import sequence_weights
from posgeom.corpus.distributed import count_distributed
from posgeom.corpus.jobs import count_resumable
from posgeom.corpus.word_tokenizer import WordLevelTokenizer


@pytest.fixture(scope="module")
def seqs():
    out = synthetic_corpus(400, 14, 25, seed=3, min_length=2)
    for s in out[::7]:
        s[0] = 24  # a "special" id at the start of some sequences
    return out


def weighted_recount(seqs, weights, **kw):
    """The replicate by definition: each sequence repeated w times, counted plainly."""
    repeated = [s for s, w in zip(seqs, weights, strict=True) for _ in range(int(w))]
    return count_positions(repeated, **kw)


def assert_counts_equal(a, b):
    assert a.counts.shape == b.counts.shape and (a.counts != b.counts).nnz == 0
    np.testing.assert_array_equal(a.totals, b.totals)
    assert (a.n_sequences, a.n_tokens) == (b.n_sequences, b.n_tokens)


@pytest.mark.parametrize("scheme", ["half", "poisson"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"align": "end", "min_length": 5},
        {"include_special": False, "special_ids": [24], "max_positions": 6},
    ],
)
def test_replicates_equal_a_weighted_recount(seqs, options, scheme):
    kw = {"max_positions": 10, "vocab_size": 25, **options}
    boot = count_positions(
        seqs, bootstrap=6, bootstrap_seed=11, bootstrap_scheme=scheme, batch_size=37, **kw
    )
    assert isinstance(boot, BootstrapCounts) and boot.n_replicates == 6 and boot.scheme == scheme
    assert_counts_equal(boot, count_positions(seqs, **kw))  # the base counts are unchanged
    w = sequence_weights(np.arange(len(seqs)), replicates=6, seed=11, scheme=scheme)
    assert w.max() == 1 if scheme == "half" else w.max() > 1
    for b in range(6):
        assert_counts_equal(boot.replicate(b), weighted_recount(seqs, w[:, b], **kw))


def test_independent_of_batch_size_and_flushes(seqs, monkeypatch):
    a = count_positions(seqs, max_positions=10, bootstrap=4, bootstrap_seed=5, batch_size=1000)
    monkeypatch.setattr(BootstrapCounter, "flush_tokens", 50)  # many partial reductions
    monkeypatch.setattr(BootstrapCounter, "flush_keys", 30)
    b = count_positions(seqs, max_positions=10, bootstrap=4, bootstrap_seed=5, batch_size=3)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    np.testing.assert_array_equal(a.replicate_sequences, b.replicate_sequences)
    c = count_positions(seqs, max_positions=10, bootstrap=4, bootstrap_seed=6)
    assert not np.array_equal(a.replicates, c.replicates)  # another seed, other weights


def test_weights_are_bernoulli_or_poisson_and_prefix_stable():
    half = sequence_weights(np.arange(20_000), replicates=4, seed=1)
    assert stats.binomtest(int(half.sum()), half.size, 0.5).pvalue > 1e-3
    w = sequence_weights(np.arange(20_000), replicates=10, seed=1, stream=4, scheme="poisson")
    np.testing.assert_array_equal(
        w[:, :5],
        sequence_weights(np.arange(20_000), replicates=5, seed=1, stream=4, scheme="poisson"),
    )
    np.testing.assert_array_equal(
        w[100:200, 7],
        sequence_weights(np.arange(100, 200), replicates=[7], seed=1, stream=4, scheme="poisson")[
            :, 0
        ],
    )
    k = np.arange(6)
    observed = np.array([*(np.bincount(w.ravel(), minlength=6)[:5]), (w >= 5).sum()])
    expected = w.size * np.array([*stats.poisson.pmf(k[:5], 1.0), stats.poisson.sf(4, 1.0)])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # replicates and streams are independent draws: correlations near 0
    r = np.corrcoef(w[:, 0].astype(float), w[:, 1].astype(float))[0, 1]
    other = sequence_weights(np.arange(20_000), replicates=1, seed=1, stream=5, scheme="poisson")[
        :, 0
    ]
    assert abs(r) < 0.03 and abs(np.corrcoef(w[:, 0], other)[0, 1]) < 0.03


def test_shards_merge_exactly(seqs):
    kw = {"max_positions": 9, "bootstrap": 5, "bootstrap_seed": 2}
    parts = [seqs[:150], seqs[150:260], seqs[260:]]
    shards = [count_positions(p, bootstrap_stream=k, **kw) for k, p in enumerate(parts)]
    merged = shards[0].merge(shards[1]) + shards[2]
    assert merged.streams == (0, 1, 2)
    swapped = shards[2].merge(shards[0]).merge(shards[1])
    np.testing.assert_array_equal(merged.replicates, swapped.replicates)
    vocab = merged.vocab_size
    for b in range(5):
        weights = np.concatenate(
            [
                sequence_weights(np.arange(len(p)), replicates=[b], seed=2, stream=k)[:, 0]
                for k, p in enumerate(parts)
            ]
        )
        direct = weighted_recount(seqs, weights, max_positions=9, vocab_size=vocab)
        assert_counts_equal(merged.replicate(b), direct)
    with pytest.raises(PosgeomError, match="share streams"):
        shards[0].merge(count_positions(parts[1], **kw))
    with pytest.raises(PosgeomError, match="seed/B/scheme"):
        shards[0].merge(
            count_positions(
                parts[1], bootstrap_stream=1, max_positions=9, bootstrap=5, bootstrap_seed=3
            )
        )
    with pytest.raises(PosgeomError, match="plain counts"):
        shards[0].merge(count_positions(parts[1], max_positions=9))


def test_sharded_job_resumes_with_identical_replicates(tmp_path):
    lines = [" ".join(f"w{(i * 7 + j) % 23}" for j in range(3 + i % 9)) for i in range(120)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kw = {"max_positions": 8, "shard_lines": 50, "progress": False, "bootstrap": 4}
    job = tmp_path / "job"
    full = count_resumable(corpus, "word", job_dir=job, **kw)
    assert isinstance(full, BootstrapCounts) and full.streams == (0, 1, 2)
    (job / "shard-00001.npz").unlink()  # lose one shard: it is counted again
    again = count_resumable(corpus, "word", job_dir=job, **kw)
    np.testing.assert_array_equal(full.replicates, again.replicates)
    # by definition: shard k's sequences weighted with stream k and their index in the shard
    ids = WordLevelTokenizer.load(job / "tokenizer.json").encode_batch(lines)
    for b in range(4):
        w = np.concatenate(
            [
                sequence_weights(np.arange(50), replicates=[b], seed=0, stream=k)[:, 0]
                for k in range(3)
            ]
        )[: len(lines)]
        direct = weighted_recount(ids, w, max_positions=8, vocab_size=full.vocab_size)
        assert_counts_equal(full.replicate(b), direct)
    # a shard without a counted sequence (blank lines) merges as zero replicates
    blank = tmp_path / "blank.txt"
    blank.write_text("\n".join(lines[:50] + [""] * 50 + lines[50:80]) + "\n", encoding="utf-8")
    holes = count_resumable(blank, "word", **kw)
    assert holes.streams == (0, 1, 2) and holes.n_sequences == 80
    assert holes.replicate_sequences.max() <= 80
    # the same shards on a Dask cluster: identical replicates
    pytest.importorskip("distributed")
    dask = count_distributed(corpus, "word", scheduler="local", n_workers=2, **kw)
    np.testing.assert_array_equal(dask.replicates, full.replicates)
    with pytest.raises(PosgeomError, match="bootstrap"):
        count_resumable(corpus, "word", job_dir=job, **{**kw, "bootstrap": 5})


def test_save_load_round_trip(seqs, tmp_path):
    boot = count_positions(seqs, max_positions=10, bootstrap=3, bootstrap_seed=9)
    for name in ("b.npz", "b.safetensors"):
        path = boot.save(tmp_path / name)
        back = PositionCounts.load(path)  # dispatches on the artifact kind
        assert isinstance(back, BootstrapCounts) and back.seed == 9 and back.streams == (0,)
        np.testing.assert_array_equal(back.replicates, boot.replicates)
        assert_counts_equal(back.replicate(2), boot.replicate(2))


def test_bad_input(seqs):
    for bad in (1, 0, 2.5, True):
        with pytest.raises(PosgeomError, match="bootstrap"):
            count_positions(seqs, max_positions=5, bootstrap=bad)
    boot = count_positions(seqs, max_positions=5, bootstrap=2)
    with pytest.raises(PosgeomError, match="replicate index"):
        boot.replicate(2)
    with pytest.raises(PosgeomError, match="scheme"):
        count_positions(seqs, max_positions=5, bootstrap=3, bootstrap_scheme="jackknife")


def test_cli_count_bootstrap(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"a b{i % 5} c{i % 3} d" for i in range(60)) + "\n")
    out = tmp_path / "counts.npz"
    assert main(["-q", "count", str(corpus), "-n", "4", "--bootstrap", "3", "-o", str(out)]) == 0
    assert "3 bootstrap replicates" in capsys.readouterr().out
    boot = PositionCounts.load(out)
    assert isinstance(boot, BootstrapCounts) and boot.n_replicates == 3
    bad = tmp_path / "bad.npz"
    assert main(["-q", "count", str(corpus), "-n", "4", "--bootstrap", "1", "-o", str(bad)]) == 2
    assert "at least 2 replicates" in capsys.readouterr().err and not bad.exists()


@pytest.mark.parametrize("scheme", ["half", "poisson"])
def test_counts_beyond_int16_are_exact(scheme):
    """A (position, token) seen 40,000 times: the replicate product leaves int16 and stays exact."""
    seqs = [np.array([1, 2 + (i % 3)]) for i in range(40_000)]
    boot = count_positions(seqs, max_positions=2, bootstrap=2, bootstrap_scheme=scheme)
    w = sequence_weights(np.arange(len(seqs)), replicates=2, scheme=scheme)
    for b in range(2):
        expected = weighted_recount(seqs, w[:, b], max_positions=2, vocab_size=boot.vocab_size)
        assert_counts_equal(boot.replicate(b), expected)


def test_first_positions_keeps_replicates_aligned():
    """Cutting bootstrap counts to their first positions cuts every replicate alike: replicate b
    of the cut counts is the first rows of replicate b (recounted independently by ``replicate``)."""
    seqs = synthetic_corpus(300, 12, 20, kind="three_regimes", seed=1)
    boot = count_positions(seqs, max_positions=12, vocab_size=20, bootstrap=5, bootstrap_seed=3)
    head = boot.first_positions(7)
    assert isinstance(head, BootstrapCounts) and head.n_replicates == 5
    assert head.counts.shape == (7, 20) and head.n_tokens == int(boot.totals[:7].sum())
    for b in range(5):
        expected = boot.replicate(b).counts[:7].toarray()
        np.testing.assert_array_equal(head.replicate(b).counts.toarray(), expected)
    with pytest.raises(PosgeomError, match=r"outside 1\.\.12"):
        boot.first_positions(13)


def test_cli_compare_cuts_bootstrap_counts(tmp_path):
    """``compare --counts BOOT.npz -n 8`` on bootstrap counts of 12 positions (it failed: the
    replicates were not cut with the counts) gives the table, intervals included, of comparing
    bootstrap counts of 8 positions made directly (sequence weights depend on the sequence, not
    on the positions counted)."""
    corpus = tmp_path / "c.txt"
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(list("abcdef"), 12 - (k % 3))) + " ." for k in range(200)]
    corpus.write_text("\n".join(lines))
    tables = []
    for n_counted in (12, 8):
        boot = tmp_path / f"boot{n_counted}.npz"
        argv = ["-q", "count", str(corpus), "-n", str(n_counted), "--bootstrap", "4"]
        assert main([*argv, "-o", str(boot)]) == 0
        out = tmp_path / f"cmp{n_counted}"
        argv = ["-q", "compare", "--counts", str(boot), "-n", "8", "-d", "16", "-o", str(out)]
        assert main(argv) == 0
        tables.append(
            [
                {"encoding": k, **v}
                for k, v in json.loads((out / "comparison.json").read_text())["scores"].items()
            ]
        )
    assert len(tables[0]) == len(tables[1]) > 2
    for cut, direct in zip(*tables, strict=True):
        assert cut["encoding"] == direct["encoding"]
        np.testing.assert_allclose(cut["scale_optimal"], direct["scale_optimal"], rtol=1e-12)
        if "scale_optimal_ci" in direct:  # every row but the refined MDS has intervals
            ci = cut["scale_optimal_ci"]
            np.testing.assert_allclose(ci, direct["scale_optimal_ci"], rtol=1e-12)
