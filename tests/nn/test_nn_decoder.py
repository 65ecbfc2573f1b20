"""posgeom.nn.decoder: the Track B decoder in the library, its safetensors file, bad files."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

from posgeom._errors import ArtifactError, PosgeomError

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from helpers.decoder import gower_rows_reference  # noqa: E402
from posgeom.nn import ALiBiBias, RotaryEmbedding, save_module  # noqa: E402
from posgeom.nn.decoder import CausalDecoder, DecoderConfig, load_decoder, save_decoder  # noqa: E402
from posgeom.nn.encoder import EncoderLayer  # noqa: E402
from posgeom.nn.position import (  # noqa: E402
    LearnedPositionEmbedding,
    SinusoidalPositionEmbedding,
)
from posgeom.nn.relative import T5RelativeBias  # noqa: E402

ENCODINGS = ("rope", "alibi", "nope", "learned", "sinusoidal", "t5")


def _track_b_reference(encoding: str, seed: int, d: int = 64, heads: int = 2, l0: int = 128):
    """The model exactly as the extension study's Track B (studies/extension/track_b.py) built it when the committed Track B
    records were measured (a class inside a function), kept here as the reference."""
    from torch import nn

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    pos = {
        "rope": lambda: RotaryEmbedding(d // heads, 10000.0),
        "alibi": lambda: ALiBiBias(heads),
        "t5": lambda: T5RelativeBias(heads, bidirectional=False, generator=gen),
        "learned": lambda: LearnedPositionEmbedding(l0, d, generator=gen),
        "sinusoidal": lambda: SinusoidalPositionEmbedding(l0, d),
        "nope": lambda: None,
    }[encoding]()

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(256, d)
            self.position = pos
            self.layers = nn.ModuleList(EncoderLayer(d, heads, 4 * d) for _ in range(2))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, 256)

        def forward(self, x):
            length = x.shape[1]
            ids = torch.arange(length)
            h = self.tok(x)
            mask = torch.full((length, length), float("-inf")).triu(1)[None]
            kw: dict[str, Any] = {"bias": mask}
            if isinstance(self.position, RotaryEmbedding):
                kw.update(rope=self.position, position_ids=ids)
            elif isinstance(self.position, (ALiBiBias, T5RelativeBias)):
                kw["bias"] = mask + self.position(length)
            elif self.position is not None:
                h = h + self.position(ids)
            for layer in self.layers:
                h = layer(h, **kw)
            return self.head(self.ln(h))

    return Decoder()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_library_decoder_is_track_b_s_model(encoding):
    from studies.extension import track_b as B

    old = _track_b_reference(encoding, 1)
    new = B.build(encoding, 1)
    assert isinstance(new, CausalDecoder)
    assert list(old.state_dict()) == list(new.state_dict())
    for key, value in old.state_dict().items():
        assert torch.equal(value, new.state_dict()[key]), key
    x = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 96)))
    with torch.no_grad():
        assert torch.equal(old(x), new(x))
    # the caller's random state is left alone
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    CausalDecoder(DecoderConfig(position=encoding, d_model=16, trained_length=16), seed=2)
    assert torch.equal(torch.rand(3), expected)


def test_gower_table_is_track_b_s_gower_and_the_benchmark_uses_it():
    from posgeom.extension import extend_table
    from studies.extension import track_b as B

    rng = np.random.default_rng(0)
    table = rng.normal(size=(40, 12)) * 0.2 + np.cumsum(rng.normal(size=(40, 12)) * 0.1, axis=0)
    ext = extend_table(table, 100, "gower-table")
    assert np.array_equal(ext[:40], table)
    np.testing.assert_allclose(ext[40:], gower_rows_reference(table, 100), rtol=1e-9, atol=1e-12)
    model = B.build("learned", 0)
    model.trained_table = model.position.embedding.weight.detach().clone()
    weight = model.trained_table.double().numpy()
    rows = (
        B.with_strategy(model, "learned", "gower", 256).position.table().detach().double().numpy()
    )
    np.testing.assert_allclose(rows[128:], gower_rows_reference(weight, 256), rtol=1e-5, atol=1e-7)


def test_the_benchmark_converts_a_legacy_state_dict_once(tmp_path):
    from studies.extension import track_b as B

    reference = _track_b_reference("t5", 0)
    torch.save(reference.state_dict(), tmp_path / "t5_seed0.pt")  # how Track B saved them
    converted = B.load("t5", 0, tmp_path)
    assert (tmp_path / "t5_seed0.safetensors").exists() and B.load("t5", 1, tmp_path) is None
    again, meta = load_decoder(tmp_path / "t5_seed0.safetensors")
    assert meta["info"]["encoding"] == "t5" and meta["info"]["seed"] == 0
    x = torch.arange(64)[None] * 3 % 256
    with torch.no_grad():
        assert torch.equal(converted(x), reference(x)) and torch.equal(again(x), reference(x))
    (tmp_path / "t5_seed0.pt").unlink()  # from now on the safetensors file is read
    with torch.no_grad():
        assert torch.equal(B.load("t5", 0, tmp_path)(x), reference(x))


def _tiny(position: str = "rope", **kw) -> CausalDecoder:
    cfg = DecoderConfig(
        position=position, d_model=16, n_heads=2, n_layers=1, d_ff=32, trained_length=16, **kw
    )
    return CausalDecoder(cfg, seed=0).eval()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_save_and_load_give_the_same_model_and_no_pickle(tmp_path, encoding):
    model = _tiny(encoding)
    path = save_decoder(model, tmp_path / "m.safetensors", info={"steps": 3})
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])  # a safetensors header, then raw tensor bytes only
    meta = json.loads(header.pop("__metadata__")["posgeom"])
    sizes = [int(np.prod(v["shape"])) * 4 for v in header.values()]  # float32
    assert len(raw) == 8 + n + sum(sizes) and b"\x80\x04" not in raw[: 8 + n]
    assert set(header) == set(model.state_dict())
    assert meta["format"] == "posgeom.decoder/1" and meta["config"]["tokenizer"] == "bytes"
    loaded, got = load_decoder(path)
    assert got["info"] == {"steps": 3} and loaded.config == model.config
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would create it
    x = torch.arange(16)[None] * 7
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))


def test_bad_files_and_bad_input_raise_one_line(tmp_path):
    from safetensors.torch import save_file

    model = _tiny()
    good = save_decoder(model, tmp_path / "good.safetensors")
    cases = {
        "random bytes": (b"\x00\x01garbage" * 10, "not a readable safetensors file"),
        "truncated": (good.read_bytes()[:-40], "not a readable safetensors file"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(data)
        with pytest.raises(ArtifactError, match=message):
            load_decoder(path)
    save_file({"w": torch.zeros(2)}, str(tmp_path / "plain.safetensors"))
    with pytest.raises(ArtifactError, match="no 'posgeom' metadata"):
        load_decoder(tmp_path / "plain.safetensors")
    save_module(LearnedPositionEmbedding(4, 3), tmp_path / "table.safetensors")
    with pytest.raises(ArtifactError, match="not a posgeom decoder"):
        load_decoder(tmp_path / "table.safetensors")
    state = dict(model.state_dict())
    state["head.bias"] = torch.zeros(3)
    meta = json.dumps({"format": "posgeom.decoder/1", "config": {"position": "rope"}})
    save_file(state, str(tmp_path / "edited.safetensors"), metadata={"posgeom": meta})
    with pytest.raises(ArtifactError, match="do not match its configuration"):
        load_decoder(tmp_path / "edited.safetensors")
    with pytest.raises(ArtifactError, match="no such file"):
        load_decoder(tmp_path / "missing.safetensors")
    (tmp_path / "a file").write_text("")
    with pytest.raises(PosgeomError, match="is a file, not a folder"):
        save_decoder(model, tmp_path / "a file" / "m.safetensors")
    names = ("good", "random bytes", "truncated", "plain", "table", "edited")
    expected = {f"{n}.safetensors" for n in names} | {"a file"}
    assert {p.name for p in tmp_path.iterdir()} == expected  # no temporary left behind
    with pytest.raises(PosgeomError, match=r"token ids must lie in 0 \.\. 255"):
        model(torch.tensor([[1, 300]]))
    with pytest.raises(PosgeomError, match="unknown position"):
        DecoderConfig(position="xpos")
    with pytest.raises(PosgeomError, match="even head width"):
        DecoderConfig(d_model=18, n_heads=6)
