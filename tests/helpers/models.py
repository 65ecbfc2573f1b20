"""A tiny random BERT saved to a folder with a WordLevel tokenizer: a real Hugging Face model and
tokenizer (loaded offline like any other) that runs in milliseconds, for the model commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WORDS = [f"w{k}" for k in range(20)]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
#: RoPE as Llama 2 has it (theta 10,000, no scaling), in transformers 5's spelling
DEFAULT_ROPE = {"rope_type": "default", "rope_theta": 10000.0}
#: the sizes of transformers' own model testers: vocabulary 99, width 32, 2 layers of 4 heads, MLP 37
TESTER_SIZES = {
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
}


def positional_texts(k: int = 300, *, min_length: int = 8, seed: int = 0) -> list[str]:
    """``k`` sentences of ``min_length`` to ``min_length + 3`` words whose word at position p is
    drawn from w(2p) .. w(2p + 5) (w19 at the most): a real positional signal on :data:`WORDS`."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [
        " ".join(WORDS[min(19, int(rng.integers(0, 6)) + 2 * p)] for p in range(length))
        for length in rng.integers(min_length, min_length + 4, size=k)
    ]


def _tokenizer_json(path: Path, vocab: dict[str, int]) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.add_special_tokens(SPECIALS)
    tok.save(str(path / "tokenizer.json"))
    return tok


def sized_config(config_class: Any, **fields: Any) -> Any:
    """``config_class`` (a ``transformers`` config class) at :data:`TESTER_SIZES`; ``fields`` add
    to or replace them."""
    return config_class(**(TESTER_SIZES | fields))


def padded_batch(seqs: list[list[int]]) -> tuple[Any, Any]:
    """Token id lists as one right-padded batch: ``(ids, mask)``, both ``(B, max length)`` long
    tensors, id 0 and mask 0 in the padding."""
    import torch

    length = max(map(len, seqs))
    ids = torch.zeros(len(seqs), length, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq)
        mask[row, : len(seq)] = 1
    return ids, mask


def tiny_bert_config(vocab_size: int, max_positions: int, *, num_hidden_layers: int = 2) -> Any:
    """A small ``transformers.BertConfig``: width 16 (2 heads), MLP 24, ``num_hidden_layers``
    layers, ``max_positions`` learned positions, ``[PAD]`` at id 0."""
    import transformers

    return transformers.BertConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=2,
        intermediate_size=24,
        max_position_embeddings=max_positions,
        pad_token_id=0,
    )


def tiny_bert(folder: Path, *, max_positions: int = 16) -> dict[str, Any]:
    """A seeded 2-layer BERT of width 16 over ``[PAD] [UNK] [CLS] [SEP] w0 .. w19`` saved in
    ``folder`` with its ``tokenizer.json``: ``{"folder", "model", "tok", "vocab"}``."""
    import torch
    import transformers

    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS)}
    torch.manual_seed(0)
    model = transformers.BertModel(tiny_bert_config(len(vocab), max_positions)).eval()
    model.save_pretrained(folder)
    tok = _tokenizer_json(folder, vocab)
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "unk_token": "[UNK]",
                "pad_token": "[PAD]",
                "cls_token": "[CLS]",
                "sep_token": "[SEP]",
            }
        )
    )
    return {"folder": folder, "model": model, "tok": tok, "vocab": vocab}


def tiny_llama(folder: Path, *, max_positions: int = 64) -> dict[str, Any]:
    """A seeded 1-layer Llama (RoPE, theta 10,000, head_dim 16, trained length
    ``max_positions``) over ``[UNK] w0 .. w11`` with a WordLevel tokenizer, saved in ``folder``:
    ``{"folder", "model", "vocab"}``."""
    import tokenizers
    import torch
    import transformers

    words = WORDS[:12]
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    config = tiny_llama_config(max_positions, vocab_size=len(vocab))
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return {"folder": folder, "model": model, "vocab": vocab}


def tiny_llama_config(
    max_positions: int,
    rope_parameters: dict[str, Any] | None = None,
    **fields: Any,
) -> Any:
    """A small ``transformers.LlamaConfig``: vocabulary 40, width 32 (2 query heads and 1 KV head
    of dim 16), MLP 48, one layer, trained length ``max_positions``, RoPE ``rope_parameters``
    (default :data:`DEFAULT_ROPE`); ``fields`` replace any of these."""
    import transformers

    sizes = {
        "vocab_size": 40,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
    }
    return transformers.LlamaConfig(
        **(sizes | fields),
        max_position_embeddings=max_positions,
        rope_parameters=dict(rope_parameters or DEFAULT_ROPE),
    )
