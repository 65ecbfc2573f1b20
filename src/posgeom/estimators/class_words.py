"""What the token classes of an estimate hold, in words: :func:`describe_classes` (the words every
surface prints beside a resolution, stored with the estimate as ``GeometryEstimate.classes``)
and :func:`token_names` (token id -> text of the tokenizer a counts file records, when that
tokenizer's file is at hand and its vocabulary hash matches)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from posgeom.estimators.resolution import frequency_order, kept_one_by_one

__all__ = ["SHOWN_TOKENS", "describe_classes", "token_names"]

SHOWN_TOKENS = 5  # tokens named one by one in a description


def describe_classes(
    class_map: Any,
    counts: Any,
    *,
    label: str = "map",
    names: Callable[[int], str | None] | Mapping[int, str] | None = None,
) -> str:
    """What the classes hold, in words, with their share of the tokens counted (pooled over
    positions): ``"'.', '[CLS]', other: 91% of tokens"`` (``top:2``). ``class_map``: ``(V,)``
    token -> class (dense, as :func:`resolve` returns it); ``counts``: ``(n, V)`` counts;
    ``label``: the resolution's label (``top:K`` and ``top:K+bands:B`` keep the ``K`` most
    frequent tokens one by one, named up to :data:`SHOWN_TOKENS`); ``names``: token id -> text
    (a mapping or a function; without it the tokens are counted, not named)."""
    classes = np.asarray(class_map, dtype=np.int64)
    pooled = np.asarray(counts.sum(axis=0), dtype=np.float64).ravel()
    total = max(float(pooled.sum()), 1e-300)
    n_classes = int(classes.max(initial=-1)) + 1
    share = np.bincount(classes, weights=pooled, minlength=n_classes) / total
    if label == "full" or n_classes == classes.size:
        return f"every token its own class ({n_classes:,} classes)"
    top = kept_one_by_one(label)
    if top is None:  # bins or a given map: classes, not tokens
        return f"{n_classes:,} token classes (largest: {_pct(float(share.max()))} of tokens)"
    top = min(top, n_classes)
    parts = [_singletons(frequency_order(counts)[:top], share[:top], names)] if top else []
    grouped = share[top:]
    if grouped.size == 1:
        parts.append(f"other: {_pct(float(grouped[0]))} of tokens")
    elif grouped.size:
        low, high = _pct(float(grouped.min())), _pct(float(grouped.max()))
        each = low if low == high else f"{low} to {high}"
        parts.append(
            f"{grouped.size:,} frequency bands of the {'rarer ' if top else ''}tokens "
            f"({_pct(float(grouped.sum()))} "
            f"of tokens, {each} each)"
        )
    return ", ".join(parts)


def _singletons(tokens: np.ndarray, share: np.ndarray, names: Any) -> str:
    """The tokens kept one by one: named (the first :data:`SHOWN_TOKENS`) or counted."""
    label = names.get if isinstance(names, Mapping) else names
    texts = [None if label is None else label(int(t)) for t in tokens[:SHOWN_TOKENS]]
    kept = f"{_pct(float(share.sum()))} of tokens"
    if any(t is None for t in texts):
        what = (
            "the most frequent token"
            if tokens.size == 1
            else f"the {tokens.size:,} most frequent tokens"
        )
        return f"{what} one by one ({kept})"
    shown = ", ".join(repr(str(t)) for t in texts)
    if tokens.size <= SHOWN_TOKENS:
        return shown
    return f"the {tokens.size:,} most frequent tokens one by one ({shown}, ...; {kept})"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.095 else f"{100 * x:.1f}%"


def token_names(identity: Mapping[str, Any] | None) -> Callable[[int], str | None] | None:
    """Token id -> text for the tokenizer ``identity`` (a counts file's ``tokenizer`` record:
    ``kind``, ``name``, ``vocab_sha256``) when it names a ``tokenizers`` JSON file or a saved
    posgeom word vocabulary that exists here (relative to the working directory or inside an
    installed package) and has that vocabulary hash, or a word vocabulary fitted in this process
    (:mod:`posgeom.corpus._vocabularies`); else None (a word vocabulary fitted in another
    process is not stored with the counts; a transformers name is not loaded: no hub access)."""
    if not identity or not isinstance(identity.get("name"), str):
        return None
    vocab = _vocabulary(str(identity["name"]), str(identity.get("kind")))
    if vocab is None and identity.get("kind") == "word":  # fitted on the corpus, this process
        from posgeom.corpus._vocabularies import recall

        vocab = recall(identity.get("vocab_sha256"))
    if vocab is None:
        return None
    from posgeom.corpus.tokenize import _vocab_sha256

    if _vocab_sha256(vocab) != identity.get("vocab_sha256"):
        return None
    text = {i: t for t, i in vocab.items()}
    return text.get


def _located(name: str) -> Path | None:
    """The file a recorded tokenizer name points to: the path itself (absolute, or relative to
    the working directory), or a package-relative one (``pkg/tokenizer.json``, as
    :func:`posgeom._paths.portable_path` records files inside installed packages)."""
    path = Path(name)
    if path.is_file():
        return path
    if path.is_absolute() or not path.parts:
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(path.parts[0])
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        found = Path(root).parent / path
        if found.is_file():
            return found
    return None


@functools.lru_cache(maxsize=4)
def _vocabulary(name: str, kind: str) -> dict[str, int] | None:
    path = _located(name) if kind in ("tokenizers", "word") else None
    if path is None:
        return None
    try:
        if kind == "word":
            from posgeom.corpus.tokenize import WordLevelTokenizer

            return dict(WordLevelTokenizer.load(path).vocab)
        import tokenizers

        return dict(tokenizers.Tokenizer.from_file(str(path)).get_vocab(with_added_tokens=True))
    except Exception:  # names are a courtesy: a file that will not load gives counted tokens
        return None
