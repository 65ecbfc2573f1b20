"""Corpus in, counts out: readers, tokenizers and position-token counting.

Only numpy and scipy are imported here; optional readers and tokenizers import their libraries
(pyarrow, datasets, tokenizers, transformers) when used.
"""

from posgeom.corpus import bootstrap as _bootstrap  # noqa: F401  (registers BootstrapCounts)
from posgeom.corpus.counting import PositionCounts, count_corpus, count_positions
from posgeom.corpus.options import CountOptions
from posgeom.corpus.readers import read_texts
from posgeom.corpus.token_ids import read_token_ids
from posgeom.corpus.tokenize import load_tokenizer
from posgeom.corpus.word_tokenizer import WordLevelTokenizer

__all__ = [
    "CountOptions",
    "PositionCounts",
    "WordLevelTokenizer",
    "count_corpus",
    "count_positions",
    "load_tokenizer",
    "read_texts",
    "read_token_ids",
]
