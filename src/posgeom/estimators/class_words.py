"""What the token classes of an estimate hold, in words: :func:`describe_classes` (the words every
surface prints beside a resolution, stored with the estimate as ``GeometryEstimate.classes``;
the words of the tokens come from :func:`posgeom.corpus.token_names.token_names`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from posgeom.estimators.resolution import frequency_order, kept_one_by_one

__all__ = ["SHOWN_TOKENS", "describe_classes"]

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
