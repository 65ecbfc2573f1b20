"""posgeom extend on a posgeom decoder file (a tiny Track B model trained here): scoring and
--measure through the CLI, the measured losses against a direct forward with each strategy
applied by hand, the RoPE frequencies against transformers, and the bad files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from posgeom.cli.main import main

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.decoder import gower_rows_reference  # noqa: E402
from posgeom.extension import enumerate_strategies  # noqa: E402
from posgeom.extension.decoder import DecoderRunner, load_decoder_file  # noqa: E402
from posgeom.nn.decoder import CausalDecoder, DecoderConfig, save_decoder  # noqa: E402
from posgeom.nn.rotary import RotaryEmbedding  # noqa: E402
from posgeom.nn.tables import AbsolutePositionEmbedding  # noqa: E402

L0, L, HEAD = 16, 32, 8
WORDS = "the a cat dog sat ran on under mat log and then it was red big".split()


def _text(n_words: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    words, prev = [], 0
    for _ in range(n_words):
        prev = (prev + 1) % len(WORDS) if rng.random() < 0.6 else int(rng.integers(len(WORDS)))
        words.append(WORDS[prev])
    return " ".join(words) + ".\n"


def _trained(position: str, tmp_path, steps: int = 20, l0: int = L0):
    sizes = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "trained_length": l0}
    cfg = DecoderConfig(position=position, **sizes)
    model = CausalDecoder(cfg, seed=0)
    data = torch.tensor(list(_text(3000, 1).encode()))
    rng = np.random.default_rng(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - l0 - 1, 8)
        batch = torch.stack([data[s : s + l0 + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(
            model(batch[:, :-1]).reshape(-1, 256), batch[:, 1:].reshape(-1)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    return save_decoder(model.eval(), tmp_path / f"{position}.safetensors", info={"steps": steps})


def _corpus(tmp_path, length: int = L):
    book, held = tmp_path / "book.txt", tmp_path / "held.txt"
    book.write_text(_text(4000, 2))
    held.write_bytes(_text(80, 3).encode()[: 2 * length])  # exactly two windows of L bytes
    return book, held


def _direct(path, position, held: bytes, l0: int = L0) -> tuple[float, float]:
    """Mean loss within and beyond L0 over the two windows, the decoder's position module
    replaced by ``position`` (built by hand)."""
    _, decoder, _ = load_decoder_file(path)
    decoder.set_position(position)
    x = torch.tensor(list(held)).reshape(2, -1)
    with torch.no_grad():
        logits = decoder(x)[:, :-1].double()
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, 256), x[:, 1:].reshape(-1), reduction="none"
    ).reshape(2, -1)
    return float(loss[:, : l0 - 1].mean()), float(loss[:, l0 - 1 :].mean())


def _config(strategy):
    changes = strategy.config_changes(L0, L)
    return transformers.LlamaConfig(
        vocab_size=8,
        hidden_size=16,
        num_attention_heads=2,
        head_dim=HEAD,
        max_position_embeddings=changes["max_position_embeddings"],
        rope_parameters=dict(strategy.rope_parameters),
    )


def _transformers_frequencies(strategy) -> tuple[np.ndarray, float]:
    """inv_freq and attention factor by transformers' ROPE_INIT_FUNCTIONS at length L."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    p = strategy.rope_parameters
    fn = ROPE_INIT_FUNCTIONS.get(p["rope_type"])
    if fn is None:  # "default": theta^(-2k/h)
        return float(p["rope_theta"]) ** -(np.arange(0, HEAD, 2) / HEAD), 1.0
    inv, att = fn(_config(strategy), "cpu", seq_len=L)
    return inv.double().numpy(), float(att)


def _hand_rotary(strategy) -> RotaryEmbedding:
    """A rotary module carrying transformers' frequencies for ``strategy``."""
    inv, att = _transformers_frequencies(strategy)
    module = RotaryEmbedding(HEAD, 10000.0)
    module.inv_freq = torch.from_numpy(inv).float()
    module.attention_scaling = att
    return module


@pytest.mark.filterwarnings("ignore")
def test_extend_a_rope_decoder_with_and_without_measure(tmp_path, capsys):
    path, (book, held) = _trained("rope", tmp_path), _corpus(tmp_path)
    base = ["extend", str(path), str(book), "--target-length", str(L), "--classes", "top:12", "-q"]
    assert main([*base, "--replicates", "2", "-o", str(tmp_path / "plain")]) == 0
    plain = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert plain["trained_length"] == L0 and not plain.get("measurements")
    assert (tmp_path / "plain" / "table.md").exists()
    assert json.loads((tmp_path / "plain" / "rope_parameters.json").read_text())["rope_theta"] > 0
    out = tmp_path / "out"
    argv = [*base, "--replicates", "0", "--measure", "--heldout", str(held), "--windows", "2"]
    assert main([*argv, "-o", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    names = [s["name"] for s in summary["strategies"]]
    assert len(names) >= 10 and "fitted" in names
    assert sorted(names) == sorted(s["name"] for s in plain["strategies"])
    measured = {m["name"]: m for m in summary["measurements"]["strategies"]}
    assert set(measured) == set(names)
    # measured: one ranking, by the loss past L0 (lowest first), named on every surface
    assert [measured[n]["beyond_loss"] for n in names] == sorted(
        m["beyond_loss"] for m in measured.values()
    )
    assert summary["rank_by"].startswith("measured loss past L0")
    assert f"Ranked by {summary['rank_by']}." in (out / "table.md").read_text()
    by_name = {s.name: s for s in enumerate_strategies(load_decoder_file(path)[0], L0, L)}
    for name in ("none", "linear x2", "dynamic x2", "yarn x2 b32/1", "llama3 x2 1/4"):
        within, beyond = _direct(path, _hand_rotary(by_name[name]), held.read_bytes())
        assert measured[name]["within_loss"] == pytest.approx(within, rel=1e-6), name
        assert measured[name]["beyond_loss"] == pytest.approx(beyond, rel=1e-6), name
        assert measured[name]["tokens_beyond"] == 2 * (L - L0)
    assert measured["none"]["within_loss"] != measured["linear x2"]["within_loss"]
    assert "## Measured loss" in (out / "table.md").read_text()
    assert not (tmp_path / "out.measure").exists()
    # the same from Python, on the decoder object itself
    import posgeom

    again = posgeom.extend(
        load_decoder_file(path)[1],
        book,
        target_length=L,
        classes="top:12",
        replicates=0,
        measure=True,
        heldout=[held],
        max_windows=2,
    )
    assert [r.name for r in again.rows] == names
    for row in again.measurements["strategies"]:
        assert row["beyond_loss"] == pytest.approx(measured[row["name"]]["beyond_loss"], rel=1e-12)


def test_every_rope_strategy_gives_the_decoder_transformers_frequencies(tmp_path):
    path = _trained("rope", tmp_path, steps=2)
    ext, decoder, _ = load_decoder_file(path)
    runner = DecoderRunner(decoder)
    from posgeom.encodings.rope_strategies import longrope_strategy

    strategies = enumerate_strategies(ext, L0, L)
    strategies.append(
        longrope_strategy(
            ext,
            L0,
            L,
            np.linspace(1, 2, HEAD // 2),
            "fitted",
            "",
            kind="fitted",
            attention_factor=1.0,
        )
    )
    for s in strategies:
        runner.apply(s, L0, L)
        ours, att = decoder.position.frequencies(L)
        theirs, their_att = _transformers_frequencies(s)
        np.testing.assert_allclose(ours.double().numpy(), theirs, rtol=1e-6, err_msg=s.name)
        assert att == pytest.approx(their_att, rel=1e-6), s.name
    runner.restore()
    assert decoder.position.scaling is None


@pytest.mark.filterwarnings("ignore")
def test_a_learned_decoder_measures_clamp_interpolate_and_gower_table(tmp_path):
    l0, length = 20, 40  # L0 > 16: Track B's far-lag mean is over 16 trained lags
    path, (book, held) = _trained("learned", tmp_path, l0=l0), _corpus(tmp_path, length)
    out = tmp_path / "out"
    argv = ["extend", str(path), str(book), "--target-length", str(length), "--replicates", "0"]
    argv += ["--classes", "embedding:4", "--measure", "--heldout", str(held), "--windows", "2"]
    assert main([*argv, "-q", "-o", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lag_geometry"]["counts"]["classes"]["kind"] == "embedding:4"  # its own table
    assert summary["rope_parameters"] is None and not (out / "rope_parameters.json").exists()
    measured = {m["name"]: m for m in summary["measurements"]["strategies"]}
    assert set(measured) == {"clamp", "interpolate", "gower-table"}  # gower needs --positions
    table = load_decoder_file(path)[0].table
    x = np.arange(length) * (l0 - 1) / (length - 1)
    hand = {
        "clamp": table[np.minimum(np.arange(length), l0 - 1)],
        "interpolate": np.stack([np.interp(x, np.arange(l0), col) for col in table.T], 1),
        "gower-table": np.vstack([table, gower_rows_reference(table, length)]),
    }
    for name, rows in hand.items():
        module = AbsolutePositionEmbedding(torch.from_numpy(rows).float(), trainable=False)
        within, beyond = _direct(path, module, held.read_bytes(), l0)
        assert measured[name]["within_loss"] == pytest.approx(within, rel=1e-6), name
        assert measured[name]["beyond_loss"] == pytest.approx(beyond, rel=1e-6), name


def test_bad_decoder_files_exit_2_with_one_line_and_write_nothing(tmp_path, capsys):
    book, _ = _corpus(tmp_path)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a model at all" * 8)
    out = tmp_path / "out"
    base = ["extend", str(junk), str(book), "--target-length", str(L), "-o", str(out)]
    assert main(base) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable safetensors file" in err[0]
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(3)}, str(junk))
    assert main(base) == 2
    assert "no 'posgeom' metadata" in capsys.readouterr().err
    good = _trained("alibi", tmp_path, steps=1)
    assert main([*base[:1], str(good), *base[2:], "--tokenizer", "word"]) == 2
    assert "drop --tokenizer" in capsys.readouterr().err
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(400)[None] % 300)
    assert main([*base[:1], str(good), str(ids), *base[3:]]) == 2
    assert "vocabulary is 0 .. 255" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob("out*"))


def test_the_measure_cache_knows_the_weights_and_an_interrupt_restores_the_model(tmp_path):
    from posgeom.extension.measure import measure_strategies

    path = _trained("rope", tmp_path, steps=2)
    ext, decoder, _ = load_decoder_file(path)
    trained = decoder.position
    strategies = enumerate_strategies(ext, L0, L)[:2]  # none, linear x2
    windows = [np.frombuffer(_text(40, 4).encode()[:L], dtype=np.uint8).astype(np.int64)]

    def stop(line: str) -> None:
        raise KeyboardInterrupt

    cache = tmp_path / "cache"  # a work folder of its own (the model file is beside it)
    with pytest.raises(KeyboardInterrupt):
        measure_strategies(
            decoder, strategies, windows, trained_length=L0, cache_dir=cache, progress=stop
        )
    assert decoder.position is trained  # put back on the interrupt
    first = measure_strategies(decoder, strategies, windows, trained_length=L0, cache_dir=cache)
    # one file per (strategy, window) and the window's short-context reference (key tokens)
    assert len(list(cache.glob("[0-9a-f]*.json"))) == 3 and decoder.position is trained
    with torch.no_grad():
        decoder.head.bias += 1.0  # another model at the same path: nothing may be reused
        decoder.head.bias[0] += 5.0
    again = measure_strategies(decoder, strategies, windows, trained_length=L0, cache_dir=cache)
    assert len(list(cache.glob("[0-9a-f]*.json"))) == 6
    assert again["strategies"][0]["within_loss"] != first["strategies"][0]["within_loss"]


def test_every_decoder_family_gives_its_trained_lag_kernel_through_the_registry():
    """The decoder's position families are the registry's (those with a decoder module), and
    each one's parameters, read from a decoder, give through ``lag_vectors`` the kernel of the
    module itself computed here directly (RoPE frequencies, ALiBi slopes, T5 buckets by
    transformers' own function, a table's lag products, zeros)."""
    from transformers.models.t5.modeling_t5 import T5Attention

    from posgeom.extension import Strategy, lag_vectors
    from posgeom.extension.decoder import decoder_model
    from posgeom.nn.decoder import decoder_positions

    assert set(decoder_positions()) == {"rope", "alibi", "t5", "learned", "sinusoidal", "nope"}
    lags = np.arange(L0)
    k = lags.astype(np.float64)
    for position in decoder_positions():
        sizes = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "trained_length": L0}
        cfg = DecoderConfig(position=position, t5_num_buckets=8, t5_max_distance=12, **sizes)
        decoder = CausalDecoder(cfg, seed=0).eval()
        pos = decoder.position
        if position == "rope":
            w = 10000.0 ** (-np.arange(0, HEAD, 2) / HEAD)
            direct = np.concatenate([np.cos(k[:, None] * w), np.sin(k[:, None] * w)], axis=1)
        elif position == "alibi":
            direct = k[:, None] * pos.slopes.double().numpy()[None]
        elif position == "t5":
            rel = torch.as_tensor(-lags)
            buckets = T5Attention._relative_position_bucket(
                rel, bidirectional=False, num_buckets=8, max_distance=12
            )
            direct = pos.bias.weight.detach().double().numpy()[buckets.numpy()]
        elif position == "nope":
            direct = np.zeros((L0, 1))
        else:  # the additive tables: learned, sinusoidal
            p = pos.table().detach().double().numpy()[:L0]
            direct = np.stack([(p[: L0 - j] * p[j:]).mean(axis=0) for j in lags])
        model = decoder_model(decoder, position)
        got = lag_vectors(model, Strategy("none", position, "none"), lags, L0)
        np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-6, err_msg=position)
