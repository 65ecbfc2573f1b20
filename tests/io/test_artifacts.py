"""Artifacts: round trips, checksums against hashlib, tamper detection, atomic writes."""

from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import posgeom._version as version_module
from helpers.artifacts import MEMBER
from helpers.artifacts import edit_header as _edit_header
from helpers.artifacts import legacy_pair as _legacy_pair
from posgeom._errors import ArtifactError, PosgeomError
from posgeom.io._atomic import atomic_path, atomic_write_bytes, atomic_write_text
from posgeom.io.artifacts import load_artifact, read_sidecar, save_artifact, sidecar_path


def _arrays():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(5, 3))
    ids = np.arange(7, dtype=np.int32)
    counts = sp.random(6, 9, density=0.3, random_state=1, format="csr")
    counts.data = np.round(counts.data * 10).astype(np.int64) + 1
    return {"dense": dense, "ids": ids, "counts": counts}


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_round_trip(tmp_path, fmt):
    arrays = _arrays()
    meta = {"options": {"alpha": 0.5, "align": "end", "ids": (1, 2)}, "n": np.int64(3)}
    path = save_artifact(tmp_path / f"a.{fmt}", arrays, meta, kind="demo", format=fmt)
    got, got_meta = load_artifact(path, kind="demo")
    np.testing.assert_array_equal(got["dense"], arrays["dense"])
    assert got["ids"].dtype == np.int32
    assert sp.isspmatrix_csr(got["counts"])
    assert got["counts"].shape == (6, 9) and got["counts"].dtype == np.int64
    np.testing.assert_array_equal(got["counts"].toarray(), arrays["counts"].toarray())
    assert got_meta == {"options": {"alpha": 0.5, "align": "end", "ids": [1, 2]}, "n": 3}
    side = read_sidecar(path)
    assert not sidecar_path(path).exists()  # one file: the metadata is inside it
    assert side["kind"] == "demo" and side["posgeom_version"] == version_module.__version__
    # checksum of a dense array, recomputed independently with hashlib
    a = np.ascontiguousarray(arrays["dense"])
    ref = hashlib.sha256(a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes()).hexdigest()
    assert side["arrays"]["dense"]["sha256"] == ref
    # the metadata checksum is the sha256 of the canonical JSON of the rest
    body = {k: v for k, v in side.items() if k != "metadata_sha256"}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert side["metadata_sha256"] == hashlib.sha256(canon.encode()).hexdigest()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_npz_has_no_pickle_and_safetensors_embeds_metadata(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == [
            MEMBER,
            "counts.data",
            "counts.indices",
            "counts.indptr",
            "dense",
            "ids",
        ]
        assert z[MEMBER].dtype == np.uint8  # the metadata JSON as bytes, no pickle
    st = save_artifact(tmp_path / "b.safetensors", _arrays(), {"x": 1}, kind="demo")
    from safetensors import safe_open

    with safe_open(str(st), framework="numpy") as fh:
        embedded = json.loads(fh.metadata()["posgeom"])
    assert embedded["metadata"] == {"x": 1} and embedded["kind"] == "demo"


def test_wrong_kind(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    with pytest.raises(ArtifactError, match="'demo' artifact, not 'position_counts'"):
        load_artifact(path, kind="position_counts")


def test_other_version(tmp_path, monkeypatch):
    monkeypatch.setattr(version_module, "__version__", "7.3.1")
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    monkeypatch.setattr(version_module, "__version__", "0.1.0")
    with pytest.raises(ArtifactError, match=r"posgeom 7\.3\.1 but this is posgeom 0\.1\.0"):
        load_artifact(path)
    monkeypatch.setattr(version_module, "__version__", "7.3.9")  # patch releases are compatible
    assert load_artifact(path)[1] == {}


def test_version_edited_in_json(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    _edit_header(path, lambda h: {**h, "posgeom_version": "9.9.0"})
    with pytest.raises(ArtifactError, match=r"written by posgeom 9\.9\.0"):
        load_artifact(path)


def test_edited_metadata(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {"alpha": 0.5}, kind="demo")
    _edit_header(path, lambda h: {**h, "metadata": {"alpha": 0.25}})
    with pytest.raises(ArtifactError, match=r"metadata checksum .* edited"):
        load_artifact(path)


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_loads_the_two_file_layout_of_earlier_versions(tmp_path, fmt):
    path = save_artifact(tmp_path / f"a.{fmt}", _arrays(), {"alpha": 0.5}, kind="demo")
    if fmt == "npz":
        _legacy_pair(path)
    else:  # an old safetensors file had the copy in its header and the sidecar beside it
        sidecar_path(path).write_text(json.dumps(read_sidecar(path)))
    got, meta = load_artifact(path, kind="demo")
    assert meta == {"alpha": 0.5}
    np.testing.assert_array_equal(got["counts"].toarray(), _arrays()["counts"].toarray())
    save_artifact(path, _arrays(), {"alpha": 1.0}, kind="demo")  # saving over the pair
    assert not sidecar_path(path).exists() and load_artifact(path)[1] == {"alpha": 1.0}


def test_tampered_safetensors_byte(tmp_path):
    path = save_artifact(
        tmp_path / "a.safetensors", {"x": np.arange(100, dtype=np.int64)}, {}, kind="demo"
    )
    raw = bytearray(path.read_bytes())
    raw[-8] ^= 0xFF  # last element of x
    path.write_bytes(bytes(raw))
    with pytest.raises(ArtifactError, match="checksum of array 'x'"):
        load_artifact(path)


def test_tampered_npz_array(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    with np.load(path, allow_pickle=False) as z:
        content = {k: z[k] for k in z.files}
    content["dense"][2, 1] += 1e-9
    with open(path, "wb") as fh:  # a valid npz whose data no longer matches its metadata
        np.savez(fh, **content)
    with pytest.raises(ArtifactError, match="checksum of array 'dense'"):
        load_artifact(path)


def test_flipped_npz_byte_is_reported(tmp_path):
    path = save_artifact(
        tmp_path / "a.npz", {"x": np.arange(1000, dtype=np.int64)}, {}, kind="demo"
    )
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("x.npy")
    raw[info.header_offset + 200] ^= 0x01  # inside the array data (zip CRC then fails)
    path.write_bytes(bytes(raw))
    with pytest.raises(ArtifactError, match=r"damaged|checksum"):
        load_artifact(path)


def test_missing_metadata_and_missing_file(tmp_path):
    path = save_artifact(tmp_path / "a.npz", _arrays(), {}, kind="demo")
    _legacy_pair(path)
    sidecar_path(path).unlink()  # an old pair without its sidecar, or a plain npz
    with pytest.raises(ArtifactError, match=r"carries no posgeom metadata"):
        load_artifact(path)
    path2 = save_artifact(tmp_path / "b.npz", _arrays(), {}, kind="demo")
    path2.unlink()
    with pytest.raises(ArtifactError, match=r"b\.npz is missing"):
        load_artifact(path2)


def test_bad_inputs(tmp_path):
    with pytest.raises(PosgeomError, match="numeric arrays only"):
        save_artifact(tmp_path / "a.npz", {"s": np.array(["a", "b"])}, {}, kind="demo")
    with pytest.raises(PosgeomError, match="plain JSON"):
        save_artifact(tmp_path / "a.npz", {"x": np.zeros(2)}, {"bad": object()}, kind="demo")
    with pytest.raises(PosgeomError, match="unknown artifact format"):
        save_artifact(tmp_path / "a.npz", {"x": np.zeros(2)}, {}, kind="demo", format="pickle")
    assert not list(tmp_path.iterdir())


def test_atomic_helpers(tmp_path):
    target = tmp_path / "sub" / "f.txt"
    atomic_write_text(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    atomic_write_bytes(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("interrupted")
    assert target.read_bytes() == b"\x00\x01"  # untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.txt"]  # no temp left


def test_json_text_is_strict_json():
    """NaN and infinities, nested in dicts, lists, numpy arrays and scalars, become null; numpy
    values, sets and paths their plain forms; the text parses with a strict parser."""
    from pathlib import Path

    from helpers.artifacts import _no_constant
    from posgeom.io.jsonfiles import json_text

    value = {
        "stress": float("nan"),
        "rows": [np.float64(np.inf), 1.5, (np.nan, -np.inf)],
        "array": np.array([[0.5, np.nan]]),
        "n": np.int64(3),
        "names": {"b", "a"},
        "path": Path("x/y"),
    }
    text = json_text(value, sort_keys=True)
    assert "NaN" not in text and "Infinity" not in text
    got = json.loads(text, parse_constant=_no_constant)
    assert got == {
        "array": [[0.5, None]],
        "n": 3,
        "names": ["a", "b"],
        "path": "x/y",
        "rows": [None, 1.5, [None, None]],
        "stress": None,
    }
    with pytest.raises(ValueError, match="strict parser"):  # the reference refuses bare NaN
        json.loads(json.dumps(value["stress"]), parse_constant=_no_constant)
    with pytest.raises(TypeError):
        json_text({"x": object()})


def test_fsync_path_is_best_effort_for_folders_only(tmp_path):
    """A folder that cannot be opened is skipped (some filesystems refuse a folder's fsync); a
    file that cannot be opened is an error, and an existing one is flushed."""
    from posgeom.io._atomic import fsync_path

    missing = tmp_path / "gone"
    assert fsync_path(missing, directory=True) is None
    with pytest.raises(FileNotFoundError):
        fsync_path(missing)
    (tmp_path / "f.bin").write_bytes(b"x")
    fsync_path(tmp_path / "f.bin")
    fsync_path(tmp_path, directory=True)
