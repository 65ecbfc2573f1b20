"""Issue 36, item 12: inputs that reached the generic "unexpected failure" line or a raw
exception. Each is now one line and exit 2 on the command line, a clear ``TypeError`` /
``ValueError`` (``PosgeomError``) from the API, and leaves nothing written."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from fault_helpers import cli, one_line

from posgeom import GeometryConfig, PosgeomError, analyze, count_corpus, estimate_geometry
from posgeom.io._results import RESULTS_MANIFEST

HUGE = 2**70


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def counts_file(small_corpus, tmp_path_factory) -> Path:
    counts = count_corpus(small_corpus, "word", max_positions=8)
    return counts.save(tmp_path_factory.mktemp("counts") / "c.npz")


def test_a_model_width_of_2_to_the_70_is_one_line(counts_file, small_corpus, tmp_path, capsys):
    """`-d 2**70` reached numpy's "Maximum allowed size exceeded" after the corpus was read."""
    from posgeom import encodings as enc

    words = f"-d/--model-dim must be an integer >= 1 and <= 65536, got {HUGE}"
    cases = [
        ["geometry", counts_file, "-d", HUGE, "-o", tmp_path / "g"],
        ["run", small_corpus, "-t", "word", "-n", 8, "-d", HUGE, "-o", tmp_path / "r"],
        ["demo", "-d", HUGE, "-o", tmp_path / "d"],
    ]
    for argv in cases:
        code, err = cli(capsys, *argv)
        assert code == 2 and words in one_line(err), err
    assert not list(tmp_path.iterdir())
    with pytest.raises(PosgeomError, match="model_dim must be an integer >= 1 and <= 65536"):
        GeometryConfig(model_dim=HUGE)
    with pytest.raises(PosgeomError, match=r"d must be an even integer >= 2 and <= 65536"):
        enc.sinusoidal(8, d=HUGE)
    with pytest.raises(PosgeomError, match=r"d must be an integer >= 1 and <= 65536"):
        enc.random(8, d=HUGE)


@pytest.fixture(scope="module")
def layerless_bert(tmp_path_factory) -> Path:
    """A tiny random BERT (tests/helpers/models.py) whose config.json says num_hidden_layers = 0
    (its weights hold two)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from helpers.models import tiny_bert

    folder = tiny_bert(tmp_path_factory.mktemp("models") / "bert0")["folder"]
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 0}))
    return folder


@pytest.mark.filterwarnings("ignore")
def test_a_model_config_with_no_layers_is_one_line(layerless_bert, small_corpus, tmp_path, capsys):
    """`num_hidden_layers: 0` loaded (transformers' report of every unexpected weight on
    stderr), then ended in IndexError: tuple index out of range at the first batch."""
    cases = [
        ["analyze-model", layerless_bert, small_corpus, "-n", 6, "-o", tmp_path / "am"],
        ["probe", layerless_bert, small_corpus, "-n", 6, "-o", tmp_path / "pr"],
        ["extract", layerless_bert],
    ]
    for argv in cases:
        code, err = cli(capsys, *argv)
        line = one_line(err)
        assert code == 2 and "num_hidden_layers = 0" in line, err
    assert not list(tmp_path.iterdir())


def _nul_entry(folder: Path) -> None:
    manifest = folder / RESULTS_MANIFEST
    doc = json.loads(manifest.read_text())
    doc["files"]["a\x00b"] = {"size": 1, "sha256": "0" * 64}
    manifest.write_text(json.dumps(doc))


def test_a_nul_in_a_manifest_key_is_one_line(counts_file, small_corpus, tmp_path, capsys):
    """A NUL in a key of posgeom-manifest.json ran the whole command, then failed on pathlib's
    "embedded null byte" while replacing the folder."""
    run = tmp_path / "g"
    argv = ["geometry", counts_file, "-d", 4, "--noise", "none", "-o", run]
    assert cli(capsys, *argv)[0] == 0
    _nul_entry(run)
    before = _snapshot(run)
    code, err = cli(capsys, *argv, "--overwrite")
    line = one_line(err)
    assert (
        code == 2
        and "holds a NUL or another control character" in line
        and RESULTS_MANIFEST in line
    )
    assert _snapshot(run) == before
    job, out = tmp_path / "job", tmp_path / "c.npz"
    base = ["count", small_corpus, "-t", "word", "-n", 8, "--job-dir", job, "-o", out]
    assert cli(capsys, *base)[0] == 0
    _nul_entry(job)
    before = _snapshot(job)
    for extra in ([], ["--restart-job"]):
        out.unlink(missing_ok=True)
        code, err = cli(capsys, *base, *extra)
        assert code == 2 and "holds a NUL or another control character" in one_line(err), err
        assert _snapshot(job) == before and not out.exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: json.dumps({"families": []}),
        lambda text: text.replace('"predictors"', '"predictor"'),
        lambda text: text.replace('"top2_hits": ', '"top2_hits": "x", "_": '),
    ],
    ids=["truncated", "families-list", "no-predictors", "mistyped-count"],
)
@pytest.mark.filterwarnings("ignore")
def test_a_damaged_package_record_is_one_line(damage, tmp_path, monkeypatch, capsys):
    """The package's record.json (read by `extend` for its recommendation), damaged: a
    JSONDecodeError, KeyError or TypeError from deep inside the recommendation."""
    pytest.importorskip("torch")
    from importlib import resources

    from posgeom.extension import record

    package = tmp_path / "package"
    package.mkdir()
    text = resources.files("posgeom.extension").joinpath("record.json").read_text("utf-8")
    (package / "record.json").write_text(damage(text), encoding="utf-8")
    monkeypatch.setattr(record.resources, "files", lambda _name: package)
    record.load_record.cache_clear()
    try:
        with pytest.raises(PosgeomError, match=r"record\.json is damaged: .*reinstall posgeom"):
            record.load_record()
        ids = tmp_path / "ids.npy"
        np.save(ids, np.random.default_rng(0).integers(0, 12, size=(2, 2000)))
        spec = "rope:theta=10000,head_dim=16,max_position_embeddings=64"
        argv = ["extend", spec, ids, "--target-length", 128, "--replicates", 2, "--no-fit"]
        code, err = cli(capsys, *argv, "--classes", "top:12", "-o", tmp_path / "e")
        assert code == 2 and "record.json is damaged" in one_line(err), err
        assert not (tmp_path / "e").exists()
    finally:
        record.load_record.cache_clear()


def test_a_safetensors_tensor_of_shape_0_by_10_to_the_20(tmp_path, capsys):
    """A zero-byte tensor whose other dimension numpy cannot hold: "Maximum allowed dimension
    exceeded" through the generic line."""
    path = tmp_path / "t.safetensors"
    header = {"t": {"dtype": "F64", "shape": [0, 10**20], "data_offsets": [0, 0]}}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text)
    for argv in (["probe", path], ["score", "--target", path, f"t={path}"]):
        code, err = cli(capsys, *argv)
        line = one_line(err)
        assert code == 2 and "tensor 't' has an invalid shape" in line, err
    from posgeom.io._arrayfiles import read_safetensors

    with pytest.raises(PosgeomError, match="invalid shape"):
        read_safetensors(path)


@pytest.mark.parametrize("code", [["F64"], {"F64": 1}, 64, None])
def test_a_safetensors_dtype_that_is_not_a_string(tmp_path, capsys, code):
    """A header whose "dtype" is a JSON list: TypeError "unhashable type: 'list'" before."""
    path = tmp_path / "t.safetensors"
    header = {"t": {"dtype": code, "shape": [1], "data_offsets": [0, 8]}}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(8))
    code_, err = cli(capsys, "score", "--target", path, f"t={path}")
    assert code_ == 2 and "tensor 't' has unsupported dtype" in one_line(err), err
    from posgeom.io._arrayfiles import read_safetensors

    with pytest.raises(PosgeomError, match="unsupported dtype"):
        read_safetensors(path)


@pytest.mark.parametrize("limit", ["3", 2.5, True, -1])
def test_read_texts_limit_must_be_an_integer(small_corpus, limit):
    """`read_texts(limit='3')`: TypeError '<' not supported between 'str' and 'int'."""
    from posgeom.corpus import read_texts

    with pytest.raises(PosgeomError, match=r"^read_texts: limit must be an integer >= 0"):
        read_texts(small_corpus, limit=limit)
    assert len(list(read_texts(small_corpus, limit=3))) == 3


def test_api_argument_types_are_named(counts_file):
    """A seed given as text reached numpy's SeedSequence; a config that is not a GeometryConfig
    reached dataclasses.replace ("should be called on dataclass instances")."""
    from posgeom.corpus.counting import PositionCounts

    counts = PositionCounts.load(counts_file)
    for seed in ("1", -1, 2.5):
        with pytest.raises(PosgeomError, match=r"^seed must be an integer >= 0"):
            estimate_geometry(counts, seed=seed)
    with pytest.raises(TypeError, match=r"^analyze: config must be a GeometryConfig .*got str"):
        analyze(counts, "x")
    with pytest.raises(TypeError, match=r"config must be a GeometryConfig .*got dict"):
        analyze(counts, config={"model_dim": 4})
