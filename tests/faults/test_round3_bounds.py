"""Work bounded by the input, not by what a file declares (issue 27, items 16-19): decompression
bombs (a ``.parquet.gz``, ``.npz`` members), a CSV quote left open, a decoder file declaring a
huge model, counts of repeated work. Every bomb is built small here and is a real one (zeros
deflated at up to 1000 : 1); peak memory is measured (tracemalloc for Python allocations, the
process's peak RSS for torch's), so a test fails when the declared size is allocated."""

from __future__ import annotations

import gzip
import io
import json
import resource
import struct
import zipfile

import numpy as np
import pytest
from fault_helpers import cli, one_line

from helpers.memory import MIB, peak_allocation
from posgeom._errors import PosgeomError
from posgeom.corpus import read_texts, read_token_ids
from posgeom.io._inflate import INFLATION_FLOOR, INFLATION_RATIO, inflation_limit


def _gzip_zeros(path, n_bytes: int, head: bytes = b"") -> None:
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(head)
        zeros = bytes(MIB)
        for _ in range(n_bytes // MIB):
            fh.write(zeros)


def test_item16_inflation_limit_is_the_documented_rule():
    """max(64 MiB, 64 x compressed): the floor below 1 MiB compressed, the ratio above."""
    assert INFLATION_FLOOR == 64 * MIB and INFLATION_RATIO == 64
    assert inflation_limit(0) == inflation_limit(MIB) == 64 * MIB
    assert inflation_limit(3 * MIB) == 192 * MIB  # the 3 MB archive: 192 MiB, not 3 GB


def test_item16_parquet_gzip_bomb_is_bounded(tmp_path):
    """A 2 MB .parquet.gz inflated to 4.1 GB in memory before "not a readable Parquet file".
    Now it is inflated in 1 MiB pieces to a temporary file and refused past the limit: the
    Python peak stays near one piece, not the 80 MiB the stream holds."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    bomb = tmp_path / "bomb.parquet.gz"
    _gzip_zeros(bomb, 80 * MIB)
    assert bomb.stat().st_size < MIB  # a real bomb: 80 MiB of zeros in under 1 MiB
    raised, peak = peak_allocation(lambda: list(read_texts(bomb)))
    assert isinstance(raised, PosgeomError), raised
    assert "inflates past 64 MiB" in str(raised) and "gunzip it" in str(raised)
    assert peak < 8 * MIB, peak
    # a genuine table still reads, the same texts as pyarrow reading the plain file
    plain = tmp_path / "t.parquet"
    texts = [f"text {i} " * (i % 7) for i in range(500)]
    pq.write_table(pa.table({"text": texts}), plain)
    (tmp_path / "t.parquet.gz").write_bytes(gzip.compress(plain.read_bytes()))
    expected = pq.read_table(plain).column("text").to_pylist()
    assert list(read_texts(tmp_path / "t.parquet.gz")) == expected == texts


def _npz_bomb(path, n_bytes: int) -> None:
    """A genuine compressed .npz: one int64 member of ``n_bytes`` zeros (deflate ~1000 : 1)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("input_ids.npy", "w", force_zip64=True) as fh:
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": "<i8", "fortran_order": False, "shape": (n_bytes // 8,)}
            )
            fh.write(header.getvalue())
            zeros = bytes(MIB)
            for _ in range(n_bytes // MIB):
                fh.write(zeros)


def test_item16_npz_member_bounded_by_its_compressed_size(tmp_path, capsys):
    """A 3 MB token-id .npz declaring 3 GB, and an encoding .npz given to `score`, were inflated
    whole. A member may inflate to at most the limit of its compressed size: refused from the
    zip directory, before any allocation (the peak stays far below the declared 96 MiB)."""
    bomb = tmp_path / "ids.npz"
    _npz_bomb(bomb, 96 * MIB)
    assert bomb.stat().st_size < MIB
    raised, peak = peak_allocation(lambda: list(read_token_ids(bomb)))
    assert isinstance(raised, PosgeomError) and "decompression bomb" in str(raised), raised
    assert "numpy.savez (uncompressed)" in str(raised)
    assert peak < 2 * MIB, peak
    code, err = cli(capsys, "score", "--target", bomb, bomb)
    assert code == 2 and "ids.npz (member input_ids.npy)" in one_line(err)
    # an ordinary compressed archive (ratio well under 64) reads as numpy reads it
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30_000, size=(200, 64))
    np.savez_compressed(tmp_path / "ok.npz", input_ids=ids)
    got = list(read_token_ids(tmp_path / "ok.npz"))
    assert np.array_equal(np.stack(got), np.load(tmp_path / "ok.npz")["input_ids"])


def test_item17_open_csv_quote_names_its_line_and_stays_bounded(tmp_path, capsys):
    """A quote left open accumulated the rest of the file (5 MB .csv.gz -> 4.2 GB), then "out of
    memory; use a smaller -n". Now a quoted field stops at 16 MiB with the line it opened on."""
    corpus = tmp_path / "open.csv.gz"
    rows = (b"plain text " * 93 + b", 1\n") * 1024  # 1 MiB of 1 KiB rows
    with gzip.open(corpus, "wb", compresslevel=1) as fh:
        fh.write(b'text,label\n"fine, quoted",0\n"left open,1\n')
        for _ in range(160):  # 160 MiB after the open quote
            fh.write(rows)
    raised, peak = peak_allocation(lambda: list(read_texts(corpus)))
    assert isinstance(raised, PosgeomError), raised
    assert "line 3: a quote opened there is not closed within 16 MiB" in str(raised)
    # the field's 16 Mi characters (4 bytes each in the csv module), not the 640 MiB the rest of
    # the file would take as one field
    assert peak < 80 * MIB, peak
    code, err = cli(capsys, "count", corpus, "-n", 4, "-o", tmp_path / "c.npz")
    line = one_line(err)
    assert code == 2 and "line 3" in line and "out of memory" not in line
    # a legitimate quoted field over the csv module's default limit (128 KiB) still reads
    long_text = "word, " * 50_000 + "\nsecond line"
    ok = tmp_path / "ok.csv"
    ok.write_text('text,label\n"' + long_text + '",1\nshort,0\n')
    assert list(read_texts(ok)) == [long_text, "short"]


def _decoder_file(path, config: dict, tensors: bytes = b"") -> None:
    meta = {
        "format": "posgeom.decoder/1",
        "class": "CausalDecoder",
        "config": config,
        "dtype": "float32",
        "info": {},
    }
    header = json.dumps({"__metadata__": {"posgeom": json.dumps(meta)}}).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + tensors)


def test_item18_forged_decoder_sizes_refused_before_allocating(tmp_path, capsys):
    """A 200-byte decoder file declaring vocab 200,000 x d_model 2,048 allocated 3.4 GB before
    its tensors were compared with its configuration. Refused now before the model is built:
    the process's peak RSS does not grow by the 3.4 GB (torch's memory is outside tracemalloc)."""
    torch = pytest.importorskip("torch")
    from posgeom.nn.decoder import CausalDecoder, DecoderConfig, load_decoder

    forged = tmp_path / "forged.safetensors"
    _decoder_file(
        forged, {"position": "rope", "vocab_size": 200_000, "d_model": 2048, "n_heads": 16}
    )
    assert forged.stat().st_size < 300
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PosgeomError, match="do not match its configuration"):
        load_decoder(forged)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 * 1024, grown_kib  # under 0.5 GiB, against 3.4 GB
    code, err = cli(capsys, "extend", forged, forged, "--target-length", 64, "-o", tmp_path / "o")
    assert code == 2 and "forged.safetensors" in one_line(err)
    # DecoderConfig has bounds; a size past them is one line naming the field
    for field, value in (
        ("vocab_size", 10**20),
        ("d_model", 1 << 20),
        ("n_layers", 0),
        ("tokenizer", 5),
    ):
        with pytest.raises(PosgeomError, match=field):
            DecoderConfig(**{field: value})
    with pytest.raises(PosgeomError, match="rope_theta"):
        DecoderConfig(rope_theta=float("inf"))
    # the pre-check is a lower bound of the real parameter count (every family), and tight
    for position in ("rope", "alibi", "t5", "learned", "sinusoidal", "nope"):
        config = DecoderConfig(
            position=position,
            vocab_size=300,
            d_model=32,
            n_heads=2,
            n_layers=2,
            d_ff=64,
            trained_length=40,
        )
        real = sum(t.numel() for t in CausalDecoder(config).state_dict().values())
        assert 0.95 * real <= config.weights_at_least() <= real, (position, real)
    # a position-module file (posgeom.nn.save_module) declaring a 10^6 x 10^5 table: refused
    from posgeom.nn import load_module

    module = tmp_path / "module.safetensors"
    meta = {
        "format": "posgeom.nn/1",
        "class": "LearnedPositionEmbedding",
        "dtype": "float32",
        "config": {"n": 10**6, "d": 10**5, "beyond": "error"},
    }
    header = json.dumps({"__metadata__": {"posgeom": json.dumps(meta)}}).encode()
    module.write_bytes(struct.pack("<Q", len(header)) + header)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PosgeomError, match="declares a table of 100000000000 numbers"):
        load_module(module)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 512 * 1024
    assert torch.get_num_threads() >= 1


def test_item19_noise_repeats_has_a_declared_range(small_corpus, tmp_path, capsys):
    """`geometry --noise-repeats 1000000000` ran until killed. The range 1 .. 1000 is declared
    once (posgeom.geometry.noise.REPEATS) and checked before any work, in the CLI and in
    GeometryConfig (whose noise floor would otherwise be skipped with a warning)."""
    from posgeom import GeometryConfig, count_corpus
    from posgeom.geometry.noise import REPEATS, noise_floor

    counts = count_corpus(small_corpus, "word", max_positions=8)
    path = counts.save(tmp_path / "c.npz")
    # no wall-time assertion (a loaded machine): 10**9 repeats unrefused would not end, and the
    # suite's timeout (300 s) fails the test
    for value in (1_000_000_000, 0, -3):
        code, err = cli(
            capsys, "geometry", path, "-d", 4, "--noise-repeats", value, "-o", tmp_path / "g"
        )
        line = one_line(err)
        assert code == 2 and "--noise-repeats must be an integer >= 1 and <= 1000" in line
    assert not (tmp_path / "g").exists()
    with pytest.raises(PosgeomError, match="noise_repeats"):
        GeometryConfig(model_dim=4, noise_repeats=10**9)
    with pytest.raises(PosgeomError, match="n_repeats"):
        noise_floor(counts, n_repeats=1001)
    assert noise_floor.__posgeom_constraints__["n_repeats"] is REPEATS
    # the other counts of repeated work: replicates (one declared range) and demo's corpus size
    from posgeom.corpus.bootstrap_weights import MAX_REPLICATES, REPLICATES

    assert REPLICATES.right == MAX_REPLICATES == 10_000
    cases = [
        (
            ["count", small_corpus, "-n", 4, "--bootstrap", 10**9, "-o", tmp_path / "b.npz"],
            "more than 10000",
        ),
        (
            [
                "extend",
                "rope:theta=10000,head_dim=64",
                small_corpus,
                "--target-length",
                64,
                "--replicates",
                10**6,
                "-o",
                tmp_path / "e",
            ],
            "--replicates must be",
        ),
        (["demo", "--sequences", 10**9, "-o", tmp_path / "d"], "--sequences must be"),
    ]
    for argv, words in cases:
        code, err = cli(capsys, *argv)
        assert code == 2 and words in one_line(err), err
    assert not list(tmp_path.glob("[bed]*"))
