"""save_module / load_module: safetensors round trips, metadata, shape checks, no pickle."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
safetensors = pytest.importorskip("safetensors")

from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from helpers.mds import mds_result, numpy_mds  # noqa: E402
from posgeom._errors import ArtifactError, PosgeomError  # noqa: E402
from posgeom.nn import (  # noqa: E402
    AbsolutePositionEmbedding,
    LearnedPositionEmbedding,
    LowRankPositionEmbedding,
    SinusoidalPositionEmbedding,
    load_module,
    save_module,
)

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _modules():
    return [
        AbsolutePositionEmbedding(torch.randn(7, 5), beyond="interpolate"),
        AbsolutePositionEmbedding(torch.randn(7, 5, dtype=torch.float64), trainable=False),
        LowRankPositionEmbedding(9, 6, 2),
        SinusoidalPositionEmbedding(11, 8, base=500.0, beyond="error"),
        LearnedPositionEmbedding(6, 4),
    ]


@pytest.mark.parametrize("idx", range(5))
def test_round_trip(tmp_path, idx):
    mod = _modules()[idx]
    path = save_module(mod, tmp_path / "m.safetensors")
    back = load_module(path)
    assert type(back) is type(mod)
    assert back.config() == mod.config()
    assert back.n_parameters == mod.n_parameters
    ids = torch.tensor([[0, 3, 2]])
    torch.testing.assert_close(back(ids), mod(ids), atol=0, rtol=0)
    # the file is plain safetensors: tensors equal the state dict, metadata is JSON
    raw = load_file(str(path))
    for k, v in mod.state_dict().items():
        torch.testing.assert_close(raw[k], v.detach(), atol=0, rtol=0)
    with safe_open(str(path), framework="pt") as f:
        meta = json.loads(f.metadata()["posgeom"])
    assert meta["class"] == type(mod).__name__
    assert meta["config"] == mod.config()


def test_round_trip_with_gower_extension(tmp_path):
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(8, 2)) * [2.0, 1.0]
    sq = ((pts[:, None] - pts[None]) ** 2).sum(-1)
    coords, w = numpy_mds(sq, 2)
    mds = mds_result(coords, w, np.eye(4)[:, :2])  # placed in 4 dimensions by padding
    mod = AbsolutePositionEmbedding.from_mds(mds, beyond="extend", train_sq_distances=sq)
    new = rng.normal(size=(1, 2))
    mod.extend(((new[:, None] - pts[None]) ** 2).sum(-1))
    back = load_module(save_module(mod, tmp_path / "g.safetensors"))
    torch.testing.assert_close(back(9), mod(9), atol=0, rtol=0)
    # the loaded module can extend further and agrees with the original
    more = ((rng.normal(size=(2, 2))[:, None] - pts[None]) ** 2).sum(-1)
    torch.testing.assert_close(back.extend(more), mod.extend(more), atol=0, rtol=0)


def test_wrong_shape_rejected_with_expected_and_found(tmp_path):
    path = save_module(AbsolutePositionEmbedding(torch.randn(64, 16)), tmp_path / "a.safetensors")
    target = AbsolutePositionEmbedding(torch.zeros(32, 16))
    with pytest.raises(ArtifactError) as exc:
        load_module(path, target)
    msg = str(exc.value)
    assert "(64, 16)" in msg and "(32, 16)" in msg and "weight" in msg
    assert isinstance(exc.value, PosgeomError)
    # a file whose tensors disagree with its own metadata (edited) is rejected the same way
    lr = LowRankPositionEmbedding(10, 6, 2)
    p2 = save_module(lr, tmp_path / "lr.safetensors")
    with safe_open(str(p2), framework="pt") as f:
        meta = f.metadata()
    tensors = load_file(str(p2))
    tensors["A"] = torch.zeros(10, 3)
    save_file(tensors, str(p2), metadata=meta)
    with pytest.raises(ArtifactError, match=r"shape \(10, 3\).*expects shape \(10, 2\)"):
        load_module(p2)


def test_other_files_rejected(tmp_path):
    plain = tmp_path / "plain.safetensors"
    save_file({"weight": torch.zeros(2, 2)}, str(plain))
    with pytest.raises(ArtifactError, match="no 'posgeom' metadata"):
        load_module(plain)
    with pytest.raises(ArtifactError, match="no such file"):
        load_module(tmp_path / "missing.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    with pytest.raises(ArtifactError, match="not a readable"):
        load_module(junk)
    path = save_module(LearnedPositionEmbedding(4, 2), tmp_path / "l.safetensors")
    with pytest.raises(ArtifactError, match="cannot load it into"):
        load_module(path, AbsolutePositionEmbedding(torch.zeros(4, 2)))
    with pytest.raises(PosgeomError, match="save_module supports"):
        save_module(torch.nn.Linear(2, 2), tmp_path / "x.safetensors")


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    save_module(LearnedPositionEmbedding(4, 2), tmp_path / "sub" / "l.safetensors")
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["l.safetensors"]
