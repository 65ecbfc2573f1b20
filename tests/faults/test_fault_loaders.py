"""Every loader turns every damaged, forged or hostile file into one PosgeomError (issue 10,
defects 8 and 11), checked by hand-made cases and by hypothesis fuzzing (random bytes and
mutations of valid files); no pickle is ever run."""

from __future__ import annotations

import json
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fault_helpers import Evil
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.artifacts import edit_header
from posgeom import PositionCounts, count_positions
from posgeom._errors import PosgeomError
from posgeom.corpus.token_ids import read_token_ids
from posgeom.corpus.tokenize import load_tokenizer
from posgeom.corpus.word_tokenizer import WordLevelTokenizer
from posgeom.encodings import from_file
from posgeom.io.artifacts import load_artifact, save_artifact

pytestmark = pytest.mark.usefixtures("code_never_runs")


def _safetensors(header: dict, data: bytes = b"", length: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _bad_files(tmp: Path) -> dict[str, Path]:
    """The damage of defect 8 (each file a separate case)."""
    cases: dict[str, bytes | None] = {
        "empty.npy": b"",
        "empty.npz": b"",
        "empty.safetensors": b"",
        "raw-pickle.npy": pickle.dumps(Evil()),
        "st-bad-header.safetensors": b"\x10\x00\x00\x00\x00\x00\x00\x00{not json......}",
        "st-length.safetensors": _safetensors({}, length=2**62),
        "st-offsets.safetensors": _safetensors(
            {"x": {"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 4096]}}, b"\0" * 32
        ),
        "st-shape.safetensors": _safetensors(
            {"x": {"dtype": "F64", "shape": [2**40, 2**40], "data_offsets": [0, 32]}}, b"\0" * 32
        ),
        "st-dtype.safetensors": _safetensors(
            {"x": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 32]}}, b"\0" * 32
        ),
    }
    out = {}
    for name, blob in cases.items():
        (tmp / name).write_bytes(blob)
        out[name] = tmp / name
    np.save(tmp / "object.npy", np.array([Evil(), 1], dtype=object), allow_pickle=True)
    out["object.npy"] = tmp / "object.npy"
    with open(tmp / "object.npz", "wb") as fh:
        np.savez(fh, a=np.array([Evil()], dtype=object))
    out["object.npz"] = tmp / "object.npz"
    big = tmp / "forged-shape.npy"  # header claims 2**40 rows, the file holds 16 bytes
    np.save(big, np.zeros(2))
    raw = big.read_bytes().replace(b"(2,)", b"(1099511627776,)", 1)
    big.write_bytes(raw)
    out["forged-shape.npy"] = big
    return out


def test_encoding_files_never_give_a_traceback(tmp_path):
    """Defect 8: ValueError, SafetensorError, EOFError from score/geometry/compare --encoding."""
    for name, path in _bad_files(tmp_path).items():
        with pytest.raises(PosgeomError):
            from_file(path, 2)
        if path.suffix in (".npy", ".npz"):
            with pytest.raises(PosgeomError):
                list(read_token_ids(path))
        with pytest.raises(PosgeomError):
            load_artifact(path)
        assert name  # every case was tried


def test_score_and_geometry_commands_print_one_line(tmp_path, capsys):
    from posgeom.cli.main import main

    counts = count_positions([[1, 2, 3, 4]] * 50 + [[2, 3]] * 50, max_positions=4)
    cpath = counts.save(tmp_path / "c.npz")
    files = _bad_files(tmp_path)
    for path in files.values():
        for argv in (
            ["score", "--target", str(path), str(path)],
            ["geometry", str(cpath), "-o", str(tmp_path / "g"), "--encoding", f"x={path}"],
            ["geometry", str(path), "-o", str(tmp_path / "g")],
        ):
            assert main(["-q", *argv]) == 2
            err = [line for line in capsys.readouterr().err.splitlines() if line]
            assert len(err) == 1 and err[0].startswith("posgeom: error:"), (argv, err)
    assert not (tmp_path / "g").exists()


def test_forged_self_consistent_metadata(tmp_path):
    """Defect 11: a sparse shape [16, 10] with its checksum recomputed gave a scipy traceback."""
    from posgeom.io.artifacts import _metadata_sha256

    rng = np.random.default_rng(0)
    counts = count_positions(rng.integers(0, 4000, size=(50, 16)), max_positions=16)
    path = counts.save(tmp_path / "c.npz")

    def forge(h):
        h["sparse"]["counts"]["shape"] = [16, 10]
        h["metadata_sha256"] = _metadata_sha256(h)
        return h

    edit_header(path, forge)
    with pytest.raises(PosgeomError, match="not a valid CSR matrix"):
        PositionCounts.load(path)


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory) -> list[tuple[str, bytes]]:
    """(name, bytes) of one valid file per loader, made once."""
    tmp = tmp_path_factory.mktemp("valid")
    return [(p.name, p.read_bytes()) for p in _valid_files(tmp)]


def _valid_files(tmp: Path) -> list[Path]:
    rng = np.random.default_rng(1)
    counts = count_positions(rng.integers(0, 30, size=(40, 6)), max_positions=6)
    files = [counts.save(tmp / "c.npz"), counts.save(tmp / "c.safetensors")]
    files.append(save_artifact(tmp / "a.npz", {"x": rng.normal(size=(5, 3))}, {"k": 1}, kind="d"))
    np.save(tmp / "v.npy", rng.normal(size=(6, 3)))
    files.append(tmp / "v.npy")
    np.savez(tmp / "v.npz", vectors=rng.normal(size=(6, 3)))
    files.append(tmp / "v.npz")
    files.append(WordLevelTokenizer().fit(["a b c", "b c"]).save(tmp / "w.json"))
    return files


def _load_everything(path: Path) -> None:
    """Every loader that could be handed ``path``; each may only raise PosgeomError."""
    loaders = [
        lambda: load_artifact(path),
        lambda: PositionCounts.load(path),
        lambda: from_file(path, 3),
        lambda: list(read_token_ids(path, format="npz" if path.suffix == ".npz" else "npy")),
        lambda: load_tokenizer(path),
    ]
    for load in loaders:
        try:
            load()
        except PosgeomError:
            pass


_FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_FUZZ
@given(
    data=st.binary(max_size=600), suffix=st.sampled_from([".npy", ".npz", ".safetensors", ".json"])
)
def test_fuzz_random_bytes(tmp_path, data, suffix):
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data)
    _load_everything(path)


@_FUZZ
@given(
    which=st.integers(0, 6),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.none() | st.integers(0, 10**6),
)
def test_fuzz_mutated_valid_files(tmp_path, valid_files, which, edits, cut):
    name, blob = valid_files[which % len(valid_files)]
    path = tmp_path / name
    raw = bytearray(blob)
    for at, value in edits:
        raw[at % len(raw)] = value
    if cut is not None:
        raw = raw[: cut % (len(raw) + 1)]
    path.write_bytes(bytes(raw))
    _load_everything(path)


def test_zip_members_that_are_not_arrays(tmp_path):
    path = tmp_path / "z.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("evil.pkl", pickle.dumps(Evil()))
    _load_everything(path)
    with pytest.raises(PosgeomError, match=r"not a \.npy array"):
        load_artifact(path)
