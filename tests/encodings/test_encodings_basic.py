"""Sinusoidal, NoPE, random, xPos, files and the registry, against hand-computed references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import posgeom.encodings as enc
from posgeom._errors import PosgeomError


def _check_distance_matrix(d: np.ndarray, n: int) -> None:
    assert d.shape == (n, n) and d.dtype == np.float64
    assert np.array_equal(d, d.T)
    assert np.all(np.diag(d) == 0)


def test_sinusoidal_matches_annotated_transformer_and_hand_values():
    n, d = 50, 16
    e = enc.sinusoidal(n, d=d)
    # The Annotated Transformer's construction (exp/log form of the same formula).
    position = np.arange(n)[:, None]
    div_term = np.exp(np.arange(0, d, 2) * -(math.log(10000.0) / d))
    ref = np.zeros((n, d))
    ref[:, 0::2] = np.sin(position * div_term)
    ref[:, 1::2] = np.cos(position * div_term)
    np.testing.assert_allclose(e.vectors, ref, rtol=0, atol=1e-12)
    assert e.vectors[1, 0] == pytest.approx(math.sin(1.0))
    assert e.vectors[1, 1] == pytest.approx(math.cos(1.0))
    assert e.vectors[3, 2] == pytest.approx(math.sin(3 / 10000 ** (2 / 16)))
    assert e.vectors[0].tolist() == [0.0, 1.0] * (d // 2)
    np.testing.assert_allclose(np.linalg.norm(e.vectors, axis=1), math.sqrt(d / 2))
    dist = e.distances
    _check_distance_matrix(dist, n)
    # ||PE_i - PE_j||^2 = sum_k 2 - 2 cos((i - j) w_k)
    gap = np.arange(n)[:, None] - np.arange(n)[None, :]
    closed = np.sqrt(np.sum(2 - 2 * np.cos(gap[..., None] * div_term), axis=-1))
    np.testing.assert_allclose(dist, closed, atol=1e-9)
    np.testing.assert_allclose(dist, cdist(ref, ref), atol=1e-9)
    assert e.name == "sinusoidal" and e.n_positions == n and e.params == {"d": d, "base": 10000.0}


def test_sinusoidal_base_and_errors():
    e = enc.sinusoidal(4, d=2, base=2.0)
    np.testing.assert_allclose(e.vectors[:, 0], np.sin(np.arange(4)))
    for bad in (dict(d=7), dict(d=0), dict(d=1), dict(base=1.0), dict(base=-3), dict(base=0)):
        with pytest.raises(PosgeomError):
            enc.sinusoidal(8, **bad)
    for n in (0, -1, 2.5):
        with pytest.raises(PosgeomError):
            enc.sinusoidal(n)


def test_vectors_and_distances_are_read_only_attributes():
    e = enc.sinusoidal(5, d=4)
    with pytest.raises(ValueError):
        e.vectors[0, 0] = 1.0
    d1 = e.distances
    with pytest.raises(ValueError):
        d1[0, 1] = 99.0
    assert e.distances is d1  # built once, kept
    np.testing.assert_allclose(d1, cdist(e.vectors, e.vectors), rtol=0, atol=1e-12)
    assert (
        type(d1) is np.ndarray
        and type(d1 * 2.0) is np.ndarray
        and type(d1.sum(axis=0)) is np.ndarray
    )


def test_nope_and_random():
    z = enc.nope(6, d=3)
    assert np.all(z.vectors == 0) and z.vectors.shape == (6, 3)
    assert np.all(z.distances == 0)
    r = enc.random(7, d=5, seed=3, scale=2.0)
    np.testing.assert_array_equal(r.vectors, 2.0 * np.random.default_rng(3).standard_normal((7, 5)))
    np.testing.assert_allclose(r.distances, cdist(r.vectors, r.vectors), atol=1e-12)
    np.testing.assert_array_equal(enc.random(7, d=5, seed=3, scale=2.0).vectors, r.vectors)
    assert not np.array_equal(
        enc.random(7, d=5, seed=4).vectors, enc.random(7, d=5, seed=3).vectors
    )
    with pytest.raises(PosgeomError):
        enc.random(4, scale=0)


def test_single_position():
    assert enc.sinusoidal(1, d=4).distances.tolist() == [[0.0]]


def test_xpos_hand_values():
    n, h, s = 6, 8, 4.0
    e = enc.xpos(n, head_dim=h, scale_base=s)
    k = 1  # plane 1
    theta = 10000 ** (-2 * k / h)
    zeta = (2 * k / h + 0.4) / 1.4
    i = 5
    amp = zeta ** ((i - 3) / s)  # centre ceil(6/2) = 3
    assert e.vectors[i, k] == pytest.approx(amp * math.cos(i * theta))
    assert e.vectors[i, h // 2 + k] == pytest.approx(amp * math.sin(i * theta))
    key = enc.xpos(n, head_dim=h, scale_base=s, side="key")
    # query_i . key_i per plane = cos^2 + sin^2 = 1: the scales cancel at equal positions
    planes = e.vectors[:, :4] * key.vectors[:, :4] + e.vectors[:, 4:] * key.vectors[:, 4:]
    np.testing.assert_allclose(planes, 1.0)
    _check_distance_matrix(e.distances, n)
    with pytest.raises(PosgeomError):
        enc.xpos(4, head_dim=5)


def test_from_file_npy_npz_safetensors(tmp_path):
    vec = enc.sinusoidal(10, d=6).vectors
    np.save(tmp_path / "v.npy", vec)
    e = enc.from_file(tmp_path / "v.npy")
    np.testing.assert_array_equal(e.vectors, vec)
    assert enc.from_file(tmp_path / "v.npy", 4).vectors.shape == (4, 6)
    dist = cdist(vec, vec)
    np.savez(tmp_path / "d.npz", distances=dist)
    f = enc.from_file(tmp_path / "d.npz")
    assert f.vectors is None and f.params["kind"] == "distances"
    np.testing.assert_allclose(f.distances, dist)
    _check_distance_matrix(f.distances, 10)
    np.testing.assert_allclose(enc.from_file(tmp_path / "d.npz", 3).distances, dist[:3, :3])
    from safetensors.numpy import save_file

    save_file({"vectors": vec, "other": np.ones(3)}, str(tmp_path / "v.safetensors"))
    np.testing.assert_array_equal(enc.from_file(tmp_path / "v.safetensors").vectors, vec)
    with pytest.raises(PosgeomError, match="several arrays"):
        save_file({"a": vec, "b": vec}, str(tmp_path / "two.safetensors"))
        enc.from_file(tmp_path / "two.safetensors")
    np.testing.assert_array_equal(enc.from_file(tmp_path / "two.safetensors", key="b").vectors, vec)


def test_from_file_errors(tmp_path):
    bad = np.ones((5, 3))
    bad[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    with pytest.raises(PosgeomError, match="NaN"):
        enc.from_file(tmp_path / "nan.npy")
    np.save(tmp_path / "small.npy", np.ones((3, 4)))
    with pytest.raises(PosgeomError, match="3 positions"):
        enc.from_file(tmp_path / "small.npy", 8)
    np.save(tmp_path / "asym.npy", np.array([[0.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(PosgeomError, match="symmetric"):
        enc.from_file(tmp_path / "asym.npy", kind="distances")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):  # allow_pickle=False refuses object arrays
        enc.from_file(tmp_path / "obj.npy")
    np.save(tmp_path / "flat.npy", np.ones(4))
    with pytest.raises(PosgeomError, match="2-D"):
        enc.from_file(tmp_path / "flat.npy")
    with pytest.raises(PosgeomError, match="does not exist"):
        enc.from_file(tmp_path / "missing.npy")
    (tmp_path / "x.txt").write_text("1 2")
    with pytest.raises(PosgeomError, match="unsupported"):
        enc.from_file(tmp_path / "x.txt")


def test_registry():
    names = enc.available()
    for name in (
        "sinusoidal",
        "learned",
        "rope",
        "alibi",
        "t5",
        "nope",
        "random",
        "from_file",
        "mds",
    ):
        assert name in names
    np.testing.assert_array_equal(
        enc.get("sinusoidal", 8, d=4).vectors, enc.sinusoidal(8, 4).vectors
    )
    assert enc.get("alibi", 5, n_heads=8, head=2).params["slope"] == 2.0**-3
    with pytest.raises(PosgeomError) as info:
        enc.get("fourier", 8)
    assert "sinusoidal" in str(info.value) and "rope" in str(info.value)
    with pytest.raises(PosgeomError):
        enc.get("from_file", 8)
    with pytest.raises(PosgeomError):
        enc.get("nope", 0)
