"""Layer-wise positional signal of a pretrained model.

For every layer ``l`` (``l = 0`` the embedding output, ``l = 1..L`` the blocks, as returned with
``output_hidden_states=True``) and every position ``i < n``, the per-position mean hidden state
over a corpus,

    m_l(i) = (1 / c_i) * sum over tokens t at position i of h_l(t),

is accumulated batch by batch on the hidden states' device: per batch, one ``index_add_`` per
layer into float32 per-position sums (float64 for float64 models; at most ``batch_size`` tokens
per position, so ~1e-7 relative round-off), added into float64 running totals (on the CPU for
MPS). Hidden states of a batch are read in place and dropped once added, never copied or stored.
Padding (attention mask 0) is never counted, whatever the model writes there.

Positions and special tokens. With ``include_special=True`` position ``i`` is the index of the
token in the model's input (``[CLS]`` is position 0 for BERT). With ``include_special=False`` the
model still sees the full input, special tokens included, but special-token positions are left out
of the sums and the remaining tokens are re-indexed: a token's position is the number of
non-special tokens before it. This is the same indexing as counting positions on a corpus with
special tokens removed, so the result lines up with a Hellinger target built that way. Special
tokens are the tokenizer's ``all_special_ids`` except the unknown token (an ``[UNK]`` stands for
a real word), or the ``special_token_ids`` you pass.

From the means:

- centred means ``m_l(i) - (1/n) sum_j m_l(j)`` (shape ``(L+1, n, d)``) and their Euclidean
  distance matrices ``Delta_l`` (shape ``(L+1, n, n)``);
- the stress of ``Delta_l`` against a target ``(n, n)`` Hellinger matrix for every stress kind of
  :func:`posgeom.scores.stress.stress` (hidden states are far larger than Hellinger distances,
  so ``"paper"`` and ``"raw"`` are dominated by scale; ``"scale_optimal"`` compares shapes);
- the share of hidden-state variance explained by position, from running sums of ``h`` and
  ``||h||^2`` per layer:

      R^2_l = sum_i c_i ||m_l(i) - m_l||^2 / sum_tokens ||h_l(t) - m_l||^2,

  with ``m_l`` the mean over all counted tokens (between-position over total sum of squares).
  The squares are taken around a shift ``s`` (the first batch's mean): per token ``||h - s||`` is
  computed in the work dtype and its square summed in float64, so that large hidden-state means
  do not cancel catastrophically.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from posgeom._errors import PosgeomError
from posgeom.models.mechanisms import model_position_limit

__all__ = ["STRESS_KINDS", "LayerwiseSignal", "layerwise_positional_signal"]

STRESS_KINDS = ("paper", "stress1", "scale_optimal", "raw")


@dataclass(frozen=True, eq=False)
class LayerwiseSignal:
    """Per-layer positional signal of a model over a corpus (all arrays float64 unless noted).

    Attributes:
        means: per-position mean hidden states, shape ``(L+1, n, d)`` (layer 0 = embeddings).
        counts: tokens counted per position, shape ``(n,)`` int64.
        variance_explained: ``R^2`` per layer, shape ``(L+1,)`` (see module docstring).
        distances: Euclidean distances between centred means, shape ``(L+1, n, n)``.
        stress: stress kind -> ``(L+1,)`` array against the target, or ``None`` without a target.
        layer_names: ``("embeddings", "1", ..., "L")``.
        include_special: whether special tokens were counted (see module docstring).
        n_sequences: sequences read; n_truncated: how many were cut to the model's limit.
    """

    means: np.ndarray
    counts: np.ndarray
    variance_explained: np.ndarray
    distances: np.ndarray
    stress: dict[str, np.ndarray] | None
    layer_names: tuple[str, ...]
    include_special: bool
    n_sequences: int
    n_truncated: int = 0
    total_sum_squares: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_layers(self) -> int:
        """Number of rows (embedding output plus blocks), ``L + 1``."""
        return int(self.means.shape[0])

    @property
    def n_positions(self) -> int:
        return int(self.means.shape[1])

    @property
    def centred_means(self) -> np.ndarray:
        """``means`` minus their unweighted mean over positions, shape ``(L+1, n, d)``."""
        return self.means - self.means.mean(axis=1, keepdims=True)

    def to_table(self, *, digits: int = 4) -> str:
        """Markdown table: one row per layer with R^2, mean distance and every stress kind."""
        kinds = list(self.stress) if self.stress else []
        header = ["layer", "variance explained by position", "mean distance"]
        header += [f"stress ({kind})" for kind in kinds]
        lines = [
            "| " + " | ".join(header) + " |",
            "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |",
        ]
        n = self.n_positions
        pairs = max(n * (n - 1), 1)
        for layer, name in enumerate(self.layer_names):
            mean_distance = float(self.distances[layer].sum() / pairs)
            cells = [name, f"{self.variance_explained[layer]:.{digits}g}"]
            cells.append(f"{mean_distance:.{digits}g}")
            cells += [f"{self.stress[kind][layer]:.{digits}g}" for kind in kinds]  # type: ignore[index]
            lines.append("| " + " | ".join(cells) + " |")
        special = "counted" if self.include_special else "excluded (positions re-indexed)"
        lines.append("")
        lines.append(
            f"{self.n_sequences} sequences, {int(self.counts.sum())} tokens counted over {n} "
            f"positions (min {int(self.counts.min())} per position); special tokens {special}"
            + (f"; {self.n_truncated} sequences truncated" if self.n_truncated else "")
            + "."
        )
        return "\n".join(lines)


# ------------------------------------------------------------------------------------ tokenizers


class _Tokens:
    """Uniform view of a transformers tokenizer or a ``tokenizers.Tokenizer``."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.is_rust = hasattr(tokenizer, "encode_batch") and not hasattr(
            tokenizer, "all_special_ids"
        )
        if self.is_rust and getattr(tokenizer, "truncation", None):
            warnings.warn(
                f"the tokenizer truncates to {tokenizer.truncation.get('max_length')} tokens; "
                "call tokenizer.no_truncation() first to analyse full sequences",
                stacklevel=3,
            )

    def vocab_size(self) -> int | None:
        if self.is_rust:
            return int(self.tokenizer.get_vocab_size(with_added_tokens=True))
        try:
            return len(self.tokenizer)
        except TypeError:  # pragma: no cover - exotic tokenizer
            return getattr(self.tokenizer, "vocab_size", None)

    def special_ids(self) -> set[int]:
        if self.is_rust:
            decoder = self.tokenizer.get_added_tokens_decoder()
            unk = getattr(self.tokenizer.model, "unk_token", None)
            return {int(i) for i, tok in decoder.items() if tok.special and tok.content != unk}
        unk_id = getattr(self.tokenizer, "unk_token_id", None)
        return {int(i) for i in self.tokenizer.all_special_ids if i != unk_id}

    def pad_id(self) -> int | None:
        if self.is_rust:
            padding = getattr(self.tokenizer, "padding", None)
            return None if not padding else int(padding["pad_id"])
        value = getattr(self.tokenizer, "pad_token_id", None)
        return None if value is None else int(value)

    def encode(self, texts: list[str]) -> list[list[int]]:
        if self.is_rust:
            encodings = self.tokenizer.encode_batch(texts)
            return [
                [i for i, keep in zip(e.ids, e.attention_mask, strict=True) if keep]
                for e in encodings
            ]
        out = self.tokenizer(
            texts, add_special_tokens=True, truncation=False, padding=False, verbose=False
        )
        return [list(ids) for ids in out["input_ids"]]


def _rows(item: Any) -> Iterator[list[int]]:
    """Token-id sequences from one non-text item (1-D sequence, 2-D batch, or a mapping)."""
    if isinstance(item, Mapping):
        if "input_ids" not in item:
            raise PosgeomError(
                "a mapping item must have 'input_ids' (and optionally 'attention_mask')"
            )
        raw = item["input_ids"]
        ids = np.asarray(raw.cpu() if isinstance(raw, torch.Tensor) else raw)
        mask = item.get("attention_mask")
        mask_arr = (
            None
            if mask is None
            else np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask).astype(bool)
        )
        if ids.ndim == 1:
            ids = ids[None]
            mask_arr = None if mask_arr is None else mask_arr[None]
        for r in range(ids.shape[0]):
            row = ids[r] if mask_arr is None else ids[r][mask_arr[r]]
            yield [int(t) for t in row]
        return
    arr = np.asarray(item.cpu() if isinstance(item, torch.Tensor) else item)
    if arr.dtype.kind not in "iu" and arr.size:
        raise PosgeomError(
            f"expected texts or integer token ids, got an item of dtype {arr.dtype}; pass str "
            "texts, lists of token ids, or mappings with 'input_ids'"
        )
    if arr.ndim == 1:
        yield [int(t) for t in arr]
    elif arr.ndim == 2:
        for row in arr:
            yield [int(t) for t in row]
    else:
        raise PosgeomError(f"token-id items must be 1-D or 2-D, got shape {arr.shape}")


def _sequences(
    items: Iterable[Any], tokens: _Tokens | None, chunk: int, progress_bar: Any
) -> Iterator[list[int]]:
    iterator = iter(items)
    while True:
        group = list(itertools.islice(iterator, chunk))
        if not group:
            return
        texts = [i for i, item in enumerate(group) if isinstance(item, str)]
        encoded: dict[int, list[int]] = {}
        if texts:
            if tokens is None:
                raise PosgeomError("texts need a tokenizer: pass tokenizer=... or token ids")
            for index, ids in zip(texts, tokens.encode([group[i] for i in texts]), strict=True):
                encoded[index] = ids
        for index, item in enumerate(group):
            if index in encoded:
                yield encoded[index]
            else:
                yield from _rows(item)
        progress_bar.update(len(group))


# --------------------------------------------------------------------------------------- signal


def _forward_module(model: torch.nn.Module) -> torch.nn.Module:
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        return model.get_encoder()
    return model


def _resolve_target(target: Any, n: int) -> np.ndarray | None:
    if target is None:
        return None
    if hasattr(target, "distances") and callable(target.distances):
        target = target.distances()
    arr = np.asarray(target, dtype=np.float64)
    if arr.shape != (n, n):
        raise PosgeomError(
            f"target must be an ({n}, {n}) distance matrix matching max_positions={n}, "
            f"got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise PosgeomError("target has NaN or infinite entries; drop or fix those positions")
    return arr


def _pairwise(vectors: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import pdist, squareform

    return squareform(pdist(vectors, metric="euclidean"))


def _pad_batch(
    batch: list[list[int]], pad_id: int, special_arr: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-padded ``ids``, ``attention_mask`` and counted ``pos`` (``-1``: not counted), (B, T).

    ``pos`` is the token index (or, with special tokens, the number of non-special tokens
    before it); padding, special tokens and positions ``>= n`` get ``-1``.
    """
    lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
    length = int(lengths.max())
    flat = np.fromiter(itertools.chain.from_iterable(batch), dtype=np.int64, count=lengths.sum())
    mask = np.arange(length)[None, :] < lengths[:, None]
    ids = np.full((len(batch), length), pad_id, dtype=np.int64)
    ids[mask] = flat  # row-major order matches the concatenation
    if special_arr.size:
        keep = ~np.isin(flat, special_arr)
        ranks = np.cumsum(keep)  # over the whole batch; make it per row
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        before = np.concatenate(([0], ranks))[starts]  # non-special tokens in earlier rows
        index = ranks - 1 - np.repeat(before, lengths)
        values = np.where(keep & (index < n), index, -1)
    else:
        values = np.broadcast_to(np.arange(length), mask.shape)[mask]
        values = np.where(values < n, values, -1)
    pos = np.full((len(batch), length), -1, dtype=np.int64)
    pos[mask] = values
    return ids, mask.astype(np.int64), pos


class _Accumulator:
    """Per-batch statistics of every layer, on the hidden states' device, in float32 (float64
    for float64 models); the caller adds them into float64 totals.

    For a batch with flat token slots ``slot`` (the position ``i < n`` of a counted token, ``n``
    for padding, special tokens and positions ``>= n``), each layer's ``(B*T, d)`` hidden states
    are read twice and never copied: one ``index_add_`` into an ``(L+1, n+1, d)`` buffer (row
    ``n`` collects everything not counted, including garbage at padding, and is dropped) gives
    the per-position sums, and one fused ``||h - s||`` per token gives the squared distances to
    the shift ``s``, of which the counted ones are summed in float64. A batch adds at most
    ``batch_size`` tokens per position, so a batch sum carries ~1e-7 relative round-off.
    """

    def __init__(self, n: int, acc_device: torch.device):
        self.n = n
        self.acc_device = acc_device  # float64 device (the CPU for MPS)
        self.shift: torch.Tensor | None = None  # (L+1, d) in the work dtype
        self._sums: torch.Tensor | None = None
        self._norms: torch.Tensor | None = None

    def first_shift(self, hidden: Sequence[torch.Tensor], take: torch.Tensor) -> torch.Tensor:
        """The first batch's mean of the counted tokens, ``(L+1, d)`` in the work dtype."""
        first = hidden[0]
        dtype = torch.float64 if first.dtype == torch.float64 else torch.float32
        width = int(first.shape[-1])
        self.shift = torch.stack(
            [h.reshape(-1, width).index_select(0, take).to(dtype).mean(0) for h in hidden]
        )
        return self.shift

    def add(
        self, hidden: Sequence[torch.Tensor], slot: torch.Tensor, take: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-position sums ``(L+1, n, d)`` (work dtype) and float64 ``sum ||h - s||^2``."""
        shift = self.shift
        assert shift is not None
        layers, width, size = len(hidden), int(shift.shape[1]), int(slot.shape[0])
        sums, norms = self._sums, self._norms
        if sums is None or sums.shape[0] != layers:
            sums = torch.empty(layers, self.n + 1, width, dtype=shift.dtype, device=shift.device)
            self._sums = sums
        if norms is None or norms.shape[0] != layers or norms.shape[1] < size:
            norms = torch.empty(layers, size, dtype=shift.dtype, device=shift.device)
            self._norms = norms
        sums.zero_()
        norms = norms[:, :size]
        for layer, h in enumerate(hidden):  # two reads of each layer, no copy of the batch
            rows = h.reshape(-1, width).to(shift.dtype)
            sums[layer].index_add_(0, slot, rows)
            torch.linalg.vector_norm(rows - shift[layer], dim=1, out=norms[layer])
        counted = norms.index_select(1, take).to(self.acc_device, torch.float64)
        return sums[:, : self.n], counted.square().sum(dim=1)


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
    truncate: bool = True,
    special_token_ids: Collection[int] | None = None,
    stress_kinds: Sequence[str] = STRESS_KINDS,
) -> LayerwiseSignal:
    """Per-layer mean hidden state per position, its geometry, stress and variance share.

    Args:
        model: a Hugging Face model (any head; encoder-decoders use their encoder), or a name /
            local folder loaded offline with :func:`posgeom.models.loading.load_model`.
        tokenizer: a transformers tokenizer, a ``tokenizers.Tokenizer``, a name/path, or ``None``
            when only token ids are given (then ``include_special=False`` needs
            ``special_token_ids``).
        texts_or_token_id_batches: an iterable (read once, streamed) of texts (tokenized with
            special tokens added), token-id sequences, 2-D token-id arrays (one row per sequence,
            no padding), or mappings ``{"input_ids", "attention_mask"}`` (masked-out tokens are
            dropped). Sequences are re-batched by ``batch_size`` and right-padded.
        max_positions: ``n``; positions ``0..n-1`` are analysed, later tokens still pass through
            the model but are not counted. Every position must receive at least one token.
        include_special: count special tokens (True) or skip them and re-index (False; module
            docstring).
        target: optional ``(n, n)`` distance matrix (e.g. Hellinger) or object with
            ``.distances()``; when given, ``stress[kind]`` is computed per layer with
            :func:`posgeom.scores.stress.stress_scores` (the same numbers as
            ``stress(distances[l], target, kind=kind)``).
        progress: show a tqdm bar. truncate: cut sequences longer than the model's position limit
            (with a warning) instead of raising.
        stress_kinds: kinds to compute (default all four).

    Returns:
        :class:`LayerwiseSignal`. Runs under ``torch.inference_mode`` with the model in eval mode
        (its training flag is restored afterwards).
    """
    if isinstance(model, str) or hasattr(model, "__fspath__"):
        from posgeom.models.loading import load_model

        model = load_model(model)
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        from posgeom.models.loading import load_tokenizer

        tokenizer = load_tokenizer(tokenizer)
    if not isinstance(model, torch.nn.Module):
        raise PosgeomError(
            f"model must be a torch model or a name/path, got {type(model).__name__}"
        )
    if int(max_positions) != max_positions or max_positions < 2:
        raise PosgeomError(f"max_positions must be an integer >= 2, got {max_positions!r}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise PosgeomError(f"batch_size must be a positive integer, got {batch_size!r}")
    n = int(max_positions)
    batch_size = int(batch_size)
    if isinstance(texts_or_token_id_batches, str):
        raise PosgeomError("pass a list of texts, not a single string")
    if isinstance(texts_or_token_id_batches, Mapping):  # one tokenizer batch
        texts_or_token_id_batches = [texts_or_token_id_batches]
    target_arr = _resolve_target(target, n)
    kinds = tuple(stress_kinds)
    unknown = [kind for kind in kinds if kind not in STRESS_KINDS]
    if unknown:
        raise PosgeomError(
            f"unknown stress kind(s) {unknown}; choose from {', '.join(STRESS_KINDS)}"
        )

    tokens = None if tokenizer is None else _Tokens(tokenizer)
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    vocab_model = None
    if embeddings is not None and getattr(embeddings, "weight", None) is not None:
        vocab_model = int(embeddings.weight.shape[0])
    if tokens is not None and vocab_model is not None:
        vocab_tok = tokens.vocab_size()
        if vocab_tok is not None and vocab_tok > vocab_model:
            raise PosgeomError(
                f"the tokenizer has {vocab_tok} tokens but the model's input embedding has only "
                f"{vocab_model} rows: tokenizer and model do not match. Load the tokenizer that "
                "belongs to this model (same name or folder)"
            )

    if include_special:
        special: set[int] = set()
    elif special_token_ids is not None:
        special = {int(i) for i in special_token_ids}
    elif tokens is not None:
        special = tokens.special_ids()
    else:
        raise PosgeomError(
            "include_special=False needs to know the special tokens: pass a tokenizer or "
            "special_token_ids=[...]"
        )

    special_arr = np.fromiter(special, dtype=np.int64, count=len(special))
    config = getattr(model, "config", None)
    pad_id = tokens.pad_id() if tokens is not None else None
    if pad_id is None:
        pad_id = getattr(config, "pad_token_id", None)
    if not isinstance(pad_id, int) or (vocab_model is not None and not 0 <= pad_id < vocab_model):
        pad_id = 0
    limit = model_position_limit(model)

    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    acc_device = torch.device("cpu") if device.type == "mps" else device  # no float64 on MPS
    forward = _forward_module(model)

    from tqdm.auto import tqdm

    try:
        total = len(texts_or_token_id_batches)  # type: ignore[arg-type]
    except TypeError:
        total = None
    bar = tqdm(total=total, disable=not progress, unit="item", desc="layer-wise signal")

    sums: torch.Tensor | None = None  # (L+1, n, d) float64 sums of h
    shift: torch.Tensor | None = None  # (L+1, d) float64 (exactly the work-dtype shift)
    sumsq: torch.Tensor | None = None  # (L+1,) float64 sums of ||h - shift||^2
    counts_np = np.zeros(n, dtype=np.int64)
    acc = _Accumulator(n, acc_device)
    n_sequences = 0
    n_truncated = 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            stream = _sequences(texts_or_token_id_batches, tokens, batch_size, bar)
            while True:
                batch = list(itertools.islice(stream, batch_size))
                if not batch:
                    break
                batch = [seq for seq in batch if len(seq) > 0]
                n_sequences += len(batch)
                if not batch:
                    continue
                if limit is not None:
                    too_long = [len(seq) > limit for seq in batch]
                    if any(too_long):
                        if not truncate:
                            raise PosgeomError(
                                f"a sequence has {max(map(len, batch))} tokens but the model "
                                f"takes at most {limit} positions; pass truncate=True or "
                                "shorten the texts"
                            )
                        n_truncated += sum(too_long)
                        batch = [seq[:limit] for seq in batch]
                ids, mask, pos = _pad_batch(batch, pad_id, special_arr, n)
                if vocab_model is not None and (ids.max() >= vocab_model or ids.min() < 0):
                    raise PosgeomError(
                        f"token id {int(ids.max())} is outside the model's vocabulary of "
                        f"{vocab_model}: the token ids (or tokenizer) do not belong to this model"
                    )
                out = forward(
                    input_ids=torch.from_numpy(ids).to(device),
                    attention_mask=torch.from_numpy(mask).to(device),
                    output_hidden_states=True,
                    return_dict=True,
                )
                hidden = out.hidden_states
                del out
                if hidden is None:
                    raise PosgeomError(
                        f"{type(forward).__name__} returned no hidden_states; use a model whose "
                        "forward supports output_hidden_states=True"
                    )
                flat_pos = pos.reshape(-1)
                take = np.flatnonzero(flat_pos >= 0)  # flat (row-major) indices of counted tokens
                if take.size == 0:
                    continue
                where = flat_pos[take]  # their positions
                counts_np += np.bincount(where, minlength=n)
                if sums is not None and len(hidden) != sums.shape[0]:
                    raise PosgeomError("the model returned a varying number of hidden states")
                hdev = hidden[0].device
                slot = torch.from_numpy(np.where(flat_pos >= 0, flat_pos, n)).to(hdev)
                take_t = torch.from_numpy(take).to(hdev)
                if sums is None:
                    # Shift: the first batch's mean in the work dtype; the float64 copy is
                    # exactly the shift the sums of squares are taken around.
                    shift = acc.first_shift(hidden, take_t).to(acc_device, torch.float64)
                    sums = torch.zeros(
                        len(hidden), n, shift.shape[1], dtype=torch.float64, device=acc_device
                    )
                    sumsq = torch.zeros(len(hidden), dtype=torch.float64, device=acc_device)
                assert sumsq is not None
                batch_sums, batch_sumsq = acc.add(hidden, slot, take_t)
                sums.add_(batch_sums.to(acc_device))
                sumsq.add_(batch_sumsq.to(acc_device))
                del hidden, batch_sums
    finally:
        bar.close()
        model.train(was_training)

    if sums is None or sumsq is None or shift is None:
        raise PosgeomError("no tokens were counted: the corpus is empty")
    if np.any(counts_np == 0):
        first_empty = int(np.flatnonzero(counts_np == 0)[0])
        raise PosgeomError(
            f"position {first_empty} received no tokens (the corpus has no sequence that long"
            + ("" if limit is None else f", or the model limit is {limit}")
            + f"); use max_positions <= {first_empty}"
        )
    if n_truncated:
        warnings.warn(
            f"{n_truncated} sequences were longer than the model's {limit} positions and were "
            "truncated",
            stacklevel=2,
        )

    sums_np = sums.cpu().numpy()
    shift_np = shift.cpu().numpy()
    sumsq_np = sumsq.cpu().numpy()
    c = counts_np.astype(np.float64)
    means = sums_np / c[None, :, None]  # (L+1, n, d)
    shifted_means = means - shift_np[:, None, :]
    total_tokens = c.sum()
    grand = sums_np.sum(axis=1) / total_tokens - shift_np  # (L+1, d), grand mean minus shift
    total_ss = sumsq_np - total_tokens * np.einsum("ld,ld->l", grand, grand)
    between = np.einsum("i,lid->l", c, (shifted_means - grand[:, None, :]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        positive = total_ss > 0
        variance_explained = np.where(positive, between / np.where(positive, total_ss, 1), np.nan)

    centred = means - means.mean(axis=1, keepdims=True)
    distances = np.stack([_pairwise(layer) for layer in centred])
    stress_values: dict[str, np.ndarray] | None = None
    if target_arr is not None:
        from posgeom.scores.stress import stress_scores

        per_layer = [
            stress_scores(d, target_arr, encoding_kind="distances").as_dict() for d in distances
        ]
        stress_values = {kind: np.array([s[kind] for s in per_layer]) for kind in kinds}
    n_layers = means.shape[0]
    return LayerwiseSignal(
        means=means,
        counts=counts_np,
        variance_explained=variance_explained,
        distances=distances,
        stress=stress_values,
        layer_names=("embeddings", *(str(i) for i in range(1, n_layers))),
        include_special=bool(include_special),
        n_sequences=n_sequences,
        n_truncated=n_truncated,
        total_sum_squares=total_ss,
    )
