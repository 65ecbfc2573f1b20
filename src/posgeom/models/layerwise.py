"""Layer-wise positional signal of a pretrained model.

For every layer ``l`` (``l = 0`` the embedding output, ``l = 1..L`` the blocks, as returned with
``output_hidden_states=True``) and every position ``i < n``, the per-position mean hidden state
over a corpus,

    m_l(i) = (1 / c_i) * sum over tokens t at position i of h_l(t),

is accumulated batch by batch into float64 totals on the host, whatever the model's device and
dtype (:mod:`posgeom.models.accumulate`). Padding (attention mask 0) is never counted.

Positions and special tokens. With ``include_special=True`` position ``i`` is the index of the
token in the model's input (``[CLS]`` is position 0 for BERT). With ``include_special=False`` the
model still sees the full input, but special-token positions are left out of the sums and the
remaining tokens are re-indexed: a token's position is the number of non-special tokens before
it, the indexing of a corpus counted with special tokens removed. Special tokens are the
tokenizer's ``all_special_ids`` except the unknown token (an ``[UNK]`` stands for a real word), or
the ``special_token_ids`` you pass.

From the means:

- centred means ``m_l(i) - (1/n) sum_j m_l(j)`` (shape ``(L+1, n, d)``) and their Euclidean
  distance matrices ``Delta_l`` (shape ``(L+1, n, n)``);
- the stress of ``Delta_l`` against a target ``(n, n)`` Hellinger matrix for every stress kind of
  :func:`posgeom.scores.stress.stress` (hidden states are far larger than Hellinger distances,
  so ``"paper"`` and ``"raw"`` are dominated by scale; ``"scale_optimal"`` compares shapes);
- the share of hidden-state variance explained by position, from running sums of ``h`` and
  ``||h||^2`` per layer:

      R^2_l = sum_i c_i ||m_l(i) - m_l||^2 / sum_tokens ||h_l(t) - m_l||^2,

  with ``m_l`` the mean over all counted tokens (between-position over total sum of squares),
  the squares taken around the first batch's mean so that large means do not cancel.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import torch

from posgeom._distance_matrix import euclidean_distances, held_distances
from posgeom._errors import PosgeomError
from posgeom._validation import Interval, Options, check_int, validate_params
from posgeom.models import batching
from posgeom.models.accumulate import LayerTotals, check_every_position
from posgeom.models.batching import ON_LONG, PaddedBatch, cut_long, pad_batch, sequences
from posgeom.models.layer_signal import LayerwiseSignal
from posgeom.models.loading import (
    ModelTokenizer,
    _embedding_rows,
    loaded_model,
    model_position_limit,
    model_tokenizer,
    padding_id,
)
from posgeom.models.token_input import check_token_input, forward_module, hidden_states
from posgeom.scores.stress import STRESS_KINDS, stress_scores

__all__ = ["layerwise_positional_signal"]


# ------------------------------------------------------------------------------------- set-up


def _special_ids(
    include_special: bool, special_token_ids: Collection[int] | None, tokens: Any
) -> np.ndarray:
    if include_special:
        special: Collection[int] = ()
    elif special_token_ids is not None:
        special = {int(i) for i in special_token_ids}
    elif tokens is not None:
        special = tokens.special_ids
    else:
        raise PosgeomError(
            "include_special=False needs to know the special tokens: pass a tokenizer or "
            "special_token_ids=[...]"
        )
    return np.asarray(sorted(special), dtype=np.int64)


def sequence_limit(model: Any, max_length: int | None, n: int) -> int | None:
    """Tokens per sequence fed to the model: ``min(model positions, max_length)`` (``None``:
    no limit); ``max_length`` must be ``>= n`` and ``n`` within the limit."""
    limit = model_position_limit(model)
    if max_length is not None:
        length = check_int(max_length, "max_length", n)
        limit = length if limit is None else min(limit, length)
    if limit is not None and n > limit:
        raise PosgeomError(
            f"n = {n} positions but the model takes at most {limit}; use max_positions "
            f"(-n) <= {limit}"
        )
    return limit


def _resolve_target(target: Any, n: int) -> np.ndarray | None:
    if target is None:
        return None
    held = held_distances(target)
    arr = np.asarray(target if held is None else held, dtype=np.float64)
    if arr.shape != (n, n):
        raise PosgeomError(
            f"target must be an ({n}, {n}) distance matrix matching max_positions={n}, "
            f"got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise PosgeomError("target has NaN or infinite entries; drop or fix those positions")
    return arr


def _check_kinds(stress_kinds: Sequence[str]) -> tuple[str, ...]:
    kinds = tuple(stress_kinds)
    unknown = [kind for kind in kinds if kind not in STRESS_KINDS]
    if unknown:
        raise PosgeomError(
            f"unknown stress kind(s) {unknown}; choose from {', '.join(STRESS_KINDS)}"
        )
    return kinds


# ------------------------------------------------------------------------------------ batches


def _hidden_states(
    forward: Any, vocab_rows: int | None, device: torch.device, batch: PaddedBatch
) -> Sequence[torch.Tensor]:
    """The ``L+1`` hidden states ``(B, T, d)`` of one padded batch."""
    ids = batch.ids
    if vocab_rows is not None and (ids.max() >= vocab_rows or ids.min() < 0):
        raise PosgeomError(
            f"token id {int(ids.max())} is outside the model's vocabulary of {vocab_rows}: "
            "the token ids (or tokenizer) do not belong to this model"
        )
    mask = torch.from_numpy(batch.mask).to(device)
    return hidden_states(forward, torch.from_numpy(ids).to(device), mask)


def _accumulate(
    model: torch.nn.Module,
    tokens: ModelTokenizer | None,
    items: Iterable[Any],
    *,
    n: int,
    special: np.ndarray,
    limit: int | None,
    batch_size: int,
    on_long: str,
    progress: bool,
) -> tuple[LayerTotals, int, int]:
    """One pass over ``items``: the totals, sequences read and sequences cut (``special``: the
    int64 ids not counted; ``limit``: tokens per sequence fed to the model)."""
    from posgeom._placement import input_device
    from posgeom._progress import progress_bar

    forward, device, rows = forward_module(model), input_device(model), _embedding_rows(model)
    pad_id = padding_id(tokens, model)
    total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
    bar = progress_bar(total=total, disable=not progress, unit="item", desc="layer-wise signal")
    totals = LayerTotals(n, torch.device("cpu"))  # float64 totals on the host, always
    n_sequences = n_cut = 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            encode = None if tokens is None else tokens.encode
            stream = sequences(items, encode, chunk=batch_size, progress_bar=bar)
            budget = batching.token_budget(model)  # tokens per pass: batching's docstring
            for batch in batching.token_batches(stream, batch_size, budget, limit):
                batch = [seq for seq in batch if seq]
                n_sequences += len(batch)
                if not batch:
                    continue
                batch, cut = cut_long(batch, limit, on_long)
                n_cut += cut
                padded = pad_batch(batch, pad_id, special, n)
                totals.add(_hidden_states(forward, rows, device, padded), padded.pos)
    finally:
        bar.close()
        model.train(was_training)
    return totals, n_sequences, n_cut


# ------------------------------------------------------------------------------- finalisation


def layer_distances(means: np.ndarray) -> np.ndarray:
    """Euclidean distances ``(L+1, n, n)`` between the per-position means ``(L+1, n, d)`` of
    every layer, each layer centred on its grand mean first."""
    centred = means - means.mean(axis=1, keepdims=True)
    return np.stack([euclidean_distances(layer) for layer in centred])


def layer_stress(
    distances: np.ndarray, target: np.ndarray, kinds: Sequence[str] = STRESS_KINDS
) -> dict[str, np.ndarray]:
    """``stress(distances[l], target, kind=kind)`` for every layer ``l``: kind -> ``(L+1,)``."""
    per_layer = [stress_scores(d, target, encoding_kind="distances").as_dict() for d in distances]
    return {kind: np.array([s[kind] for s in per_layer]) for kind in kinds}


def _as_items(items: Any) -> Iterable[Any]:
    if isinstance(items, str):
        raise PosgeomError("pass a list of texts, not a single string")
    return [items] if isinstance(items, Mapping) else items  # a mapping is one tokenizer batch


@validate_params(
    {
        "max_positions": [Interval(Integral, 2, None)],
        "batch_size": [Interval(Integral, 1, None)],
        "include_special": [bool],
        "progress": [bool],
        "on_long": [Options(set(ON_LONG))],
        "max_length": [Interval(Integral, 2, None), None],
    }
)
def layerwise_positional_signal(
    model: Any,
    tokenizer: Any,
    texts_or_token_id_batches: Iterable[Any],
    *,
    max_positions: int,
    batch_size: int = 32,
    include_special: bool = True,
    target: Any = None,
    progress: bool = True,
    on_long: str = "truncate",
    max_length: int | None = None,
    special_token_ids: Collection[int] | None = None,
    stress_kinds: Sequence[str] = STRESS_KINDS,
    device: Any = None,
    dtype: Any = None,
) -> LayerwiseSignal:
    """Per-layer mean hidden state per position, its geometry, stress and variance share.

    Args:
        model: a Hugging Face model (any head; encoder-decoders use their encoder), or a name /
            local folder loaded offline with :func:`posgeom.models.loading.load_model`.
        tokenizer: anything :func:`posgeom.models.loading.model_tokenizer` accepts (the
            model's), or ``None`` when only token ids are given (then ``include_special=False``
            needs ``special_token_ids``).
        texts_or_token_id_batches: an iterable (read once, streamed) of corpus items
            (:mod:`posgeom.models.batching`), re-batched by ``batch_size`` and right-padded.
        max_positions: ``n``; positions ``0..n-1`` are analysed, later tokens still pass through
            the model but are not counted. Every position must receive at least one token.
        include_special: count special tokens (True) or skip them and re-index (False; module
            docstring).
        target: optional ``(n, n)`` distance matrix (e.g. Hellinger) or object with
            ``.distances``; when given, ``stress[kind]`` per layer (:func:`layer_stress`).
        progress: show a tqdm bar.
        on_long: sequences longer than ``min(model positions, max_length)`` tokens are cut to
            their first tokens, with a warning (``"truncate"``), or refused (``"refuse"``).
        max_length: tokens per sequence fed to the model (default: the model's limit), ``>= n``.
        stress_kinds: kinds to compute (default all four).
        device, dtype: where and in what precision a model given by name or folder is loaded
            (:func:`posgeom.models.loading.load_model`; default the CPU, float32).

    Returns:
        :class:`LayerwiseSignal`. Runs under ``torch.inference_mode`` in eval mode (the model's
        training flag is restored afterwards).
    """
    model = loaded_model(model, device=device, dtype=dtype)
    items = _as_items(texts_or_token_id_batches)
    n = int(max_positions)
    target_arr = _resolve_target(target, n)
    kinds = _check_kinds(stress_kinds)
    tokens = None if tokenizer is None else model_tokenizer(tokenizer)
    if tokens is not None:
        tokens.check_model(model)
    else:
        check_token_input(model)
    special = _special_ids(include_special, special_token_ids, tokens)
    limit = sequence_limit(model, max_length, n)
    totals, n_sequences, n_truncated = _accumulate(
        model,
        tokens,
        items,
        n=n,
        special=special,
        limit=limit,
        batch_size=int(batch_size),
        on_long=on_long,
        progress=progress,
    )
    moments = totals.finish()
    model_limit = "" if limit is None else f", or the model limit is {limit}"
    why = f" (the corpus has no sequence that long{model_limit})"
    check_every_position(moments.counts, why=why, fix="max_positions")
    if n_truncated:
        warnings.warn(
            f"{n_truncated} sequences were longer than the model's {limit} positions and "
            "were truncated",
            stacklevel=3,
        )
    distances = layer_distances(moments.means)
    return LayerwiseSignal(
        means=moments.means,
        counts=moments.counts,
        variance_explained=moments.variance_explained,
        distances=distances,
        stress=None if target_arr is None else layer_stress(distances, target_arr, kinds),
        layer_names=("embeddings", *(str(i) for i in range(1, moments.means.shape[0]))),
        include_special=bool(include_special),
        n_sequences=n_sequences,
        n_truncated=n_truncated,
        total_sum_squares=moments.total_sum_squares,
    )
