"""extend --emit: every engine's spelling of a strategy, checked against the engine's own reading
(transformers' ROPE_INIT_FUNCTIONS and config classes) or hand-computed values of the engine's
formulas (vLLM/SGLang/llama.cpp/exllamav2, docs/ENGINES.md)."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import numpy as np
import pytest

from posgeom.cli.main import main
from posgeom.extension.engines import ENGINES, EngineTarget, emit, engine_names
from posgeom.extension.engines.servers import derived_cap
from posgeom.extension.model import parse_family_spec
from posgeom.extension.strategies import enumerate_strategies

L0, L, THETA, HD = 512, 2048, 100000.0, 64


def _targets() -> dict[str, EngineTarget]:
    model = parse_family_spec(f"rope:theta={THETA:g},head_dim={HD},max_position_embeddings={L0}")
    out = {}
    for s in enumerate_strategies(model, L0, L):
        out[s.name] = EngineTarget(
            s.name,
            dict(s.rope_parameters),
            HD,
            L0,
            L,
            model="/models/m",
            kind=s.kind,
            model_theta=THETA,
        )
    return out


TARGETS = _targets()


def _by(target: EngineTarget) -> dict:
    return {e.engine: e for e in emit(target, "all")}


def _transformers_inv_freq(body: dict) -> tuple[np.ndarray, float]:
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = transformers.LlamaConfig(hidden_size=HD, num_attention_heads=1, **body)
    kind = config.rope_parameters["rope_type"]
    if kind == "default":
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        inv, att = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        inv, att = ROPE_INIT_FUNCTIONS[kind](config, None, seq_len=L)
    return inv.double().numpy(), float(att)


@pytest.mark.parametrize(
    "name",
    [
        "none",
        "linear x4",
        "yarn x4 b32/1",
        "yarn x4 b32/1 no-attn",
        "llama3 x4 1/4",
        "longrope p=1",
        "dynamic x4",
    ],
)
@pytest.mark.parametrize("engine", ["transformers5", "transformers4"])
def test_transformers_files_load_in_transformers_with_the_strategys_frequencies(name, engine):
    target = TARGETS[name]
    body = json.loads(_by(target)[engine].text)
    inv, att = _transformers_inv_freq(body)
    w, a = target.frequencies(L)
    np.testing.assert_allclose(inv, w, rtol=2e-6)  # transformers computes in float32
    assert att == pytest.approx(a, rel=1e-6)
    assert body["max_position_embeddings"] == (L0 if name.startswith("dynamic") else L)


def test_transformers4_file_keeps_theta_outside_and_longrope_trained_length_on_top():
    body = json.loads(_by(TARGETS["longrope p=1"])["transformers4"].text)
    assert body["rope_theta"] == THETA and "rope_theta" not in body["rope_scaling"]
    assert body["original_max_position_embeddings"] == L0
    assert json.loads(_by(TARGETS["none"])["transformers4"].text)["rope_scaling"] is None


def _command(text: str) -> list[str]:
    return shlex.split(next(ln for ln in text.splitlines() if not ln.startswith("#")))


def test_vllm_writes_yarn_attention_as_attn_factor_that_reproduces_it():
    e = _by(TARGETS["yarn x4 b32/1 no-attn"])["vllm"]
    words = _command(e.text)
    assert words[:3] == ["vllm", "serve", "/models/m"]
    overrides = json.loads(words[words.index("--hf-overrides") + 1])
    p = overrides["rope_parameters"]
    # vLLM 0.32 reads attention_factor; SGLang and earlier vLLM scale cos/sin by
    # yarn_get_mscale(s) * attn_factor = (0.1 ln 4 + 1) attn_factor
    assert p["attention_factor"] == 1.0
    assert (0.1 * math.log(4) + 1) * p["attn_factor"] == pytest.approx(1.0, rel=1e-12)
    assert words[words.index("--max-model-len") + 1] == str(L)
    assert not e.settings["env"]  # L is within vLLM's derived cap (L0 x 4)


def test_vllm_dynamic_reads_as_the_static_base_transformers_reaches_at_L():
    target = TARGETS["dynamic x4"]
    e = _by(target)["vllm"]
    assert any("differ" in n for n in e.notes)
    # vLLM: base x (f max_len / max_pos - (f - 1))^(d/(d-2)), max_len = max_pos x f
    f, d = 4.0, HD
    vllm_base = THETA * (f * (L0 * f) / L0 - (f - 1)) ** (d / (d - 2))
    inv, _ = _transformers_inv_freq(
        {
            "rope_scaling": {"rope_type": "dynamic", "factor": f},
            "rope_theta": THETA,
            "max_position_embeddings": L0,
        }
    )
    np.testing.assert_allclose(inv, vllm_base ** -(np.arange(0, d, 2) / d), rtol=2e-6)
    # vLLM 0.32 gets that static base as the default rope type, with a cache reaching L
    body = e.settings["hf_overrides"]
    assert body["rope_parameters"] == {
        "rope_type": "default",
        "rope_theta": pytest.approx(vllm_base),
    }
    assert body["max_position_embeddings"] == L and not e.settings["env"]
    # llama.cpp and exllamav2 get the same static base
    llama = _by(target)["llamacpp"]
    assert llama.settings["rope_freq_base"] == pytest.approx(vllm_base, rel=1e-12)
    assert _by(target)["exllamav2"].settings["rope_alpha"] == pytest.approx(13.0)


def test_derived_caps_and_the_environment_variable():
    assert derived_cap({"rope_type": "linear", "factor": 4.0}, L) == 4 * L
    assert (
        derived_cap({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": L0}, L)
        == 4 * L0
    )
    assert derived_cap({"rope_type": "llama3", "factor": 4.0}, L0) == L0
    far = EngineTarget(
        "y",
        {
            "rope_type": "yarn",
            "rope_theta": THETA,
            "factor": 2.0,
            "original_max_position_embeddings": L0,
        },
        HD,
        L0,
        L,
    )
    assert _by(far)["vllm"].text.splitlines()[1].startswith("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 ")
    assert (
        _by(far)["sglang"]
        .text.splitlines()[1]
        .startswith("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 ")
    )


def test_llamacpp_yarn_flags_and_attention_key():
    e = _by(TARGETS["yarn x4 b32/1 no-attn"])["llamacpp"]
    words = _command(e.text)
    flag = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("-")}
    assert flag["-c"] == str(L) and flag["--rope-scaling"] == "yarn"
    assert float(flag["--rope-scale"]) == 4.0 and flag["--yarn-orig-ctx"] == str(L0)
    key, _, value = flag["--override-kv"].partition("=")
    assert key == "ARCH.rope.scaling.attn_factor"
    # llama.cpp: mscale = attn_factor key x (1 + 0.1 ln(1/freq_scale))
    assert float(value.split(":")[1]) * (1 + 0.1 * math.log(4)) == pytest.approx(1.0, rel=1e-12)
    kwargs = json.loads(_by(TARGETS["yarn x4 b32/1"])["llama-cpp-python"].text)
    assert kwargs["rope_scaling_type"] == 2 and kwargs["rope_freq_scale"] == 0.25
    assert "kv_overrides" not in kwargs  # the default attention factor is llama.cpp's own


@pytest.mark.parametrize("name", ["llama3 x4 1/4", "longrope p=1"])
def test_llamacpp_refuses_what_its_command_line_cannot_say(name):
    by = _by(TARGETS[name])
    for engine in ("llamacpp", "llama-cpp-python", "ollama"):
        assert by[engine].filename is None and by[engine].refused
    assert "convert_hf_to_gguf" in by["llamacpp"].refused


def test_exllamav2_alpha_linear_and_yarn_limits():
    ntk = next(t for n, t in TARGETS.items() if n.startswith("ntk"))
    alpha = _by(ntk)["exllamav2"].settings["rope_alpha"]
    assert THETA * alpha ** (HD / (HD - 2)) == pytest.approx(ntk.theta, rel=1e-12)
    assert _by(TARGETS["linear x4"])["exllamav2"].settings["rope_scale"] == 4.0
    assert _by(TARGETS["yarn x4 b16/1"])["exllamav2"].refused  # betas fixed at 32/1
    assert _by(TARGETS["yarn x4 b32/1 no-attn"])["exllamav2"].refused
    assert _by(TARGETS["yarn x4 b32/1"])["exllamav2"].notes  # the ramp found at max_seq_len


def test_engine_names_and_the_unknown_one():
    assert engine_names("all") == list(ENGINES)
    assert engine_names(["tabby", "transformers"]) == ["transformers5", "exllamav2"]
    with pytest.raises(Exception, match="unknown engine 'trt'"):
        engine_names(["trt"])


def _ids(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "ids.npy"
    np.save(path, rng.integers(0, 12, size=(2, 1500)))
    return path


SPEC = "rope:theta=10000,head_dim=16,max_position_embeddings=64"


def _extend_emit(tmp_path, engine: str, *options: str, spec: str = SPEC) -> tuple[int, Path]:
    """``posgeom extend SPEC IDS --target-length 256 OPTIONS -o OUT -q --emit ENGINE``: the exit
    code and OUT."""
    out = tmp_path / "out"
    argv = ["extend", spec, str(_ids(tmp_path)), "--target-length", "256", *options]
    return main([*argv, "-o", str(out), "-q", "--emit", engine]), out


def test_extend_emit_all_writes_every_file_and_engines_md(tmp_path, capsys):
    rc, out = _extend_emit(tmp_path, "all", "--replicates", "0", "--classes", "top:12", "--no-fit")
    assert rc == 0
    names = {p.name for p in out.iterdir()}
    assert {
        "transformers5.config.json",
        "transformers4.config.json",
        "vllm.sh",
        "sglang.sh",
        "engines.md",
        "tabby_config.yml",
    } <= names
    md = (out / "engines.md").read_text()
    assert "## ollama: refused" in md and "rope-check" in md
    rope = json.loads((out / "rope_parameters.json").read_text())
    assert json.loads((out / "transformers5.config.json").read_text())["rope_parameters"] == rope


def test_extend_emit_unknown_engine_exits_2_before_writing(tmp_path, capsys):
    rc, out = _extend_emit(tmp_path, "tensorrt")
    assert rc == 2
    assert "unknown engine 'tensorrt'" in capsys.readouterr().err
    assert not out.exists()


def test_extend_emit_on_a_family_without_rotary_settings_exits_2(tmp_path, capsys):
    alibi = "alibi:heads=4,max_position_embeddings=64"
    rc, out = _extend_emit(tmp_path, "vllm", "--replicates", "0", "--classes", "top:12", spec=alibi)
    assert rc == 2
    assert "--emit writes rotary settings" in capsys.readouterr().err
    assert not out.exists()


def test_partial_rotary_engines_compare_frequencies_over_the_rotary_planes():
    # partial_rotary_factor 0.5 rotates d = 32 of 64 dims; every engine reads the same factor,
    # so an engine's reading is compared with transformers' over those 16 planes
    spec = f"rope:theta={THETA:g},head_dim={HD},max_position_embeddings={L0}"
    model = parse_family_spec(spec + ",partial_rotary_factor=0.5")
    by_strategy = {
        s.name: _by(EngineTarget(s.name, dict(s.rope_parameters), HD, L0, L, kind=s.kind))
        for s in enumerate_strategies(model, L0, L)
    }
    assert all(set(by) == set(ENGINES) for by in by_strategy.values())
    # dynamic x4: vLLM's static base theta r^(d/(d-2)), r = f^2 - f + 1 = 13, against
    # transformers' unscaled frequencies at L0: the largest gap is on the slowest plane
    # k = d/2 - 1, |r^(-2k/(d-2)) - 1| = 1 - 1/r
    by = by_strategy["dynamic x4"]
    (note,) = [n for n in by["vllm"].notes if "differ by up to" in n]
    assert f"differ by up to {1 - 1 / 13:.3g} " in note
    d = HD // 2
    assert by["llamacpp"].settings["rope_freq_base"] == pytest.approx(
        THETA * 13 ** (d / (d - 2)), rel=1e-12
    )
