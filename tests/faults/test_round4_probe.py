"""`probe`, fourth round (issue 36, items 6, 7 and 8): its work knobs bounded, extreme tables
refused or reported as strict JSON, and every option it would ignore refused before any work.
Each refusal: one line naming the input and the fix, exit 2, no results folder."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from fault_helpers import cli, one_line

import posgeom
from posgeom._errors import PosgeomError
from posgeom._validation import SCALE
from posgeom.probes.table import MAX_PAIRS, MAX_SEEDS, absolute_probe_values


@pytest.fixture
def table(tmp_path):
    """A sinusoidal-like table of 32 positions, width 8, saved as .npy: (path, array)."""
    i = np.arange(32)[:, None]
    values = np.hstack([np.sin(i / 10 ** (k / 4)) for k in range(4)] + [np.cos(i / 7), i / 31])
    values = np.hstack([values, np.cos(i / 3), np.sin(i / 5)])
    path = tmp_path / "t.npy"
    np.save(path, values)
    return path, values


def _refused(capsys, tmp_path, *argv) -> str:
    out = tmp_path / "out"
    code, err = cli(capsys, "probe", *argv, "-o", out)
    assert code == 2 and not out.exists(), (argv, err)
    return one_line(err)


def test_item6_probe_seeds_and_pairs_and_extend_strategies_are_bounded(table, tmp_path, capsys):
    """`probe --seeds 1000000` ran for hours and `--pairs 100000000` took 5 GB then blamed -n;
    `extend --strategies` took 100,000 entries. Each bound is declared once (probes.table's
    SEEDS / PAIRS, extension.strategies.MAX_STRATEGIES), checked before any work."""
    path, values = table
    t0 = time.perf_counter()
    line = _refused(capsys, tmp_path, path, "--seeds", 1_000_000)
    assert f"--seeds must be an integer >= 1 and <= {MAX_SEEDS}, got 1000000" in line
    line = _refused(capsys, tmp_path, path, "--pairs", 100_000_000)
    assert f"--pairs must be an integer >= 2 and <= {MAX_PAIRS}" in line and "-n" not in line
    for kw in ({"seeds": 10**6}, {"pairs": 10**8}):
        with pytest.raises(PosgeomError, match=next(iter(kw))):
            posgeom.probe(values, **kw)
    from posgeom.extension.strategies import MAX_STRATEGIES, given_strategies

    many = {
        f"s{k}": {"rope_type": "linear", "factor": 2.0 + k / 1e5, "rope_theta": 1e4}
        for k in range(100_000)
    }
    strategies = tmp_path / "strategies.json"
    strategies.write_text(json.dumps(many))
    corpus = tmp_path / "c.txt"
    corpus.write_text("one two three four five six\n" * 20)
    out = tmp_path / "ext"
    code, err = cli(
        capsys,
        *("extend", "rope:theta=10000,head_dim=64", corpus, "--target-length", 64),
        *("--strategies", strategies, "-o", out),
    )
    line = one_line(err)
    assert code == 2 and not out.exists()
    assert f"--strategies must be at most {MAX_STRATEGIES}" in line and "got 100000" in line
    assert time.perf_counter() - t0 < 20
    few = dict(list(many.items())[:3])
    assert [s.name for s in given_strategies(few)] == ["s0", "s1", "s2"]


def test_item7_probe_on_extreme_tables(table, tmp_path, capsys):
    """A table scaled by 1e-308 wrote NaN into summary.json (not JSON), by 1e308 reached the
    generic "unexpected failure" line, a complex one was made real silently. Outside
    1e-100 .. 1e100 (its largest |entry|) the float64 fits under- or overflow: refused with the
    fix; complex: refused; and a summary is strict JSON whatever it holds."""
    _, values = table
    unit = values / np.abs(values).max()
    for scale in (1e-308, 1e308, 1e-200, 1e150):
        extreme = tmp_path / "extreme.npy"
        np.save(extreme, unit * scale)
        assert np.all(np.isfinite(np.load(extreme)))
        line = _refused(capsys, tmp_path, extreme)
        assert "extreme.npy: its largest |entry| is" in line and "rescale it" in line, line
        assert "unexpected" not in line
    cplx = tmp_path / "complex.npy"
    np.save(cplx, values + 1j * values[::-1])
    line = _refused(capsys, tmp_path, cplx)
    assert "complex.npy is complex (complex128)" in line and "real part" in line
    with pytest.raises(PosgeomError, match="is complex"):
        posgeom.probe(values.astype(np.complex64))
    # inside the range the absolute probe's fit does not depend on the scale (least squares is
    # scale-equivariant): the same predictions at 2**-300 as at 1
    from posgeom.probes.fitting import least_squares

    y = np.arange(values.shape[0], dtype=np.float64)
    small = values * 2.0**-300
    assert SCALE[0] <= np.abs(small).max() <= SCALE[1]
    np.testing.assert_allclose(
        least_squares(small, y).predict(small), least_squares(values, y).predict(values), rtol=1e-9
    )
    assert np.all(np.isfinite(absolute_probe_values(small, seeds=1, folds=4)))
    # a zero table probes at chance (no NaN); its summary.json is strict JSON
    zero = tmp_path / "zero.npy"
    np.save(zero, np.zeros((16, 4)))
    out = tmp_path / "z"
    code, _ = cli(capsys, "probe", zero, *("--seeds", 1, "--folds", 2, "--pairs", 16), "-o", out)
    text = (out / "summary.json").read_text()
    assert code == 0 and "NaN" not in text and "Infinity" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in summary.json"))
    # a non-finite value in a result (a layer's undefined stress) is written as null
    result = posgeom.probe(np.zeros((16, 4)), seeds=1, folds=2, pairs=16)
    result.options["undefined"] = float("nan")
    (tmp_path / "saved").mkdir()
    result.save(tmp_path / "saved", plot=False)
    saved = json.loads((tmp_path / "saved" / "summary.json").read_text())
    assert saved["options"]["undefined"] is None


def test_item8_probe_refuses_the_options_it_would_ignore(table, tmp_path, capsys):
    """`--estimator bogus` in table mode, `-t` / `--gguf-file` with a decoder file, `--probes
    linear,evil` (a KeyError after the corpus pass) were accepted; the API's n=-5 dropped rows,
    n=8.5 and kinds='linear' raised raw errors. All refused before any work."""
    path, values = table
    cases = {
        ("--estimator", "bogus"): "unknown estimator 'bogus'",
        ("--estimator", "plugin"): "--estimator plugin is used by the layer probes only",
        ("-t", tmp_path / "tok.json"): "--tokenizer",
        ("--gguf-file", "m.gguf"): "--gguf-file m.gguf names a checkpoint inside a model folder",
        ("--probes", "linear,evil"): "--probes must be distinct layer probes of linear, mlp",
        ("--probes", "mlp"): "--probes mlp is used by the layer probes only",
        ("--no-geometry",): "--no-geometry is used by the layer probes only",
        ("--max-sequences", 10): "--max-sequences read a corpus, but none is given",
    }
    for argv, words in cases.items():
        line = _refused(capsys, tmp_path, path, *argv)
        assert words in line, (argv, line)
    # the API: clear messages (PosgeomError is a ValueError), nothing silently dropped
    for kw, words in (
        ({"n": -5}, "n must be an integer >= 3"),
        ({"n": 8.5}, "a float such as 3.0 is not taken for an integer"),
        ({"kinds": "linear"}, "kinds must be a list of layer probes such as \\['linear'\\]"),
        ({"kinds": ["linear", "evil"]}, "got linear, evil"),
        ({"estimator": "bogus"}, "unknown estimator"),
        ({"per_position": 10}, "per_position=10 is used by the layer probes only"),
    ):
        with pytest.raises(ValueError, match=words):
            posgeom.probe(values, **kw)
    assert posgeom.probe(values, n=8, seeds=1, folds=2, pairs=16).table.n_positions == 8


def test_item8_decoder_file_refuses_tokenizer_and_gguf_before_the_corpus_pass(tmp_path, capsys):
    """A posgeom decoder file has its own tokenizer: `-t` and `--gguf-file` were ignored with
    it; `--probes linear,evil` failed only after the corpus pass. Each is one line now, before
    the model runs on the corpus."""
    pytest.importorskip("torch")
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig, save_decoder

    config = DecoderConfig(
        position="learned", d_model=32, n_heads=2, n_layers=1, d_ff=64, trained_length=32
    )
    decoder = save_decoder(CausalDecoder(config, seed=0), tmp_path / "dec.safetensors")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the cat sat on the mat {k}" for k in range(40)) + "\n")
    base = [decoder, corpus, "-n", 8]
    for argv, words in (
        (["-t", tmp_path / "tok.json"], "with its own tokenizer; --tokenizer "),
        (["--gguf-file", "m.gguf"], "with its own tokenizer; --gguf-file m.gguf"),
        (["--probes", "linear,evil"], "--probes must be distinct layer probes"),
    ):
        t0 = time.perf_counter()
        line = _refused(capsys, tmp_path, *base, *argv)
        assert words in line and time.perf_counter() - t0 < 10, (argv, line)
    with pytest.raises(PosgeomError, match="own tokenizer; tokenizer='word' \\(of a Hugging"):
        posgeom.probe(decoder, ["a b c d e f"] * 10, n=4, tokenizer="word")
