"""The per-pass token budget (posgeom.models.batching.token_budget, token_batches): groups by
hand, the budget's formula by hand, and the layer means unchanged by the grouping (checked
against one stacked float64 computation of every hidden state)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.models import padded_batch, tiny_llama_config  # noqa: E402
from posgeom.models import batching, layerwise_positional_signal  # noqa: E402
from posgeom.models.batching import token_batches, token_budget  # noqa: E402

N = 8


def test_groups_hold_at_most_batch_size_sequences_and_max_tokens_padded_tokens():
    seqs = [[1] * k for k in (2, 3, 3, 5, 9, 1, 1)]
    groups = [[len(s) for s in g] for g in token_batches(iter(seqs), 3, 10, None)]
    # (2, 3, 3): 3 x 3 = 9 <= 10; + 5 would be 4 x 5; (5): + 9 would be 2 x 9 = 18 > 10;
    # (9) alone; then (1, 1).
    assert groups == [[2, 3, 3], [5], [9], [1, 1]]
    # lengths count after the cut to the model's limit: 9 -> 4, so (5 -> 4, 9 -> 4) pair up
    cut = [[len(s) for s in g] for g in token_batches(iter(seqs), 3, 10, 4)]
    assert cut == [[2, 3, 3], [5, 9], [1, 1]]
    assert [len(g) for g in token_batches(iter(seqs), 2, 10**6, None)] == [2, 2, 2, 1]


def _llama(**overrides):
    sizes = {"vocab_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 8}
    config = tiny_llama_config(64, num_key_value_heads=2, **sizes, **overrides)
    torch.manual_seed(0)
    return transformers.LlamaModel(config).eval()


def test_the_budget_by_hand():
    model = _llama()
    # c = 2 ((L + 1) d s + 3 f 4 + 2 d 4) = 2 (4 * 32 * 4 + 3 * 48 * 4 + 2 * 32 * 4) = 2 * 1344
    assert token_budget(model) == 64 * 2**20 // 2688  # a small model: the 64 MiB floor
    big = transformers.LlamaConfig(
        vocab_size=49152,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=16,
    )
    with torch.device("meta"):
        large = transformers.LlamaModel(big).to(torch.bfloat16)
    params = 49152 * 2048 + 16 * (4 * 2048 * 2048 + 3 * 2048 * 8192 + 2 * 2048) + 2048
    per_token = 2 * (17 * 2048 * 2 + 3 * 8192 * 4 + 2 * 2048 * 4)
    assert token_budget(large) == int(0.1 * params * 2 // per_token) == 637


def _stacked_means(model, seqs):
    """One padded batch, every hidden state stacked in float64, masked mean per position."""
    ids, mask = padded_batch(seqs)
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    h = torch.stack(hidden).double().numpy()[:, :, :N]  # (L+1, B, N, d)
    keep = mask.numpy()[:, :N].astype(float)[None, :, :, None]
    return (h * keep).sum(axis=1) / keep.sum(axis=1)


def test_a_small_budget_splits_the_passes_and_leaves_the_means(monkeypatch):
    model = _llama()
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 64, size=k).tolist() for k in rng.integers(N, 30, size=24)]
    whole = layerwise_positional_signal(model, None, seqs, max_positions=N, batch_size=64)
    per_token = 2688
    monkeypatch.setattr(batching, "MIN_BATCH_BYTES", 60 * per_token)  # 60 tokens per pass
    passes = []
    hook = model.register_forward_hook(
        lambda m, args, kw, out: passes.append(kw["input_ids"]), with_kwargs=True
    )
    try:
        split = layerwise_positional_signal(model, None, seqs, max_positions=N, batch_size=64)
    finally:
        hook.remove()
    assert len(passes) > 5 and all(ids.numel() <= 60 for ids in passes)
    assert sum(ids.shape[0] for ids in passes) == len(seqs)
    reference = _stacked_means(model, seqs)
    scale = np.abs(reference).max()
    # float32 per-pass sums into float64 totals: the grouping moves the means by round-off only
    np.testing.assert_allclose(split.means, reference, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(whole.means, reference, rtol=0, atol=1e-6 * scale)
    np.testing.assert_array_equal(split.counts, whole.counts)


def test_sequences_encode_the_texts_in_chunks_and_keep_every_item_in_order():
    from posgeom._errors import PosgeomError
    from posgeom.corpus.word_tokenizer import WordLevelTokenizer
    from posgeom.models.loading import model_tokenizer

    tok = model_tokenizer(WordLevelTokenizer().fit(["a b c", "b c"]))  # [UNK] 0, b 1, c 2, a 3
    items = ["a b", [7, 8], "c", np.array([[1, 2], [3, 4]]), "b a"]
    got = list(batching.sequences(items, tok.encode, chunk=2))
    assert got == [[3, 1], [7, 8], [2], [1, 2], [3, 4], [1, 3]]
    with pytest.raises(PosgeomError, match="texts need a tokenizer"):
        list(batching.sequences(items, None, chunk=2))
